"""The error tree and the mapping of driver exceptions into it."""

from __future__ import annotations

import pytest
from pymongo import errors as pm

from agent_memory import errors
from agent_memory.mongo._errors import map_error, translate_errors


def test_every_error_derives_from_the_base():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.AgentMemoryError), name


def test_invalid_input_is_also_a_value_error():
    assert issubclass(errors.InvalidInputError, ValueError)


def test_unknown_provider_lists_the_choices():
    error = errors.UnknownProviderError("embedder", "openai", ["local", "voyage"])
    assert str(error) == "unknown embedder 'openai'; choose one of: local, voyage"


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (pm.DuplicateKeyError("E11000 duplicate key", 11000), errors.ConflictError),
        (pm.ServerSelectionTimeoutError("db:27017: timed out"), errors.StorageUnavailableError),
        (pm.AutoReconnect("connection reset"), errors.StorageUnavailableError),
        (pm.OperationFailure("Authentication failed.", 18), errors.AuthenticationError),
        (pm.OperationFailure("not authorized on db", 13), errors.AuthenticationError),
        (
            pm.OperationFailure("text index required for $text query", 27),
            errors.NotInitialisedError,
        ),
        (pm.OperationFailure("something else", 2), errors.StorageError),
        (pm.InvalidURI("bad uri"), errors.ConfigurationError),
    ],
)
def test_driver_errors_map_to_the_most_specific_class(exc, expected):
    mapped = map_error(exc, "doing a thing")
    assert type(mapped) is expected
    assert str(mapped).startswith("doing a thing:")


def test_translate_errors_keeps_the_cause():
    original = pm.OperationFailure("text index required for $text query", 27)
    with pytest.raises(errors.NotInitialisedError, match="agent-memory indexes setup") as caught:
        with translate_errors("searching"):
            raise original
    assert caught.value.__cause__ is original


def test_full_server_reply_is_not_repeated():
    exc = pm.OperationFailure("boom", 2, {"errmsg": "boom", "secret": "x"})
    assert "full error" not in str(map_error(exc, "op"))
