"""How the framework reads a server's refusal of a probe or a search stage."""

from __future__ import annotations

import pytest
from pymongo import errors as pm

from agent_memory.mongo._errors import classify_refusal


def _failure(code: int | None, message: str, labels: tuple[str, ...] = ()) -> pm.OperationFailure:
    details = {"errmsg": message, "errorLabels": list(labels)}
    if code is not None:
        details["code"] = code
    return pm.OperationFailure(message, code=code, details=details)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        # Permission problems: self-managed (13) and Atlas (8000 with its wording).
        (_failure(13, "not authorized on app to execute command"), "forbidden"),
        (_failure(8000, "user is not allowed to do action [find] on [app.meta]"), "forbidden"),
        (_failure(8000, "(Unauthorized) not authorized on app to execute command"), "forbidden"),
        # Atlas's 8000 for a command its tier does not run is "not supported", not forbidden.
        (
            _failure(
                8000,
                "$listSearchIndexes is not allowed or the syntax is incorrect, see the Atlas "
                "documentation for more information",
            ),
            "unsupported",
        ),
        (_failure(31082, "SearchNotEnabled"), "unsupported"),
        (_failure(40324, "Unrecognized pipeline stage name: '$rankFusion'"), "unsupported"),
        (_failure(224, "$rankFusion is not allowed in the current feature version"), "unsupported"),
        (_failure(115, "Search index commands are only supported with Atlas."), "unsupported"),
        (_failure(None, "Unsupported aggregation stage: $vectorSearch"), "unsupported"),
        # Transient: mongot unreachable, elections, time limits, labelled retryable.
        (_failure(6, "Error connecting to localhost:28000"), "transient"),
        (_failure(189, "primary stepped down"), "transient"),
        (_failure(91, "shutdown in progress"), "transient"),
        (_failure(50, "operation exceeded time limit"), "transient"),
        (_failure(12345, "odd", labels=("RetryableError",)), "transient"),
        (pm.AutoReconnect("connection reset"), "transient"),
        (pm.NetworkTimeout("timed out"), "transient"),
        # Anything else is taken at its word.
        (pm.ConfigurationError("bad option"), "unsupported"),
        (ValueError("not from the driver"), "unsupported"),
    ],
)
def test_refusals_are_classified(error: Exception, kind: str) -> None:
    assert classify_refusal(error) == kind


def test_errors_raised_to_the_application_follow_the_same_reading() -> None:
    from agent_memory.errors import AuthenticationError, StorageError, StorageUnavailableError
    from agent_memory.mongo._errors import map_error

    atlas_forbidden = _failure(8000, "user is not allowed to do action [find] on [app.memories]")
    assert isinstance(map_error(atlas_forbidden, "searching"), AuthenticationError)
    stepped_down = map_error(_failure(189, "primary stepped down"), "searching")
    assert isinstance(stepped_down, StorageUnavailableError)
    assert str(stepped_down).endswith("(primary stepped down); try again")
    refused = map_error(_failure(40324, "Unrecognized pipeline stage name"), "searching")
    assert type(refused) is StorageError
