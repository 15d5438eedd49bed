"""A library keeps its promises to existing code (CHANGELOG.md, at the top): nothing a caller
of the last release relied on stops working without a release of deprecation first, and a
changed surface comes with a new version and its entry in the changelog."""

from __future__ import annotations

import json
import re

import pytest

import agent_memory
from tests.unit.api_surface import ROOT, SNAPSHOT, _broken_call, broken, current_surface

CHANGELOG = ROOT / "CHANGELOG.md"


def _release() -> tuple[str, dict[str, str | None]]:
    recorded = json.loads(SNAPSHOT.read_text())
    return recorded.pop("__version__"), recorded


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _sections() -> dict[str, dict[str, str]]:
    """Version -> heading (Added, Deprecated, Removed, ...) -> its text."""
    sections: dict[str, dict[str, str]] = {}
    version = heading = None
    for line in CHANGELOG.read_text().splitlines():
        if match := re.match(r"## \[(\d+\.\d+\.\d+)\]", line):
            version, heading = match[1], None
            sections[version] = {}
        elif version and (match := re.match(r"### (\w+)", line)):
            heading = match[1]
            sections[version][heading] = ""
        elif version and heading:
            sections[version][heading] += line + "\n"
    return sections


def _named(text: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", text))


def test_code_written_against_the_last_release_still_runs():
    released, recorded = _release()
    sections = _sections()
    current = sections.get(agent_memory.__version__, {})
    removed = _named(current.get("Removed", ""))
    deprecated_before = set().union(
        *(
            _named(headings.get("Deprecated", ""))
            for version, headings in sections.items()
            if _version(version) < _version(agent_memory.__version__)
        )
    )
    problems = broken(recorded, current_surface())
    allowed = {name for name in removed if name in deprecated_before}
    left = [line for line in problems if not any(f"{name}" in line for name in allowed)]
    assert not left, (
        f"code written against {released} would break:\n  "
        + "\n  ".join(left)
        + "\nKeep accepting it with a DeprecationWarning that names the replacement, list it "
        "under Deprecated in CHANGELOG.md, and remove it a release later (listed under Removed)."
    )


def test_a_changed_surface_comes_with_a_new_version_and_its_changelog_entry():
    released, recorded = _release()
    if current_surface() == recorded:
        return
    assert _version(agent_memory.__version__) > _version(released), (
        f"the public surface changed since {released}: bump agent_memory/_version.py"
    )
    assert agent_memory.__version__ in _sections(), (
        f"CHANGELOG.md has no section for {agent_memory.__version__}"
    )


def test_the_changelog_starts_with_the_current_version():
    versions = list(_sections())
    assert versions and versions[0] == agent_memory.__version__
    assert versions == sorted(versions, key=_version, reverse=True)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("a b= *c=", "a b= *c= *d=", []),  # a new optional argument breaks nobody
        ("a b= *c=", "a b= *c= *d", ["f requires a new argument 'd'"]),
        ("a b= *c=", "a b=", ["f no longer takes the argument 'c'"]),
        ("a b= *c=", "a b= **kwargs", []),  # still accepted by name
        ("a b=", "b= a", ["f: 'a' is no longer argument 1", "f: 'b' is no longer argument 2"]),
        ("a b=", "a *b=", ["f: 'b' is no longer argument 2"]),
        ("a b=", "/a b=", ["f: 'a' can no longer be passed by name"]),
        ("a b=", "a b", ["f: 'b' lost its default"]),
        ("a *args...", "a", ["f no longer takes *args"]),
        ("a *c=", "a c=", []),  # a keyword that may now also be given by position
    ],
)
def test_the_check_tells_a_breaking_signature_from_a_compatible_one(old, new, expected):
    assert _broken_call("f", old, new) == expected


def test_the_check_sees_a_gone_name_a_gone_member_and_a_gone_enum_value():
    old = {"m.A": "class", "m.A.run": "x", "m.B": "enum X Y", "m.f": "x"}
    new = {"m.A": "class", "m.B": "enum X", "m.f": "x"}
    assert broken(old, new) == ["m.A.run is gone", "m.B.Y is gone"]
    assert broken({"m.g": "x"}, {}) == ["m.g is gone"]
