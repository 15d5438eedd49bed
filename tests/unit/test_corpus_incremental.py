"""The plain tier's corpus follows writes in place, and its answers are those of a corpus
built afresh from the same documents; the fused ranking is the one a full sort gives."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agent_memory.mongo.search.corpus import Corpus, TokenCache, matches
from agent_memory.mongo.search.fusion import SHRINK, score_fusion, standardise
from agent_memory.mongo.search.keywords import Bm25Index, KeywordIndex, tokenize
from agent_memory.mongo.search.snapshots import Change
from agent_memory.mongo.search.types import ResolvedFilters, SearchTarget, SourceScore
from agent_memory.mongo.vectors import to_bson_vector

DIMS = 8
TARGET = SearchTarget(
    "memories",
    "vector_index",
    "text_index",
    text_path=("content", "context"),
    filter_paths=frozenset({"agent_id", "user_id", "status", "memory_type", "tags"}),
    range_paths=frozenset({"occurred_at"}),
    snapshot=True,
)
DAY0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = "paris berlin coffee tea dog cat hiking piano sushi train flight yoga chess".split()


def _sorted_fusion(scores, allowed, *, weights, depth):
    """The fusion as first written: every source's documents fully sorted (the reference)."""
    total = np.zeros(allowed.shape, dtype=np.float64)
    candidate = np.zeros(allowed.shape, dtype=bool)
    ranks = {}
    for name, values in scores.items():
        valid = allowed & np.isfinite(values)
        found = valid & (values > 0) if name == "text" else valid
        positions = np.flatnonzero(found)
        order = positions[np.lexsort((positions, -values[positions]))]
        rank_of = np.zeros(allowed.shape, dtype=np.int64)
        rank_of[order] = np.arange(1, order.size + 1)
        candidate[order[:depth]] = True
        ranks[name] = (rank_of, values)
        total += float(weights.get(name, 1.0)) * standardise(values, valid)
    total *= int(allowed.sum()) / (int(allowed.sum()) + SHRINK)
    positions = np.flatnonzero(candidate)
    positions = positions[np.lexsort((positions, -total[positions]))]
    return [
        (
            position,
            float(total[position]),
            {
                name: SourceScore(rank=int(rank_of[position]), score=float(values[position]))
                for name, (rank_of, values) in ranks.items()
                if rank_of[position] > 0
            },
        )
        for position in positions.tolist()
    ]


@pytest.mark.parametrize("seed", range(40))
def test_fusion_without_a_full_sort_equals_the_sorted_one(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 400))
    # Coarse values, so that ties are common, at the cut of the top `depth` too.
    vector = rng.integers(-5, 6, size).astype(np.float32) / 5
    vector[rng.random(size) < 0.1] = -np.inf  # documents without a vector
    text = np.where(rng.random(size) < 0.5, rng.integers(0, 4, size), 0).astype(np.float32)
    allowed = rng.random(size) < 0.8
    depth = int(rng.integers(1, 60))
    for scores in ({"vector": vector, "text": text}, {"vector": vector}, {"text": text}):
        weights = {"vector": 1.0, "text": 0.7}
        expected = _sorted_fusion(scores, allowed, weights=weights, depth=depth)
        assert score_fusion(scores, allowed, weights=weights, depth=depth) == expected
        limit = int(rng.integers(1, depth + 2))  # only the first ones, ranked the same
        assert (
            score_fusion(scores, allowed, weights=weights, depth=depth, limit=limit)
            == expected[:limit]
        )


def test_keyword_index_scores_as_an_index_built_over_the_documents_present():
    rng = random.Random(3)
    documents = [tokenize(" ".join(rng.choices(WORDS, k=rng.randint(0, 9)))) for _ in range(300)]
    index = KeywordIndex()
    for position, terms in enumerate(documents):
        index.add(position, terms)
    removed = set(rng.sample(range(300), 120))
    for position in removed:
        index.remove(documents[position])
    present = [position for position in range(300) if position not in removed]
    fresh = Bm25Index([documents[position] for position in present])
    for query in (["pari"], ["coffe", "dog", "dog"], ["piano", "unknown"], ["unknown"]):
        expected = fresh.scores(query)
        assert np.allclose(index.scores(query)[present], expected, rtol=1e-5, atol=1e-6)
        for term in query:
            assert index.idf(term) == pytest.approx(fresh.idf(term))


def _document(rng: random.Random, number: int) -> dict:
    vector = np.asarray([rng.uniform(-1, 1) for _ in range(DIMS)], dtype=np.float32)
    return {
        "_id": f"m{number}",
        "agent_id": "a",
        "user_id": "u",
        "status": rng.choice(["active", "active", "superseded", "field"]),
        "memory_type": rng.choice(["fact", "preference", "event"]),
        "tags": rng.sample(["x", "y", "z"], rng.randint(0, 2)),
        "content": " ".join(rng.choices(WORDS, k=rng.randint(1, 8))),
        "context": " ".join(rng.choices(WORDS, k=rng.randint(0, 5))),
        "embedding": to_bson_vector(vector) if rng.random() < 0.9 else None,
        **_said(rng),
    }


def _said(rng: random.Random) -> dict:
    """An event time: a date (with its zone, or without as the driver may return one), none,
    or a value that is no date."""
    day = DAY0 + timedelta(days=rng.randint(0, 60), hours=rng.randint(0, 23))
    return rng.choice(
        [
            {"occurred_at": day},
            {"occurred_at": day},
            {"occurred_at": day.replace(tzinfo=None)},
            {},
            {"occurred_at": "2026-01-05"},
        ]
    )


def _span(rng: random.Random) -> dict:
    start = DAY0 + timedelta(days=rng.randint(-5, 50))
    end = start + timedelta(days=rng.randint(1, 30))
    return rng.choice(
        [
            {},
            {"occurred_at": (start, end)},
            {"occurred_at": (start, None)},
            {"occurred_at": (None, end)},
        ]
    )


def _same(kept: Corpus, fresh: Corpus, rng: random.Random) -> None:
    """``kept`` answers every kind of question as ``fresh`` does."""
    assert sorted(kept.ids) == sorted(fresh.ids)
    by_id = {doc["_id"]: doc for doc in fresh.documents}
    for doc in kept.documents:
        assert doc == by_id[doc["_id"]]
    order_kept = {doc_id: i for i, doc_id in enumerate(d["_id"] for d in kept.documents)}
    for _ in range(15):
        resolved = ResolvedFilters(
            tenant={"agent_id": "a", "user_id": "u"},
            filters=rng.choice(
                [{}, {"memory_type": "fact"}, {"tags": ["x", "z"]}, {"status": "active"}]
            ),
            exclude=rng.choice([{}, {"status": ["superseded", "field"]}, {"tags": "y"}]),
            ranges=_span(rng),
        )
        kept_mask, fresh_mask = kept.mask(resolved), fresh.mask(resolved)
        kept_ids = {kept.document(int(p))["_id"] for p in np.flatnonzero(kept_mask)}
        fresh_ids = {fresh.document(int(p))["_id"] for p in np.flatnonzero(fresh_mask)}
        assert kept_ids == fresh_ids == {d["_id"] for d in fresh.documents if matches(d, resolved)}
        query = np.asarray([rng.uniform(-1, 1) for _ in range(DIMS)], dtype=np.float32)
        text = " ".join(rng.choices(WORDS, k=3))

        def scored(corpus: Corpus, mask: np.ndarray, query=query, text=text) -> dict:
            vectors = corpus.vector_scores(query)
            keywords, coverage = corpus.keyword_scores(text, mask)
            found = {}
            for position in np.flatnonzero(mask):
                doc_id = corpus.document(int(position))["_id"]
                found[doc_id] = (float(vectors[position]), float(keywords[position]))
            return found, coverage

        kept_scores, kept_coverage = scored(kept, kept_mask)
        fresh_scores, fresh_coverage = scored(fresh, fresh_mask)
        assert kept_scores.keys() == fresh_scores.keys()
        for doc_id, (vector, keyword) in fresh_scores.items():
            assert kept_scores[doc_id][0] == pytest.approx(vector, abs=1e-5)
            assert kept_scores[doc_id][1] == pytest.approx(keyword, rel=1e-4, abs=1e-5)
        if fresh_coverage is None:
            assert kept_coverage is None
        elif order_kept:
            assert kept_coverage is not None


def test_a_kept_corpus_changed_in_place_answers_as_one_built_afresh():
    rng = random.Random(11)
    tokens = TokenCache()
    stored = {f"m{i}": _document(rng, i) for i in range(200)}
    kept = Corpus.build(list(stored.values()), TARGET, dimensions=DIMS, tokens=tokens)
    number = 200
    for step in range(60):
        added = [_document(rng, number + i) for i in range(rng.randint(0, 6))]
        number += len(added)
        present = list(stored)
        removed = rng.sample(present, min(len(present), rng.randint(0, 5)))
        fields = {}
        for doc_id in rng.sample(present, min(len(present), rng.randint(0, 6))):
            if doc_id in removed:
                continue
            update = rng.choice(
                [
                    {"status": "superseded"},
                    {"tags": ["y"]},
                    {"memory_type": "event", "importance": 0.3},
                    {"content": "piano lessons in berlin"},  # new text: moves the document
                    _said(rng) or {"occurred_at": None},
                ]
            )
            fields[doc_id] = update
        kept.changed(Change(added=added, fields=fields, removed=removed))
        for doc_id in removed:
            del stored[doc_id]
        for doc_id, update in fields.items():
            stored[doc_id] = {**stored[doc_id], **update}
        for document in added:
            stored[document["_id"]] = document
        if step % 10 == 9:
            fresh = Corpus.build(list(stored.values()), TARGET, dimensions=DIMS, tokens=tokens)
            _same(kept, fresh, rng)
    fresh = Corpus.build(list(stored.values()), TARGET, dimensions=DIMS, tokens=tokens)
    _same(kept, fresh, rng)


def test_a_corpus_packs_itself_when_most_of_it_was_removed(monkeypatch):
    import agent_memory.mongo.search.corpus as corpus_module

    monkeypatch.setattr(corpus_module, "MIN_DEAD_TO_PACK", 10)
    rng = random.Random(5)
    documents = [_document(rng, i) for i in range(100)]
    kept = Corpus.build(documents, TARGET, dimensions=DIMS, tokens=TokenCache())
    kept.changed(Change(removed=[f"m{i}" for i in range(0, 60)]))
    assert len(kept) == 40
    assert kept.positions == 40  # packed: no dead positions left
    fresh = Corpus.build(documents[60:], TARGET, dimensions=DIMS, tokens=TokenCache())
    _same(kept, fresh, rng)
