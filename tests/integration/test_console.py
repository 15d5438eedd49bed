"""The memory console's web application on the embedded server: signing in with an agent's
key or the local token, what each sees, escaping, and requests from other sites. The pages
are driven here over ASGI; test_console_browser.py drives them in a real browser."""

from __future__ import annotations

import re

import httpx
import pytest

from agent_memory.console import create_console_app
from agent_memory.console.app import SESSION_COOKIE
from agent_memory.errors import InvalidInputError
from tests.integration.console_data import (
    KEYS,
    SUPPORT_KEY,
    TOKEN,
    console_settings,
    store_memories,
)


@pytest.fixture
async def with_keys(connection, embedder, settings):
    await store_memories(connection, embedder)
    app = create_console_app(connection, settings=console_settings(settings, api_keys=KEYS))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        yield client


@pytest.fixture
async def with_token(connection, embedder, settings):
    await store_memories(connection, embedder)
    app = create_console_app(connection, settings=console_settings(settings), token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        yield client


async def sign_in(client: httpx.AsyncClient, secret: str) -> httpx.Response:
    return await client.post("/login", data={"secret": secret})


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no form token on the page"
    return found.group(1)


async def test_pages_need_a_sign_in(with_keys):
    response = await with_keys.get("/")
    assert response.status_code == 303 and response.headers["location"] == "/login"
    response = await with_keys.get("/agents/support")
    assert response.status_code == 303
    login = await with_keys.get("/login")
    assert login.status_code == 200 and "An agent&#39;s API key" in login.text


async def test_a_key_signs_in_to_its_own_agent_and_sees_nothing_of_another(with_keys):
    response = await sign_in(with_keys, SUPPORT_KEY)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert SESSION_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    home = await with_keys.get("/")
    assert "/agents/support" in home.text and "other" not in home.text
    users = await with_keys.get("/agents/support")
    assert users.status_code == 200
    assert "<td>alice</td>" in users.text
    other = await with_keys.get("/agents/other")
    assert other.status_code == 404 and "no such agent" in other.text
    assert "bob" not in other.text and "Bob" not in other.text


async def test_a_wrong_key_signs_in_nobody(with_keys):
    response = await sign_in(with_keys, "not-a-key-0123456789abcdef")
    assert response.status_code == 401 and "does not sign in" in response.text
    assert SESSION_COOKIE not in response.headers.get("set-cookie", "")
    assert (await with_keys.get("/")).status_code == 303


async def test_the_local_token_signs_in_to_every_agent(with_token):
    assert (await sign_in(with_token, "wrong")).status_code == 401
    assert (await sign_in(with_token, TOKEN)).status_code == 303
    home = await with_token.get("/")
    assert "/agents/support" in home.text and "/agents/other" in home.text
    assert "<td>bob</td>" in (await with_token.get("/agents/other")).text


async def test_stored_text_stays_text(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    page = (await with_keys.get("/agents/support")).text
    assert "<script>" not in page and 'href="https://evil.example"' not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page


async def test_every_page_forbids_scripts_framing_and_caching(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    for path in ("/login", "/", "/agents/support", "/agents/other"):
        headers = (await with_keys.get(path)).headers
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"
        # Not no-referrer: the browser would post the console's own forms with Origin: null.
        assert headers["referrer-policy"] == "same-origin"


async def test_requests_from_other_sites_change_nothing(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    token = csrf_of((await with_keys.get("/")).text)
    # Without the form's token, or from another site, signing out is refused.
    assert (await with_keys.post("/logout", data={})).status_code == 403
    refused = await with_keys.post(
        "/logout", data={"csrf": token}, headers={"Origin": "https://evil.example"}
    )
    assert refused.status_code == 403 and "other origins" in refused.text
    refused = await with_keys.post(
        "/logout", data={"csrf": token}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert refused.status_code == 403
    assert (await with_keys.get("/")).status_code == 200  # still signed in
    # A sign-in posted from another site is refused too (no login forgery).
    forged = await with_keys.post(
        "/login", data={"secret": SUPPORT_KEY}, headers={"Origin": "https://evil.example"}
    )
    assert forged.status_code == 403
    # From the page itself, with its token: signed out.
    out = await with_keys.post(
        "/logout", data={"csrf": token}, headers={"Origin": "http://console"}
    )
    assert out.status_code == 303
    assert (await with_keys.get("/")).status_code == 303


async def test_bad_input_is_one_line_and_a_4xx(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    response = await with_keys.get("/agents/" + "a" * 300)
    assert response.status_code in (400, 404)
    response = await with_keys.post("/login", data={"secret": "x" * 5_000})
    assert response.status_code == 422 and "secret: String should have at most" in response.text
    assert response.headers["content-type"].startswith("text/html")


def test_the_command_listens_on_loopback_only():
    from typer.testing import CliRunner

    from agent_memory.cli import app

    for host in ("0.0.0.0", "192.168.1.5", "example.com"):
        result = CliRunner().invoke(app, ["console", "--host", host])
        assert result.exit_code == 2
        assert "loopback" in result.output


def test_without_keys_the_console_needs_a_token(connection, settings):
    with pytest.raises(InvalidInputError, match="token"):
        create_console_app(connection, settings=console_settings(settings))
