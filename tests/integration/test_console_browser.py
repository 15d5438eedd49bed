"""The memory console in a real browser (headless chromium, tests/integration/browser.py):
signing in through the form, what an agent's key shows and hides, stored text that stays text
in the document, and signing out. Skipped, saying what to install, without chromium."""

from __future__ import annotations

import asyncio
import struct

import pytest

from agent_memory.console import create_console_app
from tests.integration.browser import (
    WINDOW,
    Browser,
    browser_missing,
    console_in_browser,
    screenshot,
)
from tests.integration.console_data import (
    HOSTILE,
    KEYS,
    OTHER_KEY,
    OTHER_MEMORY,
    SUPPORT_KEY,
    console_settings,
    store_memories,
)

pytestmark = pytest.mark.browser


@pytest.fixture
async def browser(connection, embedder, settings, tmp_path):
    """A headless chromium on a console with API keys for agents ``support`` and ``other``."""
    if reason := browser_missing():
        pytest.skip(reason)
    await store_memories(connection, embedder)
    app = create_console_app(connection, settings=console_settings(settings, api_keys=KEYS))
    async with console_in_browser(app, tmp_path) as browser:
        yield browser


async def test_a_key_signs_in_through_the_form_and_sees_its_agents_users(browser: Browser):
    await browser.open("/agents/support")
    assert await browser.path() == "/login"
    await browser.sign_in(SUPPORT_KEY)
    assert await browser.path() == "/"
    await browser.heading("Agents")
    assert await browser.count('main a[href="/agents/support"]') == 1
    await browser.follow("support")
    await browser.heading("Users of support")
    assert await browser.path() == "/agents/support"
    users = await browser.texts("main tbody tr td:first-child")
    assert users == sorted(["alice", HOSTILE])


async def test_a_wrong_key_does_not_sign_in(browser: Browser):
    await browser.sign_in("not-a-key-0123456789abcdef")
    assert await browser.path() == "/login"
    assert "That key does not sign in." in await browser.text()
    await browser.open("/")
    assert await browser.path() == "/login"


async def test_a_key_sees_nothing_of_another_agent(browser: Browser):
    await browser.sign_in(SUPPORT_KEY)
    await browser.heading("Agents")
    assert await browser.count('a[href^="/agents/other"]') == 0
    assert "other" not in await browser.text()
    await browser.open("/agents/other")
    shown = await browser.text()
    assert "no such agent" in shown
    assert "bob" not in shown and OTHER_MEMORY not in shown
    assert "bob" not in await browser.source()
    # And the other way round: the other agent's key sees none of support's users.
    await browser.sign_out()
    await browser.sign_in(OTHER_KEY)
    await browser.heading("Agents")
    assert await browser.count('a[href^="/agents/support"]') == 0
    await browser.open("/agents/support")
    assert "no such agent" in await browser.text()
    assert "alice" not in await browser.source()


async def test_a_hostile_user_id_stays_text(browser: Browser):
    await browser.sign_in(SUPPORT_KEY)
    await browser.open("/agents/support")
    await browser.heading("Users of support")
    assert HOSTILE in await browser.texts("main td")
    assert await browser.count('a[href^="https://evil.example"]') == 0
    assert await browser.count("script") == 0
    assert not await browser.alert_open()


async def test_signing_out_through_the_button(browser: Browser):
    await browser.sign_in(SUPPORT_KEY)
    await browser.heading("Agents")
    await browser.sign_out()
    assert await browser.path() == "/login"
    for path in ("/", "/agents/support"):
        await browser.open(path)
        assert await browser.path() == "/login"
        await browser.heading("Sign in")


async def test_a_screenshot_is_a_png_of_the_whole_window(browser: Browser, tmp_path):
    await browser.sign_in(SUPPORT_KEY)
    await browser.open("/agents/support")
    await browser.heading("Users of support")
    path = await asyncio.to_thread(screenshot, browser.driver, tmp_path / "shots" / "users.png")
    png = path.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert struct.unpack(">II", png[16:24]) == WINDOW  # IHDR: width, height
