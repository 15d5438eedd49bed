"""The feedback API with an HTTP client against the app, on the embedded server."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from agent_memory.api import create_app
from agent_memory.config import load_settings
from agent_memory.memory._common import Tenant
from agent_memory.memory.episodic import EpisodicMemory
from agent_memory.memory.long_term import LongTermMemory
from agent_memory.mongo.indexes import IndexManager

SUPPORT_KEY = "support-key-0123456789abcdef"
OTHER_KEY = "other-agent-key-0123456789abcdef"
ALICE = Tenant("support", "alice")


@pytest.fixture
async def api(connection, embedder, settings):
    await IndexManager(connection, embedder.signature).setup()
    configured = load_settings(
        **{
            **settings.model_dump(exclude={"api_keys"}),
            "mongodb_uri": settings.uri(),
            "api_keys": {"support": SUPPORT_KEY, "other": [OTHER_KEY]},
        }
    )
    app = create_app(configured, connection=connection, embedder=embedder)
    long_term = LongTermMemory(connection, embedder)
    episodic = EpisodicMemory(connection, embedder)
    memory = await long_term.store(ALICE, "Alice prefers window seats")
    action_id = await episodic.log_action(
        ALICE,
        session_id="s-alice",
        action_type="query_response",
        outcome="success",
        input={"query": "Which seat?"},
        memory_ids=[memory.id],
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        yield client, action_id, memory.id, long_term
    await long_term.aclose()


def _key(key: str = SUPPORT_KEY) -> dict[str, str]:
    return {"X-API-Key": key}


async def test_health_needs_no_key(api):
    client, *_ = api
    response = await client.get("/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


async def test_rating_lands_on_the_action_and_its_memories(api):
    client, action_id, memory_id, long_term = api
    response = await client.post(
        f"/v1/actions/{action_id}/feedback",
        json={"user_id": "alice", "rating": 5, "helpful": True},
        headers=_key(),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["rating"], body["helpful"], body["memory_ids"]) == (5, True, [memory_id])
    assert body["credited"] == 1.0
    action = (await client.get(f"/v1/actions/{action_id}?user_id=alice", headers=_key())).json()
    assert action["feedback"]["rating"] == 5 and action["memory_ids"] == [memory_id]
    memory = await long_term.get(ALICE, memory_id)
    assert memory.feedback_count == 1
    rates = (await client.get("/v1/success-rates", headers=_key())).json()
    assert rates["total"] == 1 and rates["rated"] == 1 and rates["average_rating"] == 5


async def test_a_retry_with_the_same_idempotency_key_counts_once(api):
    client, action_id, memory_id, long_term = api
    url, body = f"/v1/actions/{action_id}/feedback", {"user_id": "alice", "rating": 2}
    headers = {**_key(), "Idempotency-Key": "rate-1"}
    first = await client.post(url, json=body, headers=headers)
    again = await client.post(url, json=body, headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert (await long_term.get(ALICE, memory_id)).feedback_count == 1
    reused = await client.post(url, json={**body, "rating": 4}, headers=headers)
    assert reused.status_code == 409 and "idempotency" in reused.json()["detail"].lower()


async def test_keys_are_required_and_scoped_to_their_agent(api):
    client, action_id, *_ = api
    url = f"/v1/actions/{action_id}"
    for headers in ({}, _key("wrong-key-0123456789abcdefgh"), _key(SUPPORT_KEY[:-1])):
        response = await client.get(url + "?user_id=alice", headers=headers)
        assert response.status_code == 401 and response.json()["detail"]
    # The other agent's key: the action does not exist for it, and nothing is written.
    assert (await client.get(url + "?user_id=alice", headers=_key(OTHER_KEY))).status_code == 404
    rated = await client.post(
        url + "/feedback", json={"user_id": "alice", "rating": 1}, headers=_key(OTHER_KEY)
    )
    assert rated.status_code == 404
    # Another user of the same agent: also not found.
    assert (await client.get(url + "?user_id=bob", headers=_key())).status_code == 404
    action = (await client.get(url + "?user_id=alice", headers=_key())).json()
    assert action["feedback"] == {}
    other_rates = (await client.get("/v1/success-rates", headers=_key(OTHER_KEY))).json()
    assert other_rates["total"] == 0


@pytest.mark.parametrize(
    "body",
    [
        {"user_id": "alice"},  # nothing to record
        {"user_id": "alice", "rating": 6},
        {"user_id": "alice", "rating": "5"},
        {"user_id": "alice", "rating": 4.5},
        {"user_id": "alice", "helpful": "yes"},
        {"user_id": "alice", "correction": ""},
        {"user_id": {"$ne": None}, "rating": 5},
        {"rating": 5},
        {"user_id": "alice", "rating": 5, "$set": {"feedback": 1}},
        {"user_id": "", "rating": 5},
        {"user_id": "a\x00b", "rating": 5},
        {"user_id": "alice", "correction": "wrong\x00answer"},  # the schema says no NUL too
    ],
)
async def test_bad_feedback_is_422_with_a_clear_body_and_writes_nothing(api, body):
    client, action_id, memory_id, long_term = api
    response = await client.post(f"/v1/actions/{action_id}/feedback", json=body, headers=_key())
    assert response.status_code == 422, response.text
    assert response.json()["detail"]
    action = (await client.get(f"/v1/actions/{action_id}?user_id=alice", headers=_key())).json()
    assert action["feedback"] == {}
    assert (await long_term.get(ALICE, memory_id)).feedback_count == 0


async def test_unknown_ids_and_malformed_requests(api):
    client, *_ = api
    missing = await client.get("/v1/actions/act_nope?user_id=alice", headers=_key())
    assert missing.status_code == 404 and "act_nope" in missing.json()["detail"]
    assert (await client.get("/v1/actions/act_nope", headers=_key())).status_code == 422
    not_json = await client.post(
        "/v1/actions/act_nope/feedback",
        content=b"{not json",
        headers={**_key(), "Content-Type": "application/json"},
    )
    assert not_json.status_code == 422
    not_utf8 = await client.post(
        "/v1/actions/act_nope/feedback",
        content=b"\xff\xfe{",
        headers={**_key(), "Content-Type": "application/json"},
    )
    assert not_utf8.status_code == 400 and not_utf8.json()["detail"]
    assert (await client.get("/v1/success-rates?days=0", headers=_key())).status_code == 422
    assert (await client.get("/v1/success-rates?days=x", headers=_key())).status_code == 422
    # A misspelt parameter is refused rather than ignored (``day`` would silently mean 30 days).
    misspelt = await client.get("/v1/success-rates?day=7", headers=_key())
    assert misspelt.status_code == 422 and "day" in str(misspelt.json()["detail"])
    extra = await client.get("/v1/actions/act_nope?user_id=alice&agent_id=other", headers=_key())
    assert extra.status_code == 422
    # An id of whitespace only is refused by the schema, as the memories refuse it.
    blank = await client.get("/v1/actions/act_nope?user_id=%20%20", headers=_key())
    assert blank.status_code == 422


async def test_the_openapi_document_describes_every_route(api):
    client, *_ = api
    spec = (await client.get("/openapi.json")).json()
    assert set(spec["paths"]) == {
        "/health",
        "/v1/actions/{action_id}/feedback",
        "/v1/actions/{action_id}",
        "/v1/success-rates",
    }
    assert "X-API-Key" in str(spec["components"]["securitySchemes"])


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_agent_memory_api_serves_and_stops_cleanly(stop, embedded_server, offline_env, tmp_path):
    """The command as an operator runs it: served on a port, answering, stopped by an
    orchestrator (SIGTERM) or Ctrl+C with exit 0."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **offline_env,
        "MONGODB_URI": embedded_server.uri,
        "AGENT_MEMORY_DATABASE": "t_api_command",
        "AGENT_MEMORY_API_KEYS": json.dumps({"support": SUPPORT_KEY}),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "agent_memory", "api", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(base + "/health", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "the API did not start"
                time.sleep(0.2)
        assert health.json() == {"status": "ok"}
        assert httpx.get(base + "/v1/success-rates", timeout=5).status_code == 401
        rates = httpx.get(base + "/v1/success-rates", headers=_key(), timeout=5)
        assert rates.status_code == 200 and rates.json()["agent_id"] == "support"
    finally:
        server.send_signal(stop)
        _, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
    assert "Traceback" not in stderr
