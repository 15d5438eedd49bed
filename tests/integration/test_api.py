"""The feedback API with an HTTP client against the app, on the embedded server."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
import structlog

from agent_memory.api import create_app
from agent_memory.config import load_settings
from agent_memory.errors import ConfigurationError
from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant

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


async def test_a_retry_replays_the_first_response_after_later_changes(api):
    client, action_id, memory_id, long_term = api
    url = f"/v1/actions/{action_id}/feedback"
    first = await client.post(
        url, json={"user_id": "alice", "rating": 2}, headers={**_key(), "Idempotency-Key": "r-1"}
    )
    assert first.status_code == 200, first.text
    changed = await client.post(
        url, json={"user_id": "alice", "rating": 5, "correction": "it was fine"}, headers=_key()
    )
    assert changed.json()["rating"] == 5
    # The answer to r-1 was lost; its retry gets that answer, not the current state, and undoes
    # nothing.
    again = await client.post(
        url, json={"user_id": "alice", "rating": 2}, headers={**_key(), "Idempotency-Key": "r-1"}
    )
    assert (again.status_code, again.json()) == (200, first.json())
    action = (await client.get(f"/v1/actions/{action_id}?user_id=alice", headers=_key())).json()
    assert action["feedback"]["rating"] == 5
    assert (await long_term.get(ALICE, memory_id)).feedback_count == 1


async def test_feedback_equal_to_the_stored_state_answers_200_and_writes_nothing(api, connection):
    client, action_id, memory_id, long_term = api
    url = f"/v1/actions/{action_id}/feedback"
    logs = connection.collection("action_logs")
    rating = {"user_id": "alice", "rating": 4, "helpful": True}
    first = await client.post(url, json=rating, headers=_key())
    stored = await logs.find_one({"_id": action_id})
    await asyncio.sleep(0.01)  # a write now would carry a later updated_at
    with structlog.testing.capture_logs() as events:
        same = await client.post(url, json=rating, headers=_key())
    assert same.status_code == 200
    assert same.json() == first.json()
    assert await logs.find_one({"_id": action_id}) == stored
    assert "feedback_recorded" not in [event["event"] for event in events]
    assert (await long_term.get(ALICE, memory_id)).feedback_count == 1
    # With a new idempotency key the state is not written either; the key is kept, so its
    # retry still answers what it answered once the state has moved on.
    keyed = {**_key(), "Idempotency-Key": "same-state"}
    unchanged = await client.post(url, json=rating, headers=keyed)
    assert unchanged.json() == first.json()
    after = await logs.find_one({"_id": action_id})
    assert after["feedback"]["version"] == stored["feedback"]["version"]
    assert after["feedback"]["updated_at"] == stored["feedback"]["updated_at"]
    await client.post(url, json={"user_id": "alice", "rating": 1}, headers=_key())
    retried = await client.post(url, json=rating, headers=keyed)
    assert (retried.status_code, retried.json()) == (200, first.json())
    assert (await logs.find_one({"_id": action_id}))["feedback"]["rating"] == 1


async def test_feedback_given_again_replaces_the_earlier_one_entirely(api, connection):
    """Issue 15 item 7: each POST sets the whole feedback; a field left out is cleared."""
    client, action_id, memory_id, long_term = api
    url = f"/v1/actions/{action_id}/feedback"
    logs = connection.collection("action_logs")

    async def state() -> tuple[dict, tuple[int, float]]:
        action = await client.get(f"/v1/actions/{action_id}?user_id=alice", headers=_key())
        memory = await long_term.get(ALICE, memory_id)
        return action.json()["feedback"], (memory.feedback_count, memory.feedback_sum)

    first = await client.post(url, json={"user_id": "alice", "rating": 4}, headers=_key())
    assert first.json()["credited"] == 0.5
    replaced = await client.post(
        url,
        json={"user_id": "alice", "helpful": False, "correction": "I moved to Porto"},
        headers=_key(),
    )
    assert replaced.status_code == 200, replaced.text
    body = replaced.json()
    assert (body["rating"], body["helpful"], body["correction"], body["credited"]) == (
        None,
        False,
        "I moved to Porto",
        -0.5,
    )
    feedback, credit = await state()
    assert set(feedback) == {"helpful", "correction", "credited", "updated_at"}
    assert (feedback["helpful"], feedback["correction"]) == (False, "I moved to Porto")
    assert credit == (1, -0.5)  # only the new state, the action counted once
    rates = (await client.get("/v1/success-rates", headers=_key())).json()
    assert rates["rated"] == 0 and rates["average_rating"] is None

    # The same credit with a field left out is still a new state: written, credit unchanged.
    await client.post(url, json={"user_id": "alice", "rating": 4, "helpful": True}, headers=_key())
    version = (await logs.find_one({"_id": action_id}))["feedback"]["version"]
    rating_alone = await client.post(url, json={"user_id": "alice", "rating": 4}, headers=_key())
    assert (rating_alone.json()["helpful"], rating_alone.json()["credited"]) == (None, 0.5)
    assert (await logs.find_one({"_id": action_id}))["feedback"]["version"] == version + 1
    feedback, credit = await state()
    assert set(feedback) == {"rating", "credited", "updated_at"} and credit == (1, 0.5)

    # A correction alone takes the rating and its credit back.
    corrected = await client.post(
        url, json={"user_id": "alice", "correction": "Porto, not Lisbon"}, headers=_key()
    )
    assert corrected.json() | {"updated_at": None} == {
        "action_id": action_id,
        "rating": None,
        "helpful": None,
        "correction": "Porto, not Lisbon",
        "credited": None,
        "memory_ids": [memory_id],
        "updated_at": None,
    }
    feedback, credit = await state()
    assert set(feedback) == {"correction", "updated_at"} and credit == (0, 0.0)


@pytest.mark.parametrize("keys", ["none", "the same", "one each"])
async def test_fifty_identical_concurrent_ratings_all_succeed_and_write_once(api, connection, keys):
    client, action_id, memory_id, long_term = api
    url = f"/v1/actions/{action_id}/feedback"

    def headers(n: int) -> dict[str, str]:
        if keys == "none":
            return _key()
        return {**_key(), "Idempotency-Key": "rate-once" if keys == "the same" else f"rate-{n}"}

    with structlog.testing.capture_logs() as events:
        responses = await asyncio.gather(
            *(
                client.post(url, json={"user_id": "alice", "rating": 5}, headers=headers(n))
                for n in range(50)
            )
        )
    assert [r.status_code for r in responses] == [200] * 50, {r.text for r in responses}
    assert len({r.text for r in responses}) == 1  # one state, one updated_at
    recorded = [event for event in events if event["event"] == "feedback_recorded"]
    assert len(recorded) == 1
    stored = await connection.collection("action_logs").find_one({"_id": action_id})
    assert stored["feedback"]["version"] == 1  # written once
    memory = await long_term.get(ALICE, memory_id)
    assert (memory.feedback_count, memory.feedback_sum) == (1, 1.0)


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
    ("key", "problem"),
    [
        ("", "is empty"),
        ("short-key", "shorter than 24 characters"),
        (f" {SUPPORT_KEY}", "spaces around it"),
        ("clé-de-support-0123456789abcdef", "non-ASCII character"),
        ("support\u200bkey-0123456789abcdef", "non-ASCII character"),
        ("support-key-0123\n456789abcdef", "control character"),
        ("support-key-0123\t456789abcdef", "control character"),
        ("support-key-0123\x00456789abcdef", "control character"),
        ("support-key-0123\x7f456789abcdef", "control character"),
    ],
)
def test_a_key_that_can_never_authenticate_is_refused_with_one_line(key, problem):
    with pytest.raises(ConfigurationError) as refused:
        load_settings(api_keys={"support": [SUPPORT_KEY[::-1], key]})
    message = str(refused.value)
    assert problem in message and "'support'" in message
    assert "\n" not in message
    assert "0123" not in message and "short-key" not in message  # the key is never echoed


def test_agent_memory_api_refuses_a_key_with_a_line_break_before_it_starts(offline_env, tmp_path):
    broken = "support-key-0123456789abcdef\nsecond-half-of-the-key"
    with socket.socket() as taken:  # were the key accepted, listening would fail (exit 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = subprocess.run(
            [sys.executable, "-m", "agent_memory", "api", "--port", str(taken.getsockname()[1])],
            cwd=tmp_path,
            env={**offline_env, "AGENT_MEMORY_API_KEYS": json.dumps({"support": broken})},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "control character" in lines[0], result.stderr
    assert "support-key-0123456789abcdef" not in result.stderr
    assert "second-half" not in result.stderr + result.stdout


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


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"user_id": "alice", "rating": NaN}', "NaN is not a JSON number"),
        (b'{"user_id": "alice", "rating": Infinity}', "Infinity is not a JSON number"),
        (b'{"user_id": "alice", "helpful": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"user_id": "alice", "rating": 1e400}', "beyond the range of a 64-bit float"),
        (b'{"user_id": "alice", "correction": "marker-4711 \\ud800"}', "unpaired surrogate"),
        (b'{"user_id": "marker-4711\\udfff", "rating": 5}', "unpaired surrogate"),
        (b'{"user_id": "alice", "rating": 5, "marker-4711\\ud800": 1}', "unpaired surrogate"),
        (b'{"user_id": "alice", "rating": 5, "x": ' + b"[" * 900 + b"]" * 900 + b"}", "deeper"),
    ],
    ids=["nan", "infinity", "-infinity", "1e400", "surrogate", "low-surrogate", "key", "deep"],
)
async def test_json_no_other_program_sends_is_400_with_one_line_and_logs_nothing(
    api, caplog, body, why
):
    """Issue 35 item 10: NaN, Infinity, a number beyond a float and a lone surrogate made a
    500 whose traceback repeated the input."""
    from agent_memory.api.body import NOT_JSON

    client, action_id, memory_id, long_term = api
    caplog.set_level("DEBUG")
    with structlog.testing.capture_logs() as events:
        response = await client.post(
            f"/v1/actions/{action_id}/feedback",
            content=body,
            headers={**_key(), "Content-Type": "application/json"},
        )
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert detail.startswith(NOT_JSON) and why in detail and "\n" not in detail
    assert "marker-4711" not in response.text
    logged = caplog.text + repr(events)
    assert "marker-4711" not in logged and "Traceback" not in logged
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR", "CRITICAL")]
    action = (await client.get(f"/v1/actions/{action_id}?user_id=alice", headers=_key())).json()
    assert action["feedback"] == {}
    assert (await long_term.get(ALICE, memory_id)).feedback_count == 0


async def test_escaped_surrogate_pairs_and_whole_floats_are_still_json(api):
    client, action_id, *_ = api
    response = await client.post(
        f"/v1/actions/{action_id}/feedback",
        content=b'{"user_id": "alice", "rating": 4.0, "correction": "fine \\ud83d\\ude00"}',
        headers={**_key(), "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["rating"] == 4 and response.json()["correction"] == "fine \U0001f600"


@pytest.mark.parametrize(
    "query",
    [
        "/v1/actions/{action}?user_id=%ED%A0%80",  # a surrogate's UTF-8 bytes, not UTF-8
        "/v1/actions/%ED%A0%80?user_id=alice",
        "/v1/success-rates?action_type=%ED%A0%80",
        "/v1/success-rates?days=NaN",
        "/v1/success-rates?days=Infinity",
        "/v1/success-rates?days=1e400",
        "/v1/success-rates?%ED%A0%80=1",
    ],
)
async def test_query_parameters_no_text_or_number_are_a_4xx_or_found_nothing(api, query):
    client, action_id, *_ = api
    response = await client.get(query.format(action=action_id), headers=_key())
    if "success-rates?action_type" in query:
        assert response.status_code == 200 and response.json()["total"] == 0
    else:
        assert response.status_code in (404, 422), response.text
        assert response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"rating": 7}, "rating must be an int from 1 to 5, got 7"),
        ({"rating": 0}, "rating must be an int from 1 to 5, got 0"),
        ({"rating": "5"}, "rating must be an int from 1 to 5, got '5'"),
        ({"rating": 4.5}, "rating must be an int from 1 to 5, got 4.5"),
        ({"helpful": "yes"}, "Input should be a valid boolean"),
        ({"correction": ""}, "String should have at least 1 character"),
    ],
)
async def test_a_bad_value_is_one_problem(api, body, message):
    """Issue 35 item 19: a rating of 7 was two problems, the second "Input should be None"
    (one per branch of the field's type)."""
    client, action_id, *_ = api
    response = await client.post(
        f"/v1/actions/{action_id}/feedback", json={"user_id": "alice", **body}, headers=_key()
    )
    assert response.status_code == 422
    problems = response.json()["detail"]
    assert [problem["msg"] for problem in problems] == [message]
    assert problems[0]["loc"] == ["body", next(iter(body))]


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
