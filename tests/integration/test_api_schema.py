"""A property-based run against the feedback API's OpenAPI document (schemathesis): the app
served by uvicorn on loopback, generated requests with and without a valid key, no server
errors and responses as documented."""

from __future__ import annotations

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
