"""The memory console in a real browser (headless chromium, tests/integration/browser.py):
signing in through the form; the search with its score breakdown; a memory's history; a
forget behind its confirmation; stored hostile text that stays text in the document; a key
that sees nothing of another agent; signing out. Skipped, saying what to install, without
chromium.

``AGENT_MEMORY_SCREENSHOTS=docs/console`` makes the last test save the screenshots of
docs/console.md there."""

from __future__ import annotations

import asyncio
import os
import struct
from pathlib import Path
from urllib.parse import urlencode

import pytest

from agent_memory.console import create_console_app
from agent_memory.errors import NotFoundError
from agent_memory.memory.system import MemorySystem
from tests.integration.browser import (
    HAS_SELENIUM,
    WINDOW,
    Browser,
    browser_missing,
    console_in_browser,
    screenshot,
)
from tests.integration.console_data import (
    ALICE,
    HOSTILE,
    KEYS,
    OTHER_KEY,
    SUPPORT_KEY,
    Seeded,
    console_settings,
    seed,
)

pytestmark = pytest.mark.browser
REPOSITORY = Path(__file__).resolve().parents[2]

if HAS_SELENIUM:
    from selenium.webdriver.common.by import By


@pytest.fixture
async def memories(connection, embedder):
    system = MemorySystem(connection, embedder)
    yield system
    await system.aclose()


@pytest.fixture
async def seeded(memories) -> Seeded:
    return await seed(memories)


@pytest.fixture
async def browser(memories, seeded, settings, tmp_path):
    """A headless chromium on a console with API keys for agents ``support`` and ``other``."""
    if reason := browser_missing():
        pytest.skip(reason)
    app = create_console_app(memories, settings=console_settings(settings, api_keys=KEYS))
    async with console_in_browser(app, tmp_path) as browser:
        yield browser


def _at(path: str, **params: str) -> str:
    return f"{path}?{urlencode(params)}"


ALICE_PAGE = _at("/user", agent="support", user="alice")


async def _click(browser: Browser, css: str) -> None:
    await browser._run(lambda: browser.driver.find_element(By.CSS_SELECTOR, css).click())


async def _type(browser: Browser, css: str, text: str) -> None:
    def typed() -> None:
        field = browser.driver.find_element(By.CSS_SELECTOR, css)
        field.clear()
        field.send_keys(text)

    await browser._run(typed)


async def _search(browser: Browser, query: str) -> list[dict[str, str]]:
    """Search alice's memories through the form; each result row's cells by column name."""
    await browser.open(ALICE_PAGE)
    await browser.heading("User alice")
    await _type(browser, 'input[name="q"]', query)
    await _click(browser, 'form[role="search"] button[type="submit"]')
    await browser._until(
        lambda d: any("results for" in h.text for h in d.find_elements(By.CSS_SELECTOR, "main h3")),
        "the search results",
    )

    def rows() -> list[dict[str, str]]:
        heads = [h.text for h in browser.driver.find_elements(By.CSS_SELECTOR, "table.results th")]
        return [
            dict(zip(heads, [c.text for c in row.find_elements(By.TAG_NAME, "td")], strict=True))
            for row in browser.driver.find_elements(By.CSS_SELECTOR, "table.results tbody tr")
        ]

    return await browser._run(rows)


async def test_a_key_signs_in_through_the_form_and_sees_its_agents_users(browser: Browser):
    await browser.open(_at("/agent", agent="support"))
    assert await browser.path() == "/login"
    await browser.sign_in(SUPPORT_KEY)
    assert await browser.path() == "/"
    await browser.heading("Agents")
    assert await browser.count('main a[href="/agent?agent=support"]') == 1
    await browser.follow("support")
    await browser.heading("Users of support")
    users = await browser.texts("main table:first-of-type tbody tr td:first-child")
    assert users == sorted(["alice", HOSTILE])


async def test_a_wrong_key_does_not_sign_in(browser: Browser):
    await browser.sign_in("not-a-key-0123456789abcdef")
    assert await browser.path() == "/login"
    assert "That key does not sign in." in await browser.text()
    await browser.open("/")
    assert await browser.path() == "/login"


async def test_the_search_shows_each_sources_rank_and_the_score_parts(
    browser: Browser, memories: MemorySystem
):
    await browser.sign_in(SUPPORT_KEY)
    rows = await _search(browser, "where does Alice live")
    expected = await memories.long_term.retrieve(
        ALICE, "where does Alice live", k=10, learn=False, record_access=False
    )
    assert [row["memory"] for row in rows] == [hit.memory.content for hit in expected]
    for row, hit in zip(rows, expected, strict=True):
        for column, source in (("vector", "vector"), ("keyword", "text")):
            rank = hit.sources.get(source)
            assert row[column] == (f"#{rank.rank} ({rank.score:.3f})" if rank is not None else "-")
        assert row["relevance"] == f"{hit.breakdown.relevance:.3f}"
        assert row["importance"] == f"{hit.breakdown.importance:.3f}"
        assert row["feedback"] == f"{hit.breakdown.utility:+.3f}"
        assert abs(float(row["total"]) - hit.score) < 0.002
    assert rows[0]["memory"] == "Alice moved to Porto" and rows[0]["feedback"] == "+0.333"
    assert "reranker" not in rows[0]  # none configured


async def test_a_memorys_history_links_both_ways(browser: Browser, seeded: Seeded):
    await browser.sign_in(SUPPORT_KEY)
    await browser.open(_at("/memory", agent="support", user="alice", id=seeded.porto))
    await browser.heading("User alice")
    history = await browser.texts("ul.history li")
    assert history == ["Supersedes Alice lives in Berlin"]
    versions = await browser.texts("table.versions tbody tr td:first-child")
    assert versions == ["Alice moved to Porto", "Alice lives in Berlin"]
    assert await browser.count("svg.chart polyline.importance") == 1
    assert await browser.count("svg.chart circle.feedback-point") == 2
    await browser.follow("Alice lives in Berlin")
    await browser._until(
        lambda d: "Superseded by" in d.find_element(By.CSS_SELECTOR, "ul.history").text,
        "the superseded memory's page",
    )
    assert await browser.texts("ul.history li") == ["Superseded by Alice moved to Porto"]


async def test_forgetting_a_memory_asks_first(
    browser: Browser, memories: MemorySystem, seeded: Seeded
):
    await browser.sign_in(SUPPORT_KEY)
    await browser.open(_at("/memory", agent="support", user="alice", id=seeded.window))
    await browser.heading("User alice")
    await _click(browser, 'form[action="/memory/forget"] button')
    await browser._until(
        lambda d: any(h.text == "Forget this memory?" for h in d.find_elements(By.TAG_NAME, "h3")),
        "the confirmation",
    )
    assert await memories.long_term.get(ALICE, seeded.window)  # nothing forgotten yet
    await _click(browser, "button.danger")
    await browser.heading("Memory forgotten")
    with pytest.raises(NotFoundError):
        await memories.long_term.get(ALICE, seeded.window)
    rows = await _search(browser, "window seats")
    assert "Alice prefers window seats on long flights" not in [r["memory"] for r in rows]


async def test_hostile_text_stays_text(browser: Browser, seeded: Seeded):
    await browser.sign_in(SUPPORT_KEY)
    pasted = f"Alice pasted {HOSTILE} into the chat"
    for path in (
        _at("/agent", agent="support"),  # a user id
        _at("/memory", agent="support", user="alice", id=seeded.hostile),  # a memory
        _at("/session", agent="support", user="alice", id=seeded.session_id),  # a message
    ):
        await browser.open(path)
        await browser._until(lambda d: d.find_elements(By.TAG_NAME, "h2"), path)
        shown = await browser.text()
        assert HOSTILE in shown, path
        assert await browser.count('a[href^="https://evil.example"]') == 0
        assert await browser.count("script") == 0
        assert not await browser.alert_open()
    rows = await _search(browser, "pasted into the chat")
    assert pasted in [row["memory"] for row in rows]
    assert await browser.count("script") == 0 and not await browser.alert_open()


async def test_a_key_sees_nothing_of_another_agent(browser: Browser, seeded: Seeded):
    await browser.sign_in(SUPPORT_KEY)
    await browser.heading("Agents")
    assert await browser.count('a[href*="agent=other"]') == 0
    for path in (
        _at("/agent", agent="other"),
        _at("/user", agent="other", user="bob"),
        _at("/memory", agent="other", user="bob", id=seeded.bob_secret),
        _at("/memory", agent="support", user="alice", id=seeded.bob_secret),
    ):
        await browser.open(path)
        shown = await browser.text()
        assert "no such agent" in shown or "no memory" in shown, path
        source = await browser.source()
        assert "bob" not in shown and "vault" not in source, path
    # And the other way round: the other agent's key sees none of support's users.
    await browser.sign_out()
    await browser.sign_in(OTHER_KEY)
    await browser.heading("Agents")
    assert await browser.count('a[href*="agent=support"]') == 0
    await browser.open(ALICE_PAGE)
    assert "no such agent" in await browser.text()
    assert "Porto" not in await browser.source()


async def test_the_profile_memory_texts_and_one_line_dates_as_a_browser_draws_them(
    browser: Browser, memories: MemorySystem, seeded: Seeded
):
    """Issue 35 item 18: the profile panel, the memories of a turn as text, and every date
    and time on one line (a wrapped inline element has two boxes). A turn that used four
    memories squeezed the date column of a 1,000-pixel window onto two lines."""
    await memories.episodic.log_action(
        ALICE,
        session_id="s-1",
        action_type="query_response",
        outcome="success",
        content="Which seat should I book on my flight to Porto next week, and can I bring my bike?",
        memory_ids=[seeded.porto, seeded.window, seeded.berlin, seeded.hostile],
    )
    await browser.sign_in(SUPPORT_KEY)
    await browser._run(lambda: browser.driver.set_window_size(1000, 900))
    await browser.open(ALICE_PAGE)
    await browser.heading("User alice")
    profile = await browser.texts("section.profile pre")
    assert profile == [await memories.profiles.render(ALICE)]
    await browser.open(_at("/actions", agent="support", user="alice"))
    await browser.heading("User alice")
    used = await browser.texts("td.used a.memory")
    assert used[:3] == [
        "Alice moved to Porto",
        "Alice prefers window seats on long flights",
        "Alice lives in Berlin",
    ]
    assert used[3].startswith("Alice pasted <script>") and used[-1] == "Alice moved to Porto"
    boxes = await browser._run(
        lambda: browser.driver.execute_script(
            "return [...document.querySelectorAll('main time')].map(t => t.getClientRects().length)"
        )
    )
    assert len(boxes) == 2 and set(boxes) == {1}


async def test_signing_out_through_the_button(browser: Browser):
    await browser.sign_in(SUPPORT_KEY)
    await browser.heading("Agents")
    await browser.sign_out()
    assert await browser.path() == "/login"
    for path in ("/", ALICE_PAGE):
        await browser.open(path)
        assert await browser.path() == "/login"
        await browser.heading("Sign in")


async def test_screenshots_of_the_main_pages(browser: Browser, seeded: Seeded, tmp_path):
    """PNGs of the window, each page fully loaded; into $AGENT_MEMORY_SCREENSHOTS when set
    (docs/console.md's images), else a temporary folder."""
    wanted = os.environ.get("AGENT_MEMORY_SCREENSHOTS")
    # Relative to the repository: tests run in a temporary directory of their own.
    folder = REPOSITORY / wanted if wanted else tmp_path / "shots"
    await browser.sign_in(SUPPORT_KEY)
    shots = []
    await browser.open(_at("/agent", agent="support"))
    await browser.heading("Users of support")
    shots.append(await asyncio.to_thread(screenshot, browser.driver, f"{folder}/users.png"))
    await _search(browser, "where does Alice live")
    shots.append(await asyncio.to_thread(screenshot, browser.driver, f"{folder}/search.png"))
    await browser.open(_at("/memory", agent="support", user="alice", id=seeded.porto))
    await browser.heading("User alice")
    await browser._run(lambda: browser.driver.execute_script("window.scrollTo(0, 420)"))
    shots.append(await asyncio.to_thread(screenshot, browser.driver, f"{folder}/memory.png"))
    await browser.open(_at("/actions", agent="support", user="alice"))
    await browser.heading("User alice")
    shots.append(await asyncio.to_thread(screenshot, browser.driver, f"{folder}/actions.png"))
    for path in shots:
        png = path.read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert struct.unpack(">II", png[16:24]) == WINDOW  # IHDR: width, height
