"""LongTermConfig's checks of the current-first settings: a clear error for a bad value."""

from __future__ import annotations

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.memory.long_term.records import NEIGHBOURS, LongTermConfig


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("update_window", -1),
        ("update_window", 10_001),
        ("update_window", 2.5),
        ("update_window", "20"),
        ("update_window", True),
        ("update_links", 0),
        ("update_links", NEIGHBOURS + 1),
        ("update_links", None),
    ],
)
def test_a_bad_current_first_setting_is_refused_by_name(field, value):
    with pytest.raises(InvalidInputError, match=field):
        LongTermConfig(**{field: value})


def test_the_current_first_settings_take_their_whole_range():
    assert LongTermConfig(update_window=0).update_window == 0  # the move off
    assert LongTermConfig(update_window=10_000, update_links=NEIGHBOURS).update_links == 3
    assert LongTermConfig(update_links=1).update_links == 1
