"""A deprecated name still imports, with a DeprecationWarning at the line that reads it."""

from __future__ import annotations

import importlib
import warnings

import pytest

from agent_memory.errors import ConflictError


@pytest.mark.parametrize("face", ["agent_memory.langgraph", "agent_memory.langgraph.checkpointer"])
def test_thread_owned_error_warns_at_the_readers_line(face: str) -> None:
    module = importlib.import_module(face)
    with pytest.warns(DeprecationWarning, match="ThreadOwnedError is deprecated") as caught:
        error = module.ThreadOwnedError
    assert caught[0].filename == __file__
    assert issubclass(error, ConflictError) and error.__name__ == "ThreadOwnedError"
    # An except clause written for it still works, and it is the same class by either face.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from agent_memory.langgraph import ThreadOwnedError
    assert ThreadOwnedError is error


def test_importing_the_package_warns_of_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(importlib.import_module("agent_memory.langgraph"))


def test_other_missing_names_are_attribute_errors() -> None:
    import agent_memory.langgraph as face

    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        face.Nothing  # noqa: B018
