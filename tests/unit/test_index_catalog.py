"""The index catalog: read once per process, and the source of which collections hold users."""

from __future__ import annotations

import json

from agent_memory.mongo.catalog import IndexCatalog, definitions_dir, user_collections
from agent_memory.ops.forget import USER_COLLECTIONS


def _write(directory, name, first_keys):
    (directory / f"{name}.json").write_text(
        json.dumps(
            {
                "collection": name,
                "indexes": [
                    {"name": f"{name}_{i}", "key": dict.fromkeys(keys, 1)}
                    for i, keys in enumerate(first_keys)
                ],
            }
        )
    )


def test_a_collection_indexed_by_tenant_holds_user_data(tmp_path):
    _write(tmp_path, "notes", [["agent_id", "day"], ["agent_id", "user_id", "created_at"]])
    _write(tmp_path, "runs", [["agent_id", "started_at"]])
    _write(tmp_path, "odd", [["user_id", "agent_id"]])
    catalog = IndexCatalog.load(dimensions=4, directory=tmp_path)
    assert catalog.user_collections() == ("notes",)


def test_erasing_a_user_covers_every_collection_the_catalog_indexes_by_tenant():
    shipped = {
        path.stem
        for path in definitions_dir().glob("*.json")
        if any(
            list(index["key"])[:2] == ["agent_id", "user_id"]
            for index in json.loads(path.read_text())["indexes"]
        )
    }
    assert set(USER_COLLECTIONS) == shipped == set(user_collections())
    # The stores' collections that hold users, and none that does not.
    assert {"memories", "messages", "tasks", "lg_checkpoint_writes"} <= shipped
    assert not {"decay_runs", "action_aggregates"} & shipped


def test_the_definitions_are_parsed_anew_for_each_embedder():
    small = IndexCatalog.load(dimensions=8, similarity="dotProduct")
    large = IndexCatalog.load(dimensions=1024)
    vector = next(s for s in small["memories"].search_indexes if s.type == "vectorSearch")
    other = next(s for s in large["memories"].search_indexes if s.type == "vectorSearch")
    field = next(f for f in vector.definition["fields"] if f["type"] == "vector")
    assert (field["numDimensions"], field["similarity"]) == (8, "dotProduct")
    field = next(f for f in other.definition["fields"] if f["type"] == "vector")
    assert (field["numDimensions"], field["similarity"]) == (1024, "cosine")
