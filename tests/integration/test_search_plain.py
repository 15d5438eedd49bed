"""The plain tier over the wire: hybrid ranking, explanations, tenancy, filters, bad input."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.indexes import IndexManager
from agent_memory.mongo.search import SearchQuery, make_searcher
from agent_memory.mongo.search.trust import KeywordTrust
from agent_memory.mongo.vectors import to_bson_vector

MEMORIES = {
    "alice": [
        ("fact", "active", "Alice lives in Berlin"),
        ("preference", "active", "Alice prefers green tea in the morning"),
        ("fact", "superseded", "Alice lived in Hamburg"),
        ("fact", "active", "Alice works as a nurse"),
    ],
    "bob": [
        ("fact", "active", "Bob lives in Berlin too"),
        ("preference", "active", "Bob prefers coffee"),
    ],
}


@pytest.fixture
async def memories(connection, embedder):
    await IndexManager(connection, embedder.signature).setup()
    for user, items in MEMORIES.items():
        vectors = await embedder.embed_documents([text for _, _, text in items])
        await connection.collection("memories").insert_many(
            [
                {
                    "agent_id": "agent",
                    "user_id": user,
                    "memory_type": memory_type,
                    "status": status,
                    "tags": ["demo"],
                    "content": text,
                    "embedding": to_bson_vector(vector),
                    "created_at": datetime.now(UTC),
                }
                for (memory_type, status, text), vector in zip(items, vectors, strict=True)
            ]
        )
    catalog = IndexCatalog.load(dimensions=embedder.dimensions)
    return make_searcher(connection, dimensions=embedder.dimensions), catalog.target("memories")


def alice(**kwargs):
    return {"agent_id": "agent", "user_id": "alice", **kwargs}


async def test_hybrid_search_ranks_and_explains(memories, embedder):
    searcher, target = memories
    query = "which city: lives in Berlin?"
    hits = await searcher.search(
        target,
        SearchQuery(tenant=alice(), text=query, vector=await embedder.embed_query(query), limit=3),
    )
    assert searcher.tier == "plain"
    assert hits[0].document["content"] == "Alice lives in Berlin"
    assert set(hits[0].sources) == {"vector", "text"}
    assert hits[0].sources["vector"].rank == 1 and hits[0].sources["text"].rank == 1
    assert "embedding" not in hits[0].document
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert "vector #1" in hits[0].explain()


async def test_search_never_crosses_tenants(memories, embedder):
    searcher, target = memories
    for user in ("alice", "bob"):
        hits = await searcher.search(
            target,
            SearchQuery(
                tenant={"agent_id": "agent", "user_id": user},
                text="Berlin coffee tea nurse",
                vector=await embedder.embed_query("Berlin"),
                limit=10,
            ),
        )
        assert hits and {h.document["user_id"] for h in hits} == {user}
    hits = await searcher.search(
        target,
        SearchQuery(
            tenant={"agent_id": "other-agent", "user_id": "alice"}, text="Berlin", limit=10
        ),
    )
    assert hits == []


async def test_filters_and_exclusions(memories, embedder):
    searcher, target = memories
    vector = await embedder.embed_query("where did Alice live")
    everything = await searcher.search(target, SearchQuery(tenant=alice(), vector=vector, limit=10))
    assert len(everything) == 4
    active = await searcher.search(
        target,
        SearchQuery(tenant=alice(), vector=vector, exclude={"status": "superseded"}, limit=10),
    )
    assert "Alice lived in Hamburg" not in {h.document["content"] for h in active}
    preferences = await searcher.search(
        target,
        SearchQuery(
            tenant=alice(), vector=vector, filters={"memory_type": ["preference"]}, limit=10
        ),
    )
    assert [h.document["memory_type"] for h in preferences] == ["preference"]


async def test_text_only_and_vector_only(memories, embedder):
    searcher, target = memories
    text_hits = await searcher.search(target, SearchQuery(tenant=alice(), text="nurse", limit=5))
    assert [h.document["content"] for h in text_hits] == ["Alice works as a nurse"]
    assert set(text_hits[0].sources) == {"text"}
    vector_hits = await searcher.search(
        target, SearchQuery(tenant=alice(), vector=await embedder.embed_query("green tea"), limit=1)
    )
    assert vector_hits[0].document["content"].startswith("Alice prefers green tea")


async def test_a_search_by_keywords_alone_does_not_read_the_vectors(memories, embedder, settings):
    """Targets not kept in memory are read at each search: by keywords alone, without the
    vectors (the largest part of each document). What the vector ranking reads is whole."""
    from dataclasses import replace

    from pymongo import monitoring

    from agent_memory.mongo.connection import connect

    finds: list[dict] = []

    class Finds(monitoring.CommandListener):
        def started(self, event):
            if event.command_name == "find":
                finds.append(dict(event.command))

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    _, target = memories
    target = replace(target, snapshot=False)
    async with await connect(settings, client_options={"event_listeners": [Finds()]}) as watched:
        searcher = make_searcher(watched, dimensions=embedder.dimensions)
        [hit] = await searcher.search(target, SearchQuery(tenant=alice(), text="nurse", limit=5))
        assert hit.document["content"] == "Alice works as a nurse"
        assert finds[-1]["projection"] == {"embedding": 0}
        vector = await embedder.embed_query("green tea")
        hits = await searcher.search(target, SearchQuery(tenant=alice(), text="tea", vector=vector))
        assert "projection" not in finds[-1] and "vector" in hits[0].sources


@pytest.mark.parametrize(
    "text",
    ['"Berlin"', "-Berlin", "Berlin -nurse", '"unterminated', "$where", "{'$ne': null}", "?!"],
)
async def test_text_syntax_in_user_input_is_neutralised(memories, text):
    searcher, target = memories
    hits = await searcher.search(target, SearchQuery(tenant=alice(), text=text, limit=10))
    assert all(h.document["user_id"] == "alice" for h in hits)
    if "Berlin" in text:  # a leading '-' must not turn the term into an exclusion
        assert "Alice lives in Berlin" in {h.document["content"] for h in hits}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"filters": {"user_id": "bob"}}, "cannot filter"),
        ({"filters": {"content": "x"}}, "cannot filter"),
        ({"filters": {"memory_type": {"$ne": None}}}, "values must be"),
        ({"exclude": {"status": float("nan")}}, "NaN"),
        ({"filters": {"tags": []}}, "empty list"),
    ],
)
async def test_hostile_filters_are_rejected(memories, kwargs, message):
    searcher, target = memories
    with pytest.raises(InvalidInputError, match=message):
        await searcher.search(target, SearchQuery(tenant=alice(), text="Berlin", **kwargs))


async def test_tenant_must_be_complete(memories):
    searcher, target = memories
    with pytest.raises(InvalidInputError, match="scoped by"):
        await searcher.search(target, SearchQuery(tenant={"agent_id": "agent"}, text="Berlin"))


async def test_keyword_ranking_needs_no_text_index_and_stems(connection, embedder):
    # The plain tier ranks keywords with BM25 in the framework: no $text index is involved,
    # and English inflections meet ("hiking" finds "hikes", "adopted" finds "adoption").
    catalog = IndexCatalog.load(dimensions=embedder.dimensions)
    await connection.collection("memories").insert_many(
        [
            {"agent_id": "agent", "user_id": "alice", "content": text}
            for text in ("Alice hikes every weekend", "The adoption agency called", "Lunch at noon")
        ]
    )
    searcher = make_searcher(connection, dimensions=embedder.dimensions)
    target = catalog.target("memories")
    for question, expected in (
        ("who goes hiking?", "Alice hikes every weekend"),
        ("has she adopted?", "The adoption agency called"),
    ):
        hits = await searcher.search(target, SearchQuery(tenant=alice(), text=question))
        assert [h.document["content"] for h in hits] == [expected]


async def test_query_vector_of_wrong_dimension_is_rejected(memories):
    searcher, target = memories
    with pytest.raises(ValueError, match="dimensions"):
        await searcher.search(
            target, SearchQuery(tenant=alice(), vector=np.ones(3, dtype=np.float32))
        )


async def test_logs_carry_counts_not_content(memories, embedder):
    import structlog

    searcher, target = memories
    secret_question = "what is the secret handshake of the night club"
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        await searcher.search(
            target,
            SearchQuery(
                tenant=alice(),
                text=secret_question,
                vector=await embedder.embed_query(secret_question),
            ),
        )
    events = [entry for entry in logs if entry["event"] == "search_completed"]
    assert len(events) == 1
    assert events[0]["tier"] == "plain" and events[0]["sources"] == ["vector", "text"]
    assert (events[0]["agent_id"], events[0]["user_id"]) == ("agent", "alice")
    assert structlog.contextvars.get_contextvars() == {}  # the tenant binding did not leak
    assert "secret handshake" not in repr(logs)


# --- the per-user keyword trust -------------------------------------------------------------

TRUST_MEMORIES = ["Works night shifts as a nurse", "Drinks green tea every morning", "Owns a cat"]


@pytest.fixture
async def trust_users(connection, embedder):
    """Two users of one agent with the same three memories, and the searcher over them."""
    await IndexManager(connection, embedder.signature).setup()
    vectors = await embedder.embed_documents(TRUST_MEMORIES)
    for user in ("carol", "dave"):
        await connection.collection("memories").insert_many(
            [
                {
                    "agent_id": "agent",
                    "user_id": user,
                    "memory_type": "fact",
                    "status": "active",
                    "content": text,
                    "embedding": to_bson_vector(vector),
                    "created_at": datetime.now(UTC),
                }
                for text, vector in zip(TRUST_MEMORIES, vectors, strict=True)
            ]
        )
    target = IndexCatalog.load(dimensions=embedder.dimensions).target("memories")
    return make_searcher(connection, dimensions=embedder.dimensions), target, vectors[0]


async def searcher_vector(text):
    """The fake embedder's unit vector for ``text`` (what the fixtures store)."""
    from agent_memory.providers.embedders.fake import FakeEmbedder

    vector = (await FakeEmbedder().embed_documents([text]))[0]
    return vector / np.linalg.norm(vector)


async def _order(searcher, target, user, text, vector, **kwargs):
    tenant = {"agent_id": "agent", "user_id": user}
    query = SearchQuery(tenant=tenant, text=text, vector=vector, limit=3, **kwargs)
    return [hit.document["content"] for hit in await searcher.search(target, query)]


#: Questions in other words than the memories: each shares one common word with one of them
#: (coverage 0.09 to 0.14), the kind of coincidental match that misleads BM25.
PARAPHRASES = (
    "which hospital ward keeps me busy every night",
    "what pet sleeps beside me each morning",
    "how do I stay awake through the night rota",
    "what do I sip right after waking in the morning",
    "which furry animal shares my flat with a cat flap",
    "what job pays for my rent and my night bus",
    "is my morning routine healthy enough",
    "what creature greets me at the door like a cat would",
)
WEIGHTS = {"vector": 0.4, "text": 0.6}
#: The trust read at its mean (no caution), its prior counted as one question: what these
#: tests check is how the searcher keeps and teaches each user's ledger.
TRUSTING = KeywordTrust(prior_weight=1.0, caution=0.0)


async def test_keyword_trust_follows_each_users_questions(trust_users):
    """A user whose questions say things in other words than their memories is ranked by the
    vector alone; a user whose first question repeats a memory's words keeps the keyword
    ranking."""
    searcher, target, nurse_vector = trust_users
    question = "green tea"  # the keywords point at the tea memory, the vector at the nurse one
    vector_only = await _order(
        searcher, target, "carol", question, nurse_vector, weights={"vector": 1.0, "text": 0.0}
    )
    fixed = await _order(
        searcher, target, "carol", question, nurse_vector, weights=WEIGHTS, coverage_power=1.0
    )
    assert vector_only[0] == TRUST_MEMORIES[0] and fixed[0] == TRUST_MEMORIES[1]

    learned = {"weights": WEIGHTS, "coverage_power": 1.0, "keyword_trust": TRUSTING}
    for paraphrase in PARAPHRASES:
        await _order(searcher, target, "carol", paraphrase, nurse_vector, **learned)
    for greeting in ("hi", "thanks!"):  # nothing matched: not counted either way
        await _order(searcher, target, "carol", greeting, nurse_vector, **learned)
    assert await _order(searcher, target, "carol", question, nurse_vector, **learned) == vector_only
    # The other user of the same searcher has asked nothing: the first question's own
    # coverage (every word matched) earns the keyword ranking its full weight.
    assert await _order(searcher, target, "dave", question, nurse_vector, **learned) == fixed


async def test_searches_without_keyword_trust_teach_nothing(trust_users):
    """Searches that are not a user's questions (consolidation's, for one) leave the ledger
    alone."""
    searcher, target, nurse_vector = trust_users
    for paraphrase in PARAPHRASES:
        await _order(searcher, target, "carol", paraphrase, nurse_vector, weights=WEIGHTS)
    fixed = await _order(
        searcher, target, "carol", "green tea", nurse_vector, weights=WEIGHTS, coverage_power=1.0
    )
    learned = await _order(
        searcher,
        target,
        "carol",
        "green tea",
        nurse_vector,
        weights=WEIGHTS,
        coverage_power=1.0,
        keyword_trust=TRUSTING,
    )
    assert learned == fixed


async def test_queries_that_do_not_learn_are_ranked_by_the_trust_but_leave_it_alone(trust_users):
    searcher, target, nurse_vector = trust_users
    learned = {"weights": WEIGHTS, "coverage_power": 1.0, "keyword_trust": TRUSTING}
    for paraphrase in PARAPHRASES:  # as statements: they teach nothing
        await _order(searcher, target, "carol", paraphrase, nurse_vector, learns=False, **learned)
    fixed = await _order(
        searcher, target, "carol", "green tea", nurse_vector, weights=WEIGHTS, coverage_power=1.0
    )
    assert await _order(searcher, target, "carol", "green tea", nurse_vector, **learned) == fixed
    with pytest.raises(InvalidInputError, match="learns must be a bool"):
        SearchQuery(tenant=alice(), text="x", learns="no")


async def test_by_default_keyword_trust_is_earned_by_questions_that_agree(trust_users):
    """The default trust is read below its mean while the questions are few: a new user's
    first question ranks by the vector even when it repeats a memory's words; after several
    questions that repeat their memories' words, the keyword ranking is earned."""
    searcher, target, nurse_vector = trust_users
    learned = {"weights": WEIGHTS, "coverage_power": 1.0, "keyword_trust": KeywordTrust()}
    question = "green tea"
    vector_only = await _order(
        searcher, target, "dave", question, nurse_vector, weights={"vector": 1.0, "text": 0.0}
    )
    fixed = await _order(
        searcher, target, "dave", question, nurse_vector, weights=WEIGHTS, coverage_power=1.0
    )
    assert vector_only != fixed
    assert await _order(searcher, target, "dave", question, nurse_vector, **learned) == (
        vector_only
    )
    for _ in range(12):  # questions in the memories' own words
        await _order(searcher, target, "dave", "owns a cat", nurse_vector, **learned)
        await _order(searcher, target, "dave", "night shifts nurse", nurse_vector, **learned)
    assert await _order(searcher, target, "dave", question, nurse_vector, **learned) == fixed


@pytest.mark.parametrize(("learn_above", "taught"), [(0.9, False), (-1.0, True)])
async def test_questions_no_memory_answers_do_not_teach(trust_users, learn_above, taught):
    """With ``learn_above``, a query counts only when some memory's cosine reaches it."""
    searcher, target, nurse_vector = trust_users
    learned = {"weights": WEIGHTS, "coverage_power": 1.0, "keyword_trust": TRUSTING}
    # A query vector near none of the memories (the fake embedder's vectors are sparse hashes).
    elsewhere = np.ones_like(nurse_vector) / np.sqrt(nurse_vector.size)
    memories = np.stack([await searcher_vector(text) for text in TRUST_MEMORIES])
    assert float((memories @ elsewhere).max()) < 0.9
    for paraphrase in PARAPHRASES:
        await _order(
            searcher, target, "carol", paraphrase, elsewhere, learn_above=learn_above, **learned
        )
    fixed = await _order(
        searcher, target, "carol", "green tea", nurse_vector, weights=WEIGHTS, coverage_power=1.0
    )
    vector_only = await _order(
        searcher, target, "carol", "green tea", nurse_vector, weights={"vector": 1.0, "text": 0.0}
    )
    after = await _order(searcher, target, "carol", "green tea", nurse_vector, **learned)
    assert after == (vector_only if taught else fixed)
    with pytest.raises(InvalidInputError, match="learn_above"):
        SearchQuery(tenant=alice(), text="x", learn_above=2.0)


async def test_queries_searched_together_answer_as_each_alone(connection, embedder):
    """search_many on a kept target: one token read and one product for every query's
    vector; each answer (ids, scores, ranks, relevance) is the one search gives alone."""
    from agent_memory.memory.long_term.memory import LongTermMemory
    from agent_memory.memory.long_term.records import NewMemory
    from agent_memory.tenancy import Tenant

    await IndexManager(connection, embedder.signature).setup()
    tenant = Tenant("agent", "together")
    store = LongTermMemory(connection, embedder)
    texts = [f"{topic} note {i}" for i, topic in enumerate(["tea", "stamps", "cello"] * 12)]
    await store.store_many(
        tenant,
        [NewMemory(t, memory_type="preference" if i % 3 else "fact") for i, t in enumerate(texts)],
        consolidate=False,
    )
    searcher, target = store._searcher, store.target
    words = ["tea", "stamps note", "cello", "note 7", "museum"]
    vectors = await embedder.embed_documents(words)
    queries = [
        SearchQuery(
            tenant=tenant.filter(),
            vector=vector,
            text=word if i % 2 else None,
            filters={"memory_type": "fact"} if i % 3 == 0 else {},
            limit=5,
        )
        for i, (word, vector) in enumerate(zip(words, vectors, strict=True))
    ]
    together = await searcher.search_many(target, queries)
    alone = [await searcher.search(target, query) for query in queries]
    # The same hits in the same order with the same ranks; scores to within float32
    # rounding (one product for all queries sums in another order than one per query).
    for hits, expected in zip(together, alone, strict=True):
        assert [(h.id, {n: s.rank for n, s in h.sources.items()}) for h in hits] == [
            (h.id, {n: s.rank for n, s in h.sources.items()}) for h in expected
        ]
        for hit, other in zip(hits, expected, strict=True):
            assert hit.score == pytest.approx(other.score, abs=1e-5)
            assert hit.relevance == pytest.approx(other.relevance, abs=1e-5)
            for name, source in hit.sources.items():
                assert source.score == pytest.approx(other.sources[name].score, abs=1e-5)
    assert all(len(hits) == 5 for hits in together)
    await store.aclose()
