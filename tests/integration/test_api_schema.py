"""A property-based run against the feedback API's OpenAPI document (schemathesis): the app
served by uvicorn on loopback, generated requests with and without a valid key, no server
errors and responses as documented."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from agent_memory.api import create_app
from agent_memory.config import load_settings

KEY = "schema-test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def served(embedded_server):
    configured = load_settings(
        mongodb_uri=embedded_server.uri,
        database="t_api_schema",
        embedder="fake",
        api_keys={"support": KEY},
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(configured), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:  # pragma: no cover
        pytest.fail("the API did not start")
    yield base
    server.should_exit = True
    thread.join(timeout=10)


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
