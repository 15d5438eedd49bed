"""Secrets never show: API keys (Anthropic, Voyage, the feedback API's) and the password of
a MongoDB URI stay out of logs, error messages, tracebacks, reprs, HTTP bodies and the OpenAPI
document, on the failing paths (bad credentials, an unreachable server, provider 401/500
through loopback stubs, a wrong API key, invalid configuration) as on the succeeding ones.
Also: the embedded server listens on loopback only, and API keys are compared in constant time
against every configured key.

Every secret is a sentinel string that appears nowhere else, so "not in" is exact.
test_connection.py::test_connection_logs_never_show_the_password covers a good connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import traceback
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from aiohttp import web
from typer.testing import CliRunner

from agent_memory._log import get_logger
from agent_memory.api import create_app
from agent_memory.cli import app as cli
from agent_memory.config import load_settings, redact_uri
from agent_memory.errors import AgentMemoryError, ConfigurationError, StorageError
from agent_memory.mongo.connection import connect
from agent_memory.providers._retry import RetryPolicy
from agent_memory.providers.chat.anthropic import AnthropicChatModel
from agent_memory.providers.chat.base import ChatRequest, Message
from agent_memory.providers.embedders.voyage import VoyageEmbedder
from tests.loopback import serve_app

PASSWORD = "pw-SENTINEL-5f1c0de"
ANTHROPIC_KEY = "sk-ant-SENTINEL-a11ce0123456789"
VOYAGE_KEY = "pa-SENTINEL-v0yage0123456789"
API_KEY = "fb-SENTINEL-key-0123456789abcdef"
OTHER_API_KEY = "fb-SENTINEL-other-0123456789abcd"
TOKEN = "SENTINEL-aws-session-token"
SECRETS = (PASSWORD, ANTHROPIC_KEY, VOYAGE_KEY, API_KEY, OTHER_API_KEY, TOKEN)
FAST = RetryPolicy(attempts=2, initial_delay=0.01, max_delay=0.02, jitter=0.0)


def assert_clean(*texts: Any) -> None:
    """No sentinel in any of ``texts`` (each turned into text with repr if not a str)."""
    for text in texts:
        shown = text if isinstance(text, str) else repr(text)
        for secret in SECRETS:
            assert secret not in shown, f"a secret ({secret[:12]}...) in: {shown[:300]}"


def shown_error(exc: BaseException) -> str:
    """What a user or a log sees of an error: its message, repr and the whole traceback with
    every cause and context that is shown."""
    return "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("VOYAGE_API_KEY", VOYAGE_KEY)
    monkeypatch.setenv("AGENT_MEMORY_API_KEYS", json.dumps({"support": [API_KEY]}))


# --- settings and configuration errors ------------------------------------------------------------


def test_settings_never_show_their_secrets(secret_env):
    settings = load_settings(
        mongodb_uri=f"mongodb://app:{PASSWORD}@db.example:27017/?authSource=admin",
        chat_model="anthropic",
        embedder="voyage",
    )
    assert settings.anthropic_api_key.get_secret_value() == ANTHROPIC_KEY  # really configured
    assert settings.uri().count(PASSWORD) == 1
    assert_clean(
        repr(settings),
        str(settings),
        settings.model_dump_json(),
        json.dumps(settings.model_dump(mode="json")),
        repr(settings.model_dump()),
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"mongodb_uri": f"http://app:{PASSWORD}@db.example/"},
        {"mongodb_uri": f"mongodb://app:{PASSWORD}@db.example:port/"},
        {"mongodb_uri": f"mongodb://app:{PASSWORD}@/"},
        {"api_keys": {"support": PASSWORD[:20]}},
        {"api_keys": {"support": f" {API_KEY} "}},
        {"api_keys": {"support": API_KEY, "other": API_KEY}},
        {"api_keys": {"": API_KEY}},
        {"api_keys": {"support": [API_KEY, 42]}},
        {"anthropic_api_key": 12345, "mongodb_uri": f"mongodb://a:{PASSWORD}@h/"},
        {"embedder": f"voyage-{VOYAGE_KEY}"},
    ],
)
def test_configuration_errors_never_echo_a_secret(overrides):
    with pytest.raises(ConfigurationError) as caught:
        load_settings(**overrides)
    if "embedder" in overrides:
        return  # a secret pasted into a plain setting is echoed: it is not known as one
    assert_clean(shown_error(caught.value))


def test_an_api_keys_environment_value_that_is_not_json_is_not_echoed(monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_API_KEYS", f"support={API_KEY}")
    with pytest.raises(ConfigurationError, match="expected JSON") as caught:
        load_settings()
    assert_clean(shown_error(caught.value))


@pytest.mark.parametrize(
    "uri",
    [
        f"mongodb://app:{PASSWORD}@db.example/?authMechanism=MONGODB-AWS"
        f"&authMechanismProperties=AWS_SESSION_TOKEN:{TOKEN}",
        f"mongodb://app:{PASSWORD}@db.example/?tls=true&tlsCertificateKeyFilePassword={TOKEN}",
        f"mongodb+srv://app:{PASSWORD}@cluster0.example.net/db?retryWrites=true&w=majority"
        f"&authMechanismProperties=AWS_SESSION_TOKEN%3A{TOKEN}",
    ],
)
def test_redact_uri_hides_secrets_in_the_options_too(uri):
    redacted = redact_uri(uri)
    assert_clean(redacted)
    assert "app:***@" in redacted and "db" in redacted  # still says where it points


# --- the database: unreachable, refused credentials, invalid options ------------------------------


async def test_an_unreachable_server_never_shows_the_password():
    uri = f"mongodb://app:{PASSWORD}@127.0.0.1:9/?authSource=admin"
    with structlog.testing.capture_logs() as logs, pytest.raises(AgentMemoryError) as caught:
        await connect(load_settings(mongodb_uri=uri, connect_timeout_ms=300))
    assert "cannot be reached" in str(caught.value)
    assert_clean(shown_error(caught.value), logs)


@pytest.mark.mongoeco
async def test_refused_credentials_never_show_the_password():
    from mongoeco.engines import MemoryEngine
    from mongoeco.wire import AsyncMongoEcoProxyServer, WireAuthUser

    server = AsyncMongoEcoProxyServer(
        engine=MemoryEngine(),
        auth_users=(WireAuthUser("app", "the-real-one", roles=({"role": "root", "db": "admin"},)),),
    )
    address = await server.start()
    try:
        uri = (
            f"mongodb://app:{PASSWORD}@127.0.0.1:{address.port}/"
            "?directConnection=true&authMechanism=SCRAM-SHA-256"
        )
        with structlog.testing.capture_logs() as logs, pytest.raises(AgentMemoryError) as caught:
            await connect(load_settings(mongodb_uri=uri, connect_timeout_ms=3_000))
        assert_clean(shown_error(caught.value), logs)
    finally:
        await server.close()


async def test_invalid_driver_options_never_show_the_password():
    uri = f"mongodb://app:{PASSWORD}@127.0.0.1:9/?authMechanism=NO-SUCH"
    # The driver warns about options it ignores (and the suite makes warnings errors).
    with (
        warnings.catch_warnings(record=True) as warned,
        structlog.testing.capture_logs() as logs,
        pytest.raises(AgentMemoryError) as caught,
    ):
        warnings.simplefilter("always")
        await connect(load_settings(mongodb_uri=uri, connect_timeout_ms=300))
    assert_clean(shown_error(caught.value), logs, [str(w.message) for w in warned])


async def test_a_secret_in_the_uri_options_stays_out_of_the_connection_log(embedded_server):
    uri = f"{embedded_server.uri}&appName=x&authMechanismProperties=AWS_SESSION_TOKEN:{TOKEN}"
    settings = load_settings(mongodb_uri=uri, database="t_secret_options", embedder="fake")
    with structlog.testing.capture_logs() as logs:
        try:
            connection = await connect(settings)
        except AgentMemoryError as exc:  # the driver may refuse the option without AWS auth
            assert_clean(shown_error(exc))
        else:
            await connection.close()
    targets = [entry["target"] for entry in logs if entry["event"] == "database_connected"]
    assert targets and "authMechanismProperties=***" in targets[0]
    assert_clean(logs)


# --- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("command", [["indexes", "validate"], ["worker", "--once"], ["api"]])
def test_commands_failing_to_connect_never_print_a_secret(command, debug):
    env = {
        "MONGODB_URI": f"mongodb://app:{PASSWORD}@127.0.0.1:9/?authSource=admin",
        "AGENT_MEMORY_CONNECT_TIMEOUT_MS": "300",
        "AGENT_MEMORY_EMBEDDER": "fake",
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "VOYAGE_API_KEY": VOYAGE_KEY,
        "AGENT_MEMORY_API_KEYS": json.dumps({"support": API_KEY}),
    }
    args = (["--debug"] if debug else []) + command
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code != 0
    assert_clean(result.output, result.stderr, result.exception and shown_error(result.exception))


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "uri",
    [
        f"mongodb//admin:{PASSWORD}@db.example.com/",
        f"mongodb:/admin:{PASSWORD}@db.example.com/",
        f"mongodb://admin:{PASSWORD}@db.example.com:port/",
        f"mongodb://127.0.0.1:9/?password={PASSWORD}&authSource=admin",
    ],
)
def test_a_mistyped_uri_is_never_echoed_with_its_password(uri, debug):
    env = {"MONGODB_URI": uri, "AGENT_MEMORY_CONNECT_TIMEOUT_MS": "300"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the driver warns of the unknown option "password"
        result = CliRunner().invoke(cli, (["--debug"] if debug else []) + ["stats"], env=env)
    assert result.exit_code in (2, 3), result.output
    if uri.startswith(
        ("mongodb//", "mongodb:/admin")
    ):  # echoed to say what is wrong with it, masked
        assert "admin:***@db.example.com" in result.stderr
    assert_clean(result.output, result.stderr, result.exception and shown_error(result.exception))


def test_a_command_that_succeeds_never_prints_a_secret(cli_env):
    env = {
        **cli_env,
        "MONGODB_URI": cli_env["MONGODB_URI"] + f"&appName=app-{TOKEN[:8]}",
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "VOYAGE_API_KEY": VOYAGE_KEY,
        "AGENT_MEMORY_API_KEYS": json.dumps({"support": API_KEY}),
    }
    for args in (["--log-level", "debug", "indexes", "setup"], ["stats", "--json"]):
        result = CliRunner().invoke(cli, args, env=env)
        assert result.exit_code == 0, result.output
        assert_clean(result.output, result.stderr)


# --- providers: 401 and 500 from loopback stubs ----------------------------------------------------


class _Refusing:
    """An HTTP server that answers every request with ``status`` and notes the headers."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.seen: list[dict[str, str]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(dict(request.headers))
        body = {"type": "error", "error": {"type": "authentication_error", "message": "no"}}
        if self.status >= 500:
            body = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
        return web.json_response({**body, "detail": body["error"]["message"]}, status=self.status)


@pytest.fixture(params=[401, 500])
async def refusing(request) -> AsyncIterator[_Refusing]:
    stub = _Refusing(request.param)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", stub.handle)
    async with serve_app(app) as stub.url:
        yield stub


async def test_anthropic_errors_never_show_the_key(refusing):
    model = AnthropicChatModel(api_key=ANTHROPIC_KEY, base_url=refusing.url, retry=FAST)
    request = ChatRequest(messages=(Message.user("hello"),), max_tokens=50)
    try:
        with structlog.testing.capture_logs() as logs, pytest.raises(AgentMemoryError) as caught:
            await model.generate(request)
    finally:
        await model.aclose()
    assert any(ANTHROPIC_KEY in str(h) for h in refusing.seen)  # it was really sent
    assert_clean(shown_error(caught.value), logs, repr(model))


async def test_voyage_errors_never_show_the_key(refusing):
    embedder = VoyageEmbedder(api_key=VOYAGE_KEY, base_url=refusing.url + "/v1", retry=FAST)
    try:
        with structlog.testing.capture_logs() as logs, pytest.raises(AgentMemoryError) as caught:
            await embedder.embed_documents(["hello"])
    finally:
        await embedder.aclose()
    assert any(VOYAGE_KEY in str(h) for h in refusing.seen)
    assert_clean(shown_error(caught.value), logs, repr(embedder))


# --- the feedback API ------------------------------------------------------------------------------


@pytest.fixture
async def api(connection, embedder, settings) -> AsyncIterator[httpx.AsyncClient]:
    configured = load_settings(
        **{
            **settings.model_dump(exclude={"api_keys"}),
            "mongodb_uri": settings.uri(),
            "api_keys": {"support": API_KEY, "other": [OTHER_API_KEY]},
        }
    )
    app = create_app(configured, connection=connection, embedder=embedder)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        yield client


async def test_the_feedback_api_never_shows_a_key(api):
    near_miss = API_KEY[:-1] + "X"
    with structlog.testing.capture_logs() as logs:
        responses = [
            await api.get("/v1/success-rates", headers={"X-API-Key": near_miss}),
            await api.get("/v1/success-rates"),
            await api.post(
                "/v1/actions/act_1/feedback",
                json={"user_id": "u", "rating": 9},
                headers={"X-API-Key": API_KEY},
            ),
            await api.get("/v1/actions/act_1?user_id=u", headers={"X-API-Key": OTHER_API_KEY}),
            await api.get("/openapi.json"),
            await api.get("/docs"),
        ]
    assert [r.status_code for r in responses] == [401, 401, 422, 404, 200, 200]
    for response in responses:
        assert_clean(response.text, dict(response.headers))
    assert_clean(logs)


def test_api_keys_are_compared_in_constant_time_against_every_key(monkeypatch):
    import agent_memory.api.keys as api_keys

    calls: list[tuple[bytes, bytes]] = []
    real = api_keys.hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(api_keys.hmac, "compare_digest", counting)
    keys = api_keys.ApiKeys(
        load_settings(
            api_keys={"support": [API_KEY, "fb-second-key-0123456789abcd"], "other": OTHER_API_KEY}
        ).api_keys
    )
    for given, agent in ((API_KEY, "support"), (OTHER_API_KEY, "other"), ("nope" * 8, None)):
        calls.clear()
        assert keys.agent(given) == agent
        assert len(calls) == 3  # every key, match or not, first or last
        assert all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in calls)
    calls.clear()
    assert keys.agent("") is None and keys.agent(None) is None and calls == []


# --- the embedded server listens on loopback only -------------------------------------------------


def _listening(port: int) -> list[str]:
    """The local addresses of the sockets listening on ``port`` (Linux /proc)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def _non_loopback_addresses() -> Iterator[str]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent for UDP connect
            yield probe.getsockname()[0]
        except OSError:
            return


async def test_the_embedded_server_listens_on_loopback_only(embedded_server):
    assert embedded_server.info.host == "127.0.0.1"
    assert "@127.0.0.1:" in embedded_server.uri
    assert load_settings().api_host == "127.0.0.1"  # `agent-memory api` too, by default
    port = embedded_server.info.port
    listening = _listening(port)
    if not listening:
        pytest.skip("no /proc/net/tcp to read the listening address from")
    # 0100007F is 127.0.0.1 in /proc's byte order; ::1 is ...0001 in tcp6.
    assert set(listening) <= {"0100007F", "00000000000000000000000001000000"}, listening
    for address in _non_loopback_addresses():
        if address.startswith("127."):
            continue
        with pytest.raises(OSError):
            await asyncio.wait_for(asyncio.open_connection(address, port), 2)


@pytest.mark.mongoeco
def test_the_embedded_servers_password_is_masked_in_every_message(own_embedded_server):
    secret = own_embedded_server.info.secret
    assert secret and secret in own_embedded_server.uri  # the client really sends it
    with structlog.testing.capture_logs() as logs:
        error = StorageError(f"refused for {own_embedded_server.uri} (password {secret})")
        get_logger("agent_memory.tests").warning("connect_failed", detail=f"pw {secret}")
    assert secret not in str(error) and secret not in repr(error)
    assert logs and secret not in repr(logs)
