"""How a ``$listSearchIndexes`` entry is read (``serving_state``): whether the index serves its
latest definition, in the shapes MongoDB documents."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.mongo.indexes import serving_state


def _host(main: dict[str, Any] | None = None, staged: dict[str, Any] | None = None) -> dict:
    host: dict[str, Any] = {"hostname": "atlas-shard-00"}
    if main is not None:
        host["mainIndex"] = main
    if staged is not None:
        host["stagedIndex"] = staged
    return host


def _index(version: int, status: str, queryable: bool, *hosts: dict) -> dict[str, Any]:
    return {
        "name": "memories_vector",
        "status": status,
        "queryable": queryable,
        "latestDefinitionVersion": {"version": version},
        "statusDetail": list(hosts),
    }


READY_V0 = {"status": "READY", "queryable": True, "definitionVersion": {"version": 0}}


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        (None, ("missing", "")),
        (_index(0, "READY", True, _host(READY_V0)), ("ok", "")),
        # The documented sample after an update: queryable, the old definition still serving.
        (
            _index(
                1,
                "BUILDING",
                True,
                _host(READY_V0, {"status": "PENDING", "definitionVersion": {"version": 1}}),
            ),
            ("building", "serving definition v0 while v1 builds"),
        ),
        (_index(0, "PENDING", False), ("building", "pending")),
        # Self-managed mongot reports no status at all: nothing to wait for.
        ({"name": "memories_vector"}, ("ok", "status not reported by this deployment")),
        (
            _index(
                0,
                "FAILED",
                False,
                _host({"status": "FAILED", "message": "too many fields"}),
            ),
            ("failed", "too many fields"),
        ),
        # A failed index being fixed: the staged definition builds, so it is building.
        (
            _index(
                1,
                "BUILDING",
                False,
                _host(
                    {"status": "FAILED", "message": "bad", "definitionVersion": {"version": 0}},
                    {"status": "BUILDING", "definitionVersion": {"version": 1}},
                ),
            ),
            ("building", "serving definition v0 while v1 builds"),
        ),
        # ... and a fix that failed too is failed, with the staged index's message.
        (
            _index(
                1,
                "FAILED",
                False,
                _host(
                    {"status": "FAILED", "message": "bad", "definitionVersion": {"version": 0}},
                    {"status": "FAILED", "message": "still bad"},
                ),
            ),
            ("failed", "still bad"),
        ),
    ],
    ids=["missing", "ready", "updated", "pending", "on-prem", "failed", "fixing", "fix-failed"],
)
def test_listings_are_read_as_documented(listed: Any, expected: tuple[str, str]) -> None:
    assert serving_state(listed) == expected
