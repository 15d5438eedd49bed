"""The memory console's web application on the embedded server: signing in with an agent's
key or the local token, what each sees, escaping, and requests from other sites. The pages
are driven here over ASGI; the browser tests of issue 20 come with its remaining pages."""

from __future__ import annotations

import html
import re

import httpx
import pytest

from agent_memory.console import create_console_app
from agent_memory.console.app import SESSION_COOKIE
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.memory.system import MemorySystem
from agent_memory.ops.forget import COLLECTION_NOUNS, held
from agent_memory.tenancy import Tenant

from .console_data import (
    ALICE,
    BOB,
    HOSTILE,
    KEYS,
    OTHER_KEY,
    SUPPORT_KEY,
    TOKEN,
    console_settings,
    seed,
)


@pytest.fixture
async def memories(connection, embedder):
    system = MemorySystem(connection, embedder)
    yield system
    await system.aclose()


@pytest.fixture
async def seeded(memories):
    return await seed(memories)


@pytest.fixture
async def with_keys(memories, seeded, settings):
    app = create_console_app(memories, settings=console_settings(settings, api_keys=KEYS))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
async def with_token(memories, seeded, settings):
    app = create_console_app(memories, settings=console_settings(settings), token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def sign_in(client: httpx.AsyncClient, secret: str) -> httpx.Response:
    return await client.post("/login", data={"secret": secret})


async def edit_form(client: httpx.AsyncClient, memory_id: str, **changes: str) -> dict[str, str]:
    """The memory page's edit form as a browser would send it: every field as shown (the
    textarea's lines as CRLF), then ``changes``."""
    page = await client.get(
        "/memory", params={"agent": "support", "user": "alice", "id": memory_id}
    )
    form_html = re.search(r'<form method="post" action="/memory/edit".*?</form>', page.text, re.S)
    assert form_html, "no edit form on the page"
    fields = {
        name: html.unescape(value)
        for name, value in re.findall(
            r'<input [^>]*name="(\w+)" value="([^"]*)"', form_html.group(0)
        )
    }
    textarea = re.search(
        r'<textarea name="content"[^>]*>(.*?)</textarea>', form_html.group(0), re.S
    )
    assert textarea, "no content field"
    # The browser's parser reads CR and CRLF as LF; a form sends each LF as CRLF.
    shown = html.unescape(textarea.group(1)).replace("\r\n", "\n").replace("\r", "\n")
    fields["content"] = shown.replace("\n", "\r\n")
    return {**fields, **changes}


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no form token on the page"
    return found.group(1)


async def test_pages_need_a_sign_in(with_keys):
    response = await with_keys.get("/")
    assert response.status_code == 303 and response.headers["location"] == "/login"
    response = await with_keys.get("/agent?agent=support")
    assert response.status_code == 303
    login = await with_keys.get("/login")
    assert login.status_code == 200 and "An agent&#39;s API key" in login.text


async def test_a_key_signs_in_to_its_own_agent_and_sees_nothing_of_another(with_keys):
    response = await sign_in(with_keys, SUPPORT_KEY)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert SESSION_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    home = await with_keys.get("/")
    assert "/agent?agent=support" in home.text and "other" not in home.text
    users = await with_keys.get("/agent?agent=support")
    assert users.status_code == 200
    assert '&amp;user=alice">alice</a></td>' in users.text
    other = await with_keys.get("/agent?agent=other")
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
    assert "/agent?agent=support" in home.text and "/agent?agent=other" in home.text
    assert '&amp;user=bob">bob</a>' in (await with_token.get("/agent?agent=other")).text


async def test_stored_text_stays_text(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    page = (await with_keys.get("/agent?agent=support")).text
    assert "<script>" not in page and 'href="https://evil.example"' not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page


async def test_every_page_forbids_scripts_framing_and_caching(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    for path in ("/login", "/", "/agent?agent=support", "/agent?agent=other"):
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
        "/logout", data={"csrf": token}, headers={"Origin": "http://127.0.0.1"}
    )
    assert out.status_code == 303
    assert (await with_keys.get("/")).status_code == 303


async def test_bad_input_is_one_line_and_a_4xx(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    response = await with_keys.get("/agent?agent=" + "a" * 300)
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


def test_without_keys_the_console_needs_a_token(connection, embedder, settings):
    with pytest.raises(InvalidInputError, match="token"):
        create_console_app(MemorySystem(connection, embedder), settings=console_settings(settings))


# --- the user's pages -----------------------------------------------------------------------


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="result">(.*?)</tr>', html, flags=re.S)


def _cell(row: str, name: str) -> str:
    found = re.search(rf'<td class="n {name}">(.*?)</td>', row, flags=re.S)
    assert found, f"no {name} cell"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


async def test_the_search_shows_every_sources_rank_and_the_parts_retrieve_computed(
    with_keys, memories, seeded, connection
):
    await sign_in(with_keys, SUPPORT_KEY)
    page = await with_keys.get(
        "/user", params={"agent": "support", "user": "alice", "q": "where does Alice live"}
    )
    assert page.status_code == 200
    rows = _rows(page.text)
    expected = await memories.long_term.retrieve(
        ALICE, "where does Alice live", k=10, learn=False, record_access=False
    )
    assert len(rows) == len(expected) >= 3
    for row, hit in zip(rows, expected, strict=True):
        assert f"id={hit.memory.id}" in row  # the same order
        for key in ("vector", "text"):
            shown = _cell(row, f"source-{key}")
            if key in hit.sources:
                assert shown.startswith(f"#{hit.sources[key].rank} ")
            else:
                assert shown == "-"
        assert _cell(row, "part-relevance") == f"{hit.breakdown.relevance:.3f}"
        assert _cell(row, "part-recency") == f"{hit.breakdown.recency:.3f}"
        assert _cell(row, "part-importance") == f"{hit.breakdown.importance:.3f}"
        assert _cell(row, "part-feedback") == f"{hit.breakdown.utility:+.3f}"
        assert abs(float(_cell(row, "part-total")) - hit.score) < 0.002
    assert "source-rerank" not in page.text  # no reranker configured: no column
    # The rated memory's feedback part is the utility of its one 5/5 rating.
    porto = next(r for r in rows if f"id={seeded.porto}" in r)
    assert _cell(porto, "part-feedback") == f"{1.0 / 3.0:+.3f}"
    # Looking is not using: no access was recorded.
    await memories.long_term.drain()
    doc = await connection.collection("memories").find_one({"_id": seeded.porto})
    assert doc["access_count"] == 0
    # Superseded memories only when asked for.
    assert f"id={seeded.berlin}" not in page.text
    with_history = await with_keys.get(
        "/user",
        params={"agent": "support", "user": "alice", "q": "Berlin", "history": "true"},
    )
    assert f"id={seeded.berlin}" in with_history.text and "(superseded)" in with_history.text


async def test_a_reranker_is_a_source_of_its_own(memories, seeded, settings):
    from agent_memory.providers.rerankers import FakeReranker

    reranked = MemorySystem(
        memories.connection, memories.long_term.embedder, reranker=FakeReranker()
    )
    app = create_console_app(reranked, settings=console_settings(settings, api_keys=KEYS))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        await sign_in(client, SUPPORT_KEY)
        page = await client.get(
            "/user", params={"agent": "support", "user": "alice", "q": "window seats"}
        )
    ranks = sorted(int(_cell(row, "source-rerank").split()[0][1:]) for row in _rows(page.text))
    assert ranks == list(range(1, len(ranks) + 1)) and ranks
    await reranked.aclose()


async def test_a_memory_shows_its_history_feedback_and_chart(with_keys, seeded):
    await sign_in(with_keys, SUPPORT_KEY)
    berlin = await with_keys.get(
        "/memory", params={"agent": "support", "user": "alice", "id": seeded.berlin}
    )
    assert berlin.status_code == 200
    assert "Superseded by" in berlin.text and "Alice moved to Porto" in berlin.text
    porto = (
        await with_keys.get(
            "/memory", params={"agent": "support", "user": "alice", "id": seeded.porto}
        )
    ).text
    assert "Supersedes" in porto and f"id={seeded.berlin}" in porto
    assert porto.count('<tr class="this">') == 1  # the key's versions, this one marked
    # The chart: importance from its trail, feedback after the one rating (5/5: +1 over 1 + 2).
    assert '<polyline class="importance"' in porto and '<polyline class="feedback"' in porto
    assert porto.count('class="feedback-point"') == 2
    assert "1 rating: utility +0.33" in porto
    # The turn whose prompt held it, with its rating.
    assert "Where do I live now?" in porto and '<td class="n">5</td>' in porto


async def test_an_edit_asks_first_then_changes_the_memory(with_keys, memories, seeded):
    await sign_in(with_keys, SUPPORT_KEY)
    form = await edit_form(
        with_keys,
        seeded.window,
        content="Alice prefers aisle seats on long flights",
        importance="0.8",
        tags="travel, seats",
    )
    asked = await with_keys.post("/memory/edit", data=form)
    assert asked.status_code == 200 and "Edit this memory?" in asked.text
    assert (await memories.long_term.get(ALICE, seeded.window)).content.startswith(
        "Alice prefers window"
    )
    done = await with_keys.post("/memory/edit", data={**form, "confirm": "yes"})
    assert done.status_code == 303
    edited = await memories.long_term.get(ALICE, seeded.window)
    assert edited.content == "Alice prefers aisle seats on long flights"
    assert edited.importance == 0.8 and edited.tags == ("travel", "seats")
    found = await memories.long_term.retrieve(ALICE, "aisle seats", k=1, record_access=False)
    assert found[0].memory.id == seeded.window
    # Bad input: one line, a 4xx, nothing changed.
    form = await edit_form(with_keys, seeded.window)
    bad = await with_keys.post("/memory/edit", data={**form, "importance": "2", "confirm": "yes"})
    assert bad.status_code == 422 and "importance" in bad.text
    blank = await with_keys.post("/memory/edit", data={**form, "content": " ", "confirm": "yes"})
    assert blank.status_code == 400 and "content" in blank.text
    assert (await memories.long_term.get(ALICE, seeded.window)).importance == 0.8


async def test_forgetting_a_memory_asks_first(with_keys, memories, seeded):
    await sign_in(with_keys, SUPPORT_KEY)
    token = csrf_of((await with_keys.get("/")).text)
    form = {"csrf": token, "agent": "support", "user": "alice", "id": seeded.window}
    asked = await with_keys.post("/memory/forget", data=form)
    assert asked.status_code == 200 and "Forget this memory?" in asked.text
    assert await memories.long_term.get(ALICE, seeded.window)
    done = await with_keys.post("/memory/forget", data={**form, "confirm": "yes"})
    assert done.status_code == 200 and "Memory forgotten" in done.text
    with pytest.raises(NotFoundError):
        await memories.long_term.get(ALICE, seeded.window)
    # Without the form's token nothing is forgotten.
    stale = await with_keys.post(
        "/memory/forget", data={**form, "id": seeded.porto, "csrf": "stale", "confirm": "yes"}
    )
    assert stale.status_code == 403
    assert await memories.long_term.get(ALICE, seeded.porto)


async def test_forgetting_a_user_shows_the_commands_counts_then_erases(with_keys, memories, seeded):
    await sign_in(with_keys, SUPPORT_KEY)
    token = csrf_of((await with_keys.get("/")).text)
    form = {"csrf": token, "agent": "support", "user": "alice"}
    expected = await held(memories, "alice", "support")
    asked = await with_keys.post("/user/forget", data=form)
    assert asked.status_code == 200
    shown = dict(re.findall(r"<tr><td>([^<]+)</td><td class=\"n\">(\d+)</td></tr>", asked.text))
    assert shown == {
        COLLECTION_NOUNS[name][1]: str(count) for name, count in expected.counts.items() if count
    }
    assert f'<th class="n">{expected.total}</th>' in asked.text and expected.total >= 8
    assert (await held(memories, "alice", "support")).total == expected.total  # nothing yet
    done = await with_keys.post("/user/forget", data={**form, "confirm": "yes"})
    assert done.status_code == 200 and "User alice erased" in done.text
    assert (await held(memories, "alice", "support")).total == 0
    assert (await held(memories, "bob", "other")).total > 0  # another agent's user stays
    users = await with_keys.get("/agent?agent=support")
    assert "user=alice" not in users.text


async def test_sessions_tasks_and_actions(with_keys, seeded, connection):
    # The summary a refresh wrote (its chat model is not what this test is about).
    await connection.collection("sessions").update_one(
        {"agent_id": "support", "user_id": "alice", "session_id": "s-1"},
        {"$set": {"summary": "Alice asked where she lives; <b>Porto</b>."}},
    )
    await sign_in(with_keys, SUPPORT_KEY)
    where = {"agent": "support", "user": "alice"}
    sessions = (await with_keys.get("/sessions", params=where)).text
    assert "id=s-1" in sessions and "Alice asked where she lives" in sessions
    session = (await with_keys.get("/session", params={**where, "id": "s-1"})).text
    assert "Where do I live now?" in session and "&lt;script&gt;" in session
    assert "Alice asked where she lives; &lt;b&gt;Porto&lt;/b&gt;." in session
    assert "<script>" not in session
    tasks = (await with_keys.get("/tasks", params=where)).text
    assert "Book a flight to Porto" in tasks and "1 / 3" in tasks
    task = (await with_keys.get("/task", params={**where, "id": seeded.task_id})).text
    assert "3 flights" in task and task.count('<td class="n">0</td>') >= 1
    assert '<table class="checkpoints">' in task
    actions = (await with_keys.get("/actions", params=where)).text
    assert f"id={seeded.porto}" in actions and '<td class="n">5</td>' in actions
    assert "query_response" in actions and "100%" in actions  # its success rate


async def test_a_key_sees_nothing_of_another_agents_users_or_memories(with_keys, memories, seeded):
    await sign_in(with_keys, SUPPORT_KEY)
    token = csrf_of((await with_keys.get("/")).text)
    # Another agent's user and memory, asked for by name: nothing shown.
    for path, params in (
        ("/user", {"agent": "other", "user": "bob"}),
        ("/memory", {"agent": "other", "user": "bob", "id": seeded.bob_secret}),
        ("/sessions", {"agent": "other", "user": "bob"}),
        ("/actions", {"agent": "other", "user": "bob"}),
    ):
        response = await with_keys.get(path, params=params)
        assert response.status_code == 404 and "vault" not in response.text
    # Its memory id under this agent's user: not found either.
    response = await with_keys.get(
        "/memory", params={"agent": "support", "user": "alice", "id": seeded.bob_secret}
    )
    assert response.status_code == 404 and "vault" not in response.text
    # And nothing of it can be changed.
    for path, form in (
        ("/memory/forget", {"agent": "other", "user": "bob", "id": seeded.bob_secret}),
        ("/memory/forget", {"agent": "support", "user": "bob", "id": seeded.bob_secret}),
        ("/user/forget", {"agent": "other", "user": "bob"}),
    ):
        response = await with_keys.post(path, data={**form, "csrf": token, "confirm": "yes"})
        assert response.status_code == 404
    assert (await memories.long_term.get(BOB, seeded.bob_secret)).content.startswith("Bob's")


async def test_a_hostile_memory_stays_text_on_every_page(with_keys, seeded):
    await sign_in(with_keys, SUPPORT_KEY)
    where = {"agent": "support", "user": "alice"}
    pages = [
        await with_keys.get("/user", params=where),
        await with_keys.get("/user", params={**where, "q": "pasted into the chat"}),
        await with_keys.get("/memory", params={**where, "id": seeded.hostile}),
    ]
    for response in pages:
        assert response.status_code == 200
        assert "<script>" not in response.text
        assert 'href="https://evil.example"' not in response.text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in response.text


async def test_bad_query_values_are_one_line_and_a_4xx(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    where = {"agent": "support", "user": "alice"}
    for params, status in (
        ({**where, "q": "x", "k": "0"}, 422),
        ({**where, "q": "x", "k": "many"}, 422),
        ({**where, "kind": "bogus"}, 400),
        ({**where, "q": "x" * 3_000}, 422),
        ({"agent": "support"}, 422),
        ({**where, "user": "a\x00b"}, 400),
    ):
        response = await with_keys.get("/user", params=params)
        assert response.status_code == status, params
        assert response.text.count('role="alert"') == 1
    missing = await with_keys.get("/memory", params={**where, "id": "mem_nothing"})
    assert missing.status_code == 404 and "no memory" in missing.text


async def test_a_form_sent_back_unchanged_edits_nothing(with_keys, memories, seeded, connection):
    """The form shows importance to three decimals, tags joined by commas, and the browser
    sends a textarea's lines with CRLF: none of it is a change."""
    await connection.collection("memories").update_one(
        {"_id": seeded.window},
        {
            "$set": {
                "importance": 0.66500001,
                "content": "Alice prefers\r\nwindow seats\rin rows 1-9",
                "tags": ["seats, aisle or window", "travel"],
            }
        },
    )
    await memories.long_term.announce(ALICE)
    await sign_in(with_keys, SUPPORT_KEY)
    form = await edit_form(with_keys, seeded.window, confirm="yes")
    assert form["importance"] == "0.665" and form["tags"] == "seats, aisle or window, travel"
    response = await with_keys.post("/memory/edit", data=form)
    assert response.status_code == 303
    kept = await connection.collection("memories").find_one({"_id": seeded.window})
    assert kept["importance"] == 0.66500001 and "edited_at" not in kept
    assert kept["tags"] == ["seats, aisle or window", "travel"]


async def test_an_edit_of_a_memory_changed_since_it_was_shown_is_refused(
    with_keys, memories, seeded
):
    """Decay or a reinforcement between showing the form and sending it: the form's values
    would silently undo it."""
    await sign_in(with_keys, SUPPORT_KEY)
    form = await edit_form(with_keys, seeded.window, content="Alice likes aisles", confirm="yes")
    await memories.long_term.edit(ALICE, seeded.window, importance=0.95)  # meanwhile
    response = await with_keys.post("/memory/edit", data=form)
    assert response.status_code == 409 and "reload" in response.text
    kept = await memories.long_term.get(ALICE, seeded.window)
    assert kept.importance == 0.95 and kept.content.startswith("Alice prefers window")


async def test_changes_from_other_sites_or_without_the_token_are_refused(
    with_keys, memories, seeded
):
    await sign_in(with_keys, SUPPORT_KEY)
    edit = await edit_form(with_keys, seeded.window, content="Forged", confirm="yes")
    forget = {"csrf": edit["csrf"], "agent": "support", "user": "alice", "confirm": "yes"}
    for path, form in (("/memory/edit", edit), ("/user/forget", forget)):
        for headers, data in (
            ({}, {**form, "csrf": "stale"}),
            ({}, {k: v for k, v in form.items() if k != "csrf"}),
            ({"Origin": "https://evil.example"}, form),
            ({"Sec-Fetch-Site": "cross-site"}, form),
        ):
            response = await with_keys.post(path, data=data, headers=headers)
            assert response.status_code == 403, (path, headers)
    assert (await memories.long_term.get(ALICE, seeded.window)).content.startswith("Alice")
    assert (await held(memories, "alice", "support")).total > 0


async def test_the_chart_follows_decay_and_edits(with_keys, memories, seeded):
    from datetime import timedelta

    from agent_memory.stamps import utcnow

    # A decay run a month on (the memory unused since it was stored), then an edit.
    report = await memories.decay.run(agent_id="support", now=utcnow() + timedelta(days=31))
    assert report.decayed >= 1
    await memories.long_term.edit(ALICE, seeded.porto, importance=0.9)
    await sign_in(with_keys, SUPPORT_KEY)
    page = (
        await with_keys.get(
            "/memory", params={"agent": "support", "user": "alice", "id": seeded.porto}
        )
    ).text
    points = re.findall(
        r'<circle class="importance-point" cx="([\d.]+)"[^>]*><title>([^<]+)</title>', page
    )
    # In time order (the run was dated a month on, after the edit), left to right.
    assert [title for _, title in points] == [
        "stored 0.70",
        "edited 0.90",
        f"decayed {0.7 * 0.95:.2f}",
    ]
    xs = [float(x) for x, _ in points]
    assert xs == sorted(xs) and xs[0] < xs[-1]


async def test_the_chart_shows_a_five_percent_decay_plainly(with_keys, memories, seeded):
    """Issue 35 item 18: on a value axis from -1 to 1, decay's 5% moved the line by about two
    pixels. Each panel's axis now spans its own values, with round, labelled ticks."""
    from datetime import timedelta

    from agent_memory.stamps import utcnow

    await memories.decay.run(agent_id="support", now=utcnow() + timedelta(days=31))
    await sign_in(with_keys, SUPPORT_KEY)
    page = (
        await with_keys.get(
            "/memory", params={"agent": "support", "user": "alice", "id": seeded.porto}
        )
    ).text
    ys = {
        title: float(cy)
        for cy, title in re.findall(
            r'<circle class="importance-point" cx="[\d.]+" cy="([\d.]+)"[^>]*>'
            r"<title>([^<]+)</title>",
            page,
        )
    }
    assert set(ys) == {"stored 0.70", f"decayed {0.7 * 0.95:.2f}"}
    assert ys[f"decayed {0.7 * 0.95:.2f}"] - ys["stored 0.70"] >= 30  # pixels, downwards
    svg = page.split('<svg class="chart"', 1)[1].split("</svg>", 1)[0]
    importance = svg.split('class="panel-title"')[1]
    ticks = [float(t) for t in re.findall(r'<text class="tick"[^>]*>([-\d.]+)</text>', importance)]
    assert 3 <= len(ticks) <= 6 and min(ticks) <= 0.665 and max(ticks) >= 0.7
    assert max(ticks) - min(ticks) <= 0.2  # the data's range, not 0 to 1


async def test_unknown_pages_and_other_hosts_get_the_consoles_answer(with_keys, memories):
    await sign_in(with_keys, SUPPORT_KEY)
    for response in (
        await with_keys.get("/nothing-here"),
        await with_keys.put("/memory/forget"),
    ):
        assert response.status_code in (404, 405)
        assert response.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in response.headers["content-security-policy"]
    # A name that is not loopback (a rebinding site's) is refused before any page.
    rebound = await with_keys.get("/", headers={"Host": "evil.example"})
    assert rebound.status_code == 400


async def test_a_task_whose_context_holds_a_date_shows_it(with_keys, memories):
    from datetime import UTC, datetime

    task = await memories.working.create_task(
        ALICE, "s-1", "Call back", context={"when": datetime(2026, 12, 1, tzinfo=UTC)}
    )
    await sign_in(with_keys, SUPPORT_KEY)
    page = await with_keys.get("/task", params={"agent": "support", "user": "alice", "id": task.id})
    assert page.status_code == 200 and "2026-12-01" in page.text


async def test_the_feedback_line_ends_at_the_utility_ranking_uses(with_keys, memories, seeded):
    """Ratings whose logs are gone (retention) are the line's starting value, so its last
    point is the memory's own utility."""
    await memories.connection.collection("memories").update_one(
        {"_id": seeded.porto}, {"$inc": {"feedback.count": 3, "feedback.sum": -3.0}}
    )
    await sign_in(with_keys, SUPPORT_KEY)
    page = (
        await with_keys.get(
            "/memory", params={"agent": "support", "user": "alice", "id": seeded.porto}
        )
    ).text
    titles = re.findall(r'class="feedback-point"[^>]*><title>([^<]+)</title>', page)
    # 3 earlier ratings summing -3, then the logged 5/5 (+1): (-3 + 1) / (4 + 2).
    assert titles == ["3 earlier ratings: utility -0.60", "4 ratings: utility -0.33"]
    assert "utility -0.333" in page  # the memory's fields say the same


async def test_forgetting_a_user_erases_again_what_was_stored_meanwhile(
    with_keys, memories, seeded, monkeypatch
):
    """As agent-memory forget: a turn still running stores a memory right after the first
    erasure; the console looks again and erases it too."""
    from agent_memory.console import app as console_app

    erase = console_app.forget_user
    calls = []

    async def with_a_late_write(system, tenant):
        erased = await erase(system, tenant)
        calls.append(tenant)
        if len(calls) == 1:
            await system.long_term.store(tenant, "Stored by a turn that was still running")
        return erased

    monkeypatch.setattr(console_app, "forget_user", with_a_late_write)
    await sign_in(with_keys, SUPPORT_KEY)
    token = csrf_of((await with_keys.get("/")).text)
    before = await held(memories, "alice", "support")
    done = await with_keys.post(
        "/user/forget", data={"csrf": token, "agent": "support", "user": "alice", "confirm": "yes"}
    )
    assert done.status_code == 200 and len(calls) == 2
    assert (await held(memories, "alice", "support")).total == 0
    erased = dict(re.findall(r"<tr><td>([^<]+)</td><td class=\"n\">(\d+)</td></tr>", done.text))
    assert int(erased["memories"]) == before.counts["memories"] + 1
    assert 'role="alert"' not in done.text  # nothing came back after the second pass


async def test_a_huge_form_is_refused_before_it_is_read(with_keys):
    await sign_in(with_keys, SUPPORT_KEY)
    huge = await with_keys.post("/login", data={"secret": "x" * 2_000_000})
    assert huge.status_code == 413 and "larger than" in huge.text
    assert huge.headers["content-type"].startswith("text/html")

    async def chunks():  # no Content-Length: counted as it arrives
        for _ in range(100):
            yield b"secret=" + b"x" * 10_000

    streamed = await with_keys.post(
        "/login",
        content=chunks(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert streamed.status_code == 413


# --- sign-ins: bounded per key, throttled ---------------------------------------------------


class Clock:
    """The console's clock in a test: it moves only when told."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def clocked(memories, settings):
    """A console on a test clock, and a way to open browsers (clients with their own cookies)
    on it; key mode unless the test asks for the token."""
    clock = Clock()
    opened: list[httpx.AsyncClient] = []

    def console(*, with_keys: bool = True):
        changes = {"api_keys": KEYS} if with_keys else {}
        app = create_console_app(
            memories,
            settings=console_settings(settings, **changes),
            token=None if with_keys else TOKEN,
            clock=clock,
        )
        transport = httpx.ASGITransport(app=app)

        def browser() -> httpx.AsyncClient:
            client = httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")
            opened.append(client)
            return client

        return browser

    yield console, clock
    for client in opened:
        await client.aclose()


async def _signed_in(client: httpx.AsyncClient) -> bool:
    return (await client.get("/")).status_code == 200


async def test_a_flood_of_sign_ins_with_one_key_signs_nobody_else_out(clocked, monkeypatch):
    """Issue 35 item 11: 1,001 sign-ins with any valid key ended every other session (a
    thousand were kept, in all). Now each key keeps its own newest few."""
    from agent_memory.console import app as console_app
    from agent_memory.console.access import SESSIONS_PER_KEY, Rate

    # Unthrottled, to see the bound alone (throttled, 1,001 sign-ins take over 8 hours).
    monkeypatch.setattr(console_app, "SIGN_INS_PER_KEY", Rate(burst=2_000, every=1.0))
    console, _ = clocked
    browser = console()
    victim, flooder = browser(), browser()
    assert (await sign_in(victim, SUPPORT_KEY)).status_code == 303
    cookies = []
    for _ in range(1_001):
        response = await sign_in(flooder, OTHER_KEY)
        assert response.status_code == 303
        cookies.append(flooder.cookies[SESSION_COOKIE])
    assert await _signed_in(victim)
    # The flooding key's own oldest sessions went, its newest are kept.
    for cookie, kept in ((cookies[0], False), (cookies[-SESSIONS_PER_KEY], True)):
        flooder.cookies.set(SESSION_COOKIE, cookie)
        assert await _signed_in(flooder) is kept


async def test_repeated_sign_ins_with_one_key_are_throttled(clocked):
    from agent_memory.console.access import SIGN_INS_PER_KEY

    console, clock = clocked
    browser = console()
    client = browser()
    for _ in range(SIGN_INS_PER_KEY.burst):
        assert (await sign_in(client, OTHER_KEY)).status_code == 303
    throttled = await sign_in(browser(), OTHER_KEY)
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) == SIGN_INS_PER_KEY.every
    assert "too many sign-ins with this key: try again in 30 s" in throttled.text
    assert throttled.text.count('role="alert"') == 1
    assert SESSION_COOKIE not in throttled.headers.get("set-cookie", "")
    # Another key is not held up, and the throttled one may sign in once the wait is over.
    assert (await sign_in(browser(), SUPPORT_KEY)).status_code == 303
    clock.now += SIGN_INS_PER_KEY.every - 1
    assert (await sign_in(browser(), OTHER_KEY)).status_code == 429
    clock.now += 1
    assert (await sign_in(browser(), OTHER_KEY)).status_code == 303


@pytest.mark.parametrize("with_keys", [True, False], ids=["keys", "token"])
async def test_failed_sign_ins_are_throttled_and_a_right_secret_still_signs_in(clocked, with_keys):
    from agent_memory.console.access import FAILED_SIGN_INS

    console, clock = clocked
    browser = console(with_keys=with_keys)
    right = SUPPORT_KEY if with_keys else TOKEN
    for n in range(FAILED_SIGN_INS.burst):
        assert (await sign_in(browser(), f"guess-{n}-0123456789abcdefgh")).status_code == 401
    # Guessing faster gets a 429 that says when to try again...
    throttled = await sign_in(browser(), "another-guess-0123456789abcdef")
    assert throttled.status_code == 429
    assert throttled.headers["retry-after"] == f"{FAILED_SIGN_INS.every:.0f}"
    assert "too many failed sign-ins" in throttled.text and right not in throttled.text
    # ...but nobody without a key can lock the people who have one out: a right secret signs
    # in while wrong ones are throttled.
    client = browser()
    assert (await sign_in(client, right)).status_code == 303
    assert await _signed_in(client)
    assert (await sign_in(browser(), "yet-another-guess-0123456789ab")).status_code == 429
    clock.now += FAILED_SIGN_INS.every
    assert (await sign_in(browser(), "a-later-guess-0123456789abcdef")).status_code == 401


# --- what the pages show (issue 35 item 18) --------------------------------------------------


async def test_the_user_page_shows_the_profile_every_prompt_holds(with_keys, memories):
    await memories.profiles.patch(ALICE, {"occupation": HOSTILE})
    await sign_in(with_keys, SUPPORT_KEY)
    page = (await with_keys.get("/user", params={"agent": "support", "user": "alice"})).text
    prompt_text = await memories.profiles.render(ALICE)  # what the agent's prompt holds
    assert "- home: Porto" in prompt_text and "- preferences: seat: window" in prompt_text
    assert f'<pre class="text profile-text">{html.escape(prompt_text, quote=False)}</pre>' in (
        page.replace("&#34;", '"').replace("&#39;", "'")
    )
    assert "<script>" not in page and "User: version 2, updated <time" in page
    # A user without a profile: the panel says so.
    await memories.long_term.store(Tenant("support", "carol"), "Carol likes tea")
    carol = (await with_keys.get("/user", params={"agent": "support", "user": "carol"})).text
    assert "Empty: memory formation fills it" in carol


async def test_the_actions_page_shows_the_memories_text_with_links(with_keys, memories, seeded):
    gone = await memories.long_term.store(ALICE, "Alice's passport expires in May")
    await memories.episodic.log_action(
        ALICE,
        session_id="s-1",
        action_type="query_response",
        outcome="success",
        content="What did I paste?",
        memory_ids=[seeded.hostile, gone.id, seeded.berlin],
    )
    await memories.long_term.forget(ALICE, gone.id)
    await sign_in(with_keys, SUPPORT_KEY)
    page = (await with_keys.get("/actions", params={"agent": "support", "user": "alice"})).text
    used = re.findall(r'<a class="memory" href="([^"]+)" title="([^"]+)">(.*?)</a>', page)
    shown = {title: (html.unescape(link), text) for link, title, text in used}
    assert shown[seeded.porto] == (
        f"/memory?agent=support&user=alice&id={seeded.porto}",
        "Alice moved to Porto",
    )
    # Escaped and shortened, the link kept; a superseded one says so; a forgotten one is its id.
    hostile_link, hostile_text = shown[seeded.hostile]
    assert hostile_link.endswith(f"id={seeded.hostile}") and "<script>" not in hostile_text
    assert hostile_text.startswith("Alice pasted &lt;script&gt;") and hostile_text.endswith("...")
    assert len(html.unescape(hostile_text)) <= 80
    assert shown[seeded.berlin][1] == "Alice lives in Berlin"
    assert 'Alice lives in Berlin</a> <span class="status-superseded small">(superseded)' in page
    assert shown[gone.id][1] == f"<code>{gone.id}</code>"
    assert f'<code>{gone.id}</code></a> <span class="muted small">(forgotten)' in page
    assert "passport" not in page
    assert "<code>mem_" not in page.replace(f"<code>{gone.id}</code>", "")


_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?")


async def test_dates_and_times_never_wrap(with_keys, seeded):
    """A date and its time in a narrow column wrapped onto two lines; every moment shown is a
    <time> element, which the style keeps on one line."""
    await sign_in(with_keys, SUPPORT_KEY)
    where = {"agent": "support", "user": "alice"}
    style = (await with_keys.get("/")).text
    assert "time { white-space: nowrap; }" in style
    seen = 0
    for path, extra in (
        ("/user", {}),
        ("/memory", {"id": seeded.porto}),
        ("/sessions", {}),
        ("/session", {"id": seeded.session_id}),
        ("/tasks", {}),
        ("/task", {"id": seeded.task_id}),
        ("/actions", {}),
    ):
        page = (await with_keys.get(path, params={**where, **extra})).text
        body = page.split("<main>", 1)[1]
        for moment in _MOMENT.finditer(body):
            before = body[: moment.start()]
            assert re.search(r'<time datetime="[^"]+">$', before), (path, moment.group(0))
            seen += 1
    assert seen >= 10


async def test_a_user_or_agent_that_does_not_exist_says_so(with_keys, with_token):
    await sign_in(with_keys, SUPPORT_KEY)
    for path in ("/user", "/sessions", "/tasks", "/actions"):
        missing = await with_keys.get(path, params={"agent": "support", "user": "nobody"})
        assert missing.status_code == 404, path
        assert missing.text.count('role="alert"') == 1 and ">no such user</p>" in missing.text
    # Another agent's page, user or memory looks exactly like one of an agent that does not
    # exist: a key cannot find out which agents there are.
    for path, params in (
        ("/agent", {}),
        ("/user", {"user": "bob"}),
        ("/sessions", {"user": "bob"}),
        ("/memory", {"user": "bob", "id": "mem_1"}),
    ):
        other = await with_keys.get(path, params={"agent": "other", **params})
        ghost = await with_keys.get(path, params={"agent": "ghost", **params})
        assert other.status_code == ghost.status_code == 404, path
        assert other.text == ghost.text and ">no such agent</p>" in other.text, path
    # With the local token every agent is visible, so one that holds nothing is said not to
    # exist, and so is its user.
    await sign_in(with_token, TOKEN)
    for path, params, line in (
        ("/agent", {"agent": "ghost"}, "no such agent"),
        ("/user", {"agent": "ghost", "user": "bob"}, "no such agent"),
        ("/user", {"agent": "other", "user": "nobody"}, "no such user"),
    ):
        response = await with_token.get(path, params=params)
        assert response.status_code == 404 and f">{line}</p>" in response.text, params
    assert (await with_token.get("/agent", params={"agent": "other"})).status_code == 200


async def test_text_that_is_not_unicode_in_forms_and_queries_is_never_a_500(
    with_keys, memories, seeded, caplog
):
    """Issue 35 item 10 for the console: a surrogate's UTF-8 bytes (what a hostile client
    sends for "\\ud800") in a query or a form field, urlencoded or multipart."""
    await sign_in(with_keys, SUPPORT_KEY)
    token = csrf_of((await with_keys.get("/")).text)
    caplog.set_level("WARNING")
    surrogate = "%ED%A0%80"
    for query, status in (
        (f"/user?agent=support&user={surrogate}", 404),
        (f"/user?agent=support&user=alice&q={surrogate}", 200),
        (f"/agent?agent={surrogate}", 404),
        (f"/memory?agent=support&user=alice&id={surrogate}", 404),
        (f"/actions?agent=support&user=alice&session={surrogate}", 200),
    ):
        assert (await with_keys.get(query)).status_code == status, query
    urlencoded = {"Content-Type": "application/x-www-form-urlencoded"}
    for body, headers in (
        (f"secret={surrogate}".encode(), urlencoded),
        (b"secret=\xed\xa0\x80", urlencoded),
        (
            b'--b\r\nContent-Disposition: form-data; name="secret"\r\n\r\n\xed\xa0\x80\r\n--b--\r\n',
            {"Content-Type": "multipart/form-data; boundary=b"},
        ),
    ):
        assert (await with_keys.post("/login", content=body, headers=headers)).status_code == 401
    form = await edit_form(with_keys, seeded.window)
    edited = await with_keys.post(
        "/memory/edit",
        content=(
            f"csrf={token}&agent=support&user=alice&id={seeded.window}&seen={form['seen']}"
            f"&content=x{surrogate}&importance=NaN&tags="
        ).encode(),
        headers=urlencoded,
    )
    assert edited.status_code == 422 and "importance" in edited.text
    assert caplog.records == []
    assert (await memories.long_term.get(ALICE, seeded.window)).content.startswith("Alice")
