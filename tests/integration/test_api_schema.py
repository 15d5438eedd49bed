"""A property-based run against the feedback API's OpenAPI document (schemathesis): the app
served by uvicorn on loopback, generated requests with and without a valid key, no server
errors and responses as documented."""

from __future__ import annotations

import logging

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from agent_memory.api import create_app
from agent_memory.config import load_settings
from tests.loopback import serve_asgi

KEY = "schema-test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def served(embedded_server):
    configured = load_settings(
        mongodb_uri=embedded_server.uri,
        database="t_api_schema",
        embedder="fake",
        api_keys={"support": KEY},
    )
    with serve_asgi(create_app(configured)) as port:
        yield f"http://127.0.0.1:{port}"


# The document the served app publishes (building the app connects to nothing).
schema = schemathesis.openapi.from_dict(
    create_app(load_settings(embedder="fake", api_keys={"support": KEY})).openapi()
)


@schema.auth()
class _AgentKey:
    """The configured key, through the schema's security scheme, so schemathesis can still
    leave it out when it tests that a request without one is refused."""

    def get(self, case, context):
        return KEY

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "X-API-Key": data}


@schema.parametrize()
@hypothesis_settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors_and_documented_responses(case, served):
    case.call_and_validate(base_url=served)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_served_json_no_other_program_sends_is_400_and_nothing_is_logged(served):
    """Issue 35 item 10, on the wire: NaN, Infinity and a lone surrogate were a 500 and a
    traceback in the server's log that repeated the body."""
    kept = _Kept()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "agent_memory")]
    for logger in loggers:
        logger.addHandler(kept)
    try:
        for body in (
            b'{"user_id": "marker-4711", "rating": NaN}',
            b'{"user_id": "marker-4711", "rating": -Infinity}',
            b'{"user_id": "marker-4711\\ud800", "rating": 5}',
        ):
            response = httpx.post(
                f"{served}/v1/actions/act_1/feedback",
                content=body,
                headers={"X-API-Key": KEY, "Content-Type": "application/json"},
                timeout=30,
            )
            assert response.status_code == 400, response.text
            assert list(response.json()) == ["detail"] and "marker" not in response.text
    finally:
        for logger in loggers:
            logger.removeHandler(kept)
    assert [record.getMessage() for record in kept.records] == []


@pytest.mark.parametrize("text", ["\x1e", "\x1c\x1f", " \t\n", "\x85"])
def test_a_blank_correction_is_schema_invalid_as_the_server_sees_it(text):
    """The server refuses a correction that is blank by Python's measure (which counts the
    separators \\x1c-\\x1f as whitespace); the schema must not call it valid (a generated
    request with correction '\\x1e' was answered 422 against a schema that allowed it)."""
    import re

    from pydantic import ValidationError

    from agent_memory.api.app import FeedbackIn

    schema = create_app(load_settings(embedder="fake", api_keys={"support": KEY})).openapi()
    correction = schema["components"]["schemas"]["FeedbackIn"]["properties"]["correction"]
    assert not re.search(correction["pattern"], text)
    assert re.search(correction["pattern"], "use v2\x1e")
    with pytest.raises(ValidationError):
        FeedbackIn(user_id="u1", correction=text)
