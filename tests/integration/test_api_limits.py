"""The feedback API's front door: a request without a valid key is refused before any of its
body is read, and a body over ``api_max_body_bytes`` is refused without reading the rest,
whether it says its size (Content-Length), does not (chunked), or lies about it."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from agent_memory.api import create_app
from agent_memory.config import load_settings
from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.mongo.indexes import IndexManager
from agent_memory.tenancy import Tenant
from tests.loopback import serve_asgi

KEY = "limits-test-key-0123456789abcdef"
ALICE = Tenant("support", "alice")
LIMIT = 4_096
CHUNK = 1_024


class Body:
    """A request body of ``chunks`` pieces of ``CHUNK`` bytes, made as it is read: ``read``
    says how many bytes the app asked for. Nothing beyond what is read is ever made."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.chunks):
            self.read += CHUNK
            yield b" " * CHUNK


@pytest.fixture
async def api(connection, embedder, settings):
    await IndexManager(connection, embedder.signature).setup()
    configured = load_settings(
        **{
            **settings.model_dump(exclude={"api_keys", "api_max_body_bytes"}),
            "mongodb_uri": settings.uri(),
            "api_keys": {"support": KEY},
            "api_max_body_bytes": LIMIT,
        }
    )
    app = create_app(configured, connection=connection, embedder=embedder)
    action_id = await EpisodicMemory(connection, embedder).log_action(
        ALICE, session_id="s", action_type="query_response", outcome="success"
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        yield client, action_id


def _padded(size: int) -> bytes:
    """A valid feedback body of exactly ``size`` bytes (JSON allows trailing spaces)."""
    body = json.dumps({"user_id": "alice", "rating": 4}).encode()
    return body + b" " * (size - len(body))


@pytest.mark.parametrize("key", [None, "wrong-key-0123456789abcdefgh", KEY[:-1]])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_a_request_without_a_valid_key_is_401_before_its_body_is_read(api, key, declared):
    client, action_id = api
    body = Body(chunks=200_000)  # 200 MB, if anyone read it
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["X-API-Key"] = key
    if declared:
        headers["Content-Length"] = str(body.chunks * CHUNK)
    response = await client.post(f"/v1/actions/{action_id}/feedback", content=body, headers=headers)
    assert response.status_code == 401
    assert response.json() == {"detail": "a valid X-API-Key header is required"}
    assert response.headers["www-authenticate"] == "ApiKey"
    assert body.read == 0


async def test_a_body_at_the_limit_is_read_and_one_byte_more_is_413(api):
    client, action_id = api
    url = f"/v1/actions/{action_id}/feedback"
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    at_limit = await client.post(url, content=_padded(LIMIT), headers=headers)
    assert at_limit.status_code == 200, at_limit.text
    over = await client.post(url, content=_padded(LIMIT + 1), headers=headers)
    assert over.status_code == 413
    assert over.json() == {"detail": f"the request body is larger than {LIMIT} bytes"}


@pytest.mark.parametrize(
    "declared",
    [
        None,  # chunked: no Content-Length at all
        "200000000",  # says how large it is
        "10",  # lies: far more follows
    ],
    ids=["chunked", "content-length", "lying-content-length"],
)
async def test_a_body_over_the_limit_is_413_without_reading_the_rest(api, declared):
    client, action_id = api
    body = Body(chunks=200_000)
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    if declared is not None:
        headers["Content-Length"] = declared
    response = await client.post(f"/v1/actions/{action_id}/feedback", content=body, headers=headers)
    assert response.status_code == 413
    assert response.json() == {"detail": f"the request body is larger than {LIMIT} bytes"}
    assert body.read <= LIMIT + CHUNK  # cut off at the limit, the rest never asked for
    action = (
        await client.get(f"/v1/actions/{action_id}?user_id=alice", headers={"X-API-Key": KEY})
    ).json()
    assert action["feedback"] == {}


async def test_reads_and_health_are_not_limited_by_their_empty_bodies(api):
    client, action_id = api
    assert (await client.get("/health")).status_code == 200
    read = await client.get(f"/v1/actions/{action_id}?user_id=alice", headers={"X-API-Key": KEY})
    assert read.status_code == 200


def test_the_limit_is_a_setting(monkeypatch):
    assert load_settings().api_max_body_bytes == 65_536
    monkeypatch.setenv("AGENT_MEMORY_API_MAX_BODY_BYTES", "8192")
    assert load_settings().api_max_body_bytes == 8_192


# --- served by uvicorn: what an HTTP client sees on the wire ---------------------------------


@pytest.fixture(scope="module")
def served(embedded_server) -> Iterator[int]:
    configured = load_settings(
        mongodb_uri=embedded_server.uri,
        database="t_api_limits",
        embedder="fake",
        api_keys={"support": KEY},
    )
    with serve_asgi(create_app(configured)) as port:
        yield port


def _exchange(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` (and ``body``, possibly only the start of what ``head`` announces), then
    read the answer until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        received = b""
        while chunk := conn.recv(65_536):
            received += chunk
    header_block, _, content = received.partition(b"\r\n\r\n")
    status_line, *lines = header_block.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines)
    }
    return int(status_line.split()[1]), headers, content


def _post_head(**headers: str) -> str:
    lines = ["POST /v1/actions/act_1/feedback HTTP/1.1", "Host: api"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return "\n".join(lines) + "\n"


def test_served_a_huge_unauthenticated_request_is_answered_before_its_body_is_sent(served):
    """The server answers 401 at once to the headers of a 200 MB request and closes the
    connection: none of the body has to be sent, so none of it can be held."""
    status, headers, content = _exchange(
        served, _post_head(Content_Type="application/json", Content_Length=str(200 * 2**20))
    )
    assert status == 401 and json.loads(content)["detail"]
    assert headers["connection"] == "close"


def test_served_a_body_over_the_limit_is_413_before_the_rest_is_sent(served):
    declared = _exchange(served, _post_head(X_API_Key=KEY, Content_Length=str(200 * 2**20)), b"{")
    assert declared[0] == 413 and declared[1]["connection"] == "close"
    assert json.loads(declared[2]) == {"detail": "the request body is larger than 65536 bytes"}
    # Chunked: 80 KiB sent and the body never ended; the answer comes anyway.
    piece = b" " * 16_384
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(5))
    chunked = _exchange(
        served,
        _post_head(X_API_Key=KEY, Content_Type="application/json", Transfer_Encoding="chunked"),
        chunks,
    )
    assert chunked[0] == 413 and chunked[1]["connection"] == "close"
    assert json.loads(chunked[2]) == {"detail": "the request body is larger than 65536 bytes"}
