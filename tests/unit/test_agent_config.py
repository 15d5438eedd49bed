"""An agent's configuration refuses what it cannot run with, at construction."""

from __future__ import annotations

import pytest

from agent_memory.agent.config import AgentConfig
from agent_memory.errors import InvalidInputError


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("short_term_limit", 0),
        ("long_term_limit", True),
        ("knowledge_limit", -1),
        ("max_tool_rounds", 1.5),
        ("max_query_chars", "8000"),
        ("formation_concurrency", 0),
        ("formation_concurrency", 65),
        ("formation_concurrency", True),
        ("long_query", "cut"),
        ("system_prompt", "  "),
        ("model", ""),
    ],
)
def test_a_bad_setting_is_refused_by_name(field, bad):
    with pytest.raises(InvalidInputError, match=field.split("_")[0]):
        AgentConfig("support", **{field: bad})


def test_the_defaults_are_valid_and_form_several_jobs_at_once():
    config = AgentConfig("support")
    assert config.formation_concurrency == 4 and config.run_formation_worker
