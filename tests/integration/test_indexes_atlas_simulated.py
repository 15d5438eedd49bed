"""The Atlas branch of the index lifecycle, against a simulated search-index API.

Atlas cannot run here. Regular indexes, collections and the embedder record go to the real
embedded server; only the search-index commands (``listSearchIndexes``, ``createSearchIndexes``,
``updateSearchIndex``, ``dropSearchIndex``) are simulated, with the behaviour MongoDB documents:
a new index is BUILDING and not queryable for a while, then READY; an updated index stays
queryable on its old definition while the new one builds; the stored definition gains server
defaults; a build can fail. ``tests/atlas`` runs the same paths against the real thing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_memory.errors import StorageError
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder


@dataclass
class SearchIndexServer:
    """Search indexes per collection, each build serving after ``build_polls`` listings.

    Listings have the documented shape: a new index is BUILDING and not queryable; an updated
    one is BUILDING *and* queryable, lists the new ``latestDefinition`` while
    ``statusDetail[].mainIndex`` still serves the old definition version and the new one is a
    ``stagedIndex`` (the ``$listSearchIndexes`` sample output); a failed build's message is in
    ``mainIndex``/``stagedIndex``, where the Atlas Administration API puts it.
    """

    build_polls: int = 2
    fail: set[str] = field(default_factory=set)
    indexes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    commands: list[tuple[str, str, str]] = field(default_factory=list)
    listings: int = 0

    def _with_defaults(self, definition: dict[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(definition)
        for entry in stored.get("fields", []):
            if entry.get("type") == "vector":
                entry.setdefault("quantization", "none")  # a default the server adds
        stored.get("mappings", {}).setdefault("analyzer", "lucene.standard")
        return stored

    def create(self, collection: str, model: Any) -> None:
        document = model.document
        self.commands.append(("create", collection, document["name"]))
        self.indexes.setdefault(collection, {})[document["name"]] = {
            "name": document["name"],
            "type": document.get("type", "search"),
            "versions": [self._with_defaults(document["definition"])],
            "serving": None,  # the definition version queries use; none until built
            "polls_left": self.build_polls,
        }

    def update(self, collection: str, name: str, definition: dict[str, Any]) -> None:
        self.commands.append(("update", collection, name))
        index = self.indexes[collection][name]
        index["versions"].append(self._with_defaults(definition))
        index["polls_left"] = self.build_polls

    def serves_latest(self, collection: str, name: str) -> bool:
        index = self.indexes[collection][name]
        return index["serving"] == len(index["versions"]) - 1

    @staticmethod
    def _detail(version: int, status: str, queryable: bool) -> dict[str, Any]:
        return {"status": status, "queryable": queryable, "definitionVersion": {"version": version}}

    def listing(self, collection: str) -> list[dict[str, Any]]:
        self.listings += 1
        result = []
        for index in self.indexes.get(collection, {}).values():
            latest = len(index["versions"]) - 1
            host: dict[str, Any] = {"hostname": "shard-00-01"}
            if index["name"] in self.fail:
                failed = self._detail(latest, "FAILED", False)
                failed["message"] = "simulated build failure"
                if index["serving"] is None:
                    host["mainIndex"] = failed
                else:
                    host["mainIndex"] = self._detail(index["serving"], "READY", True)
                    host["stagedIndex"] = failed
                status, queryable = "FAILED", index["serving"] is not None
            else:
                if index["polls_left"] > 0:
                    index["polls_left"] -= 1
                else:
                    index["serving"] = latest
                if index["serving"] is None:  # a first build
                    status, queryable = "BUILDING", False
                    host["mainIndex"] = self._detail(latest, "BUILDING", False)
                elif index["serving"] != latest:  # a rebuild: the old definition serves
                    status, queryable = "BUILDING", True
                    host["mainIndex"] = self._detail(index["serving"], "READY", True)
                    host["stagedIndex"] = self._detail(latest, "PENDING", False)
                else:
                    status, queryable = "READY", True
                    host["mainIndex"] = self._detail(latest, "READY", True)
            host["status"], host["queryable"] = status, queryable
            result.append(
                {
                    "name": index["name"],
                    "type": index["type"],
                    "status": status,
                    "queryable": queryable,
                    "latestDefinitionVersion": {"version": latest},
                    "latestDefinition": copy.deepcopy(index["versions"][latest]),
                    "statusDetail": [host],
                }
            )
        return result


class _Cursor:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self._items = items

    async def to_list(self, length: int | None = None) -> list[dict[str, Any]]:
        return self._items


class _Collection:
    def __init__(self, real: Any, server: SearchIndexServer) -> None:
        self._real, self._server = real, server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    async def list_search_indexes(self) -> _Cursor:
        return _Cursor(self._server.listing(self._real.name))

    async def create_search_indexes(self, models: list[Any]) -> list[str]:
        for model in models:
            self._server.create(self._real.name, model)
        return [model.document["name"] for model in models]

    async def update_search_index(self, name: str, definition: dict[str, Any]) -> None:
        self._server.update(self._real.name, name, definition)

    async def drop_search_index(self, name: str) -> None:
        self._server.commands.append(("drop", self._real.name, name))
        del self._server.indexes[self._real.name][name]


class _Database:
    def __init__(self, real: Any, server: SearchIndexServer) -> None:
        self._real, self._server = real, server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __getitem__(self, name: str) -> _Collection:
        return _Collection(self._real[name], self._server)


@pytest.fixture
def atlas(connection):
    server = SearchIndexServer()
    simulated = Connection(
        db=_Database(connection.db, server),
        settings=connection.settings,
        capabilities=connection.capabilities,
        tier="atlas",
    )
    return simulated, server


async def test_setup_creates_search_indexes_and_waits_until_queryable(atlas, embedder):
    connection, server = atlas
    seen = []
    states = await IndexManager(connection, embedder.signature).setup(
        timeout=10, poll_interval=0.01, on_progress=seen.append
    )
    created = {(s.collection, s.name) for s in states if s.state == "created"}
    assert ("memories", "memories_vector") in created
    assert ("action_logs", "action_logs_text") in created
    assert ("memories", "content_text") not in created  # no $text index on any tier
    assert any(s.state == "building" for s in seen)  # progress was reported while waiting
    vector = server.indexes["memories"]["memories_vector"]["versions"][-1]
    assert vector["fields"][0]["numDimensions"] == embedder.dimensions

    again = await IndexManager(connection, embedder.signature).setup(timeout=10, poll_interval=0.01)
    assert not [s for s in again if s.state == "created"]
    assert await IndexManager(connection, embedder.signature).validate() == []


async def test_changed_dimensions_are_drift_and_update_fixes_them(atlas, embedder):
    connection, server = atlas
    await IndexManager(connection, embedder.signature).setup(timeout=10, poll_interval=0.01)
    # Pretend the data were gone and a 128-dimension embedder were configured.
    await connection.collection("meta").delete_many({})
    other = FakeEmbedder(dimensions=128)
    manager = IndexManager(connection, other.signature)
    drift = [s for s in await manager.validate() if s.state == "drift"]
    assert {s.name for s in drift} == {"memories_vector", "knowledge_vector", "action_logs_vector"}
    assert "numDimensions is 256, expected 128" in drift[0].detail
    assert "indexes setup --update" in drift[0].detail

    without_update = await manager.setup(timeout=10, poll_interval=0.01)
    assert {s.name for s in without_update if s.state == "drift"} == {s.name for s in drift}
    assert not [c for c in server.commands if c[0] == "update"]

    listings = server.listings
    seen: list[Any] = []
    updated = await manager.setup(
        update=True, timeout=10, poll_interval=0.01, on_progress=seen.append
    )
    assert {s.name for s in updated if s.state == "updated"} == {s.name for s in drift}
    # Right after the update each index lists the new definition and is queryable, but the
    # old definition still serves: setup waits until the new one does.
    building = {s.name: s.detail for s in seen if s.state == "building"}
    assert building.keys() == {s.name for s in drift}
    assert set(building.values()) == {"serving definition v0 while v1 builds"}
    for state in drift:
        assert server.serves_latest(state.collection, state.name)
    # Three collections listed once to find the drift, then once per poll while building.
    assert server.listings - listings >= 3 + 3 * server.build_polls
    assert await manager.validate() == []


async def test_a_failed_build_is_an_error_naming_the_index(atlas, embedder):
    connection, server = atlas
    server.fail.add("knowledge_text")
    with pytest.raises(
        StorageError, match="knowledge_text failed to build: simulated build failure"
    ):
        await IndexManager(connection, embedder.signature).setup(timeout=10, poll_interval=0.01)


async def test_waiting_is_bounded(atlas, embedder):
    connection, server = atlas
    server.build_polls = 10_000
    with pytest.raises(StorageError, match=r"not queryable after 0 s.*indexes status"):
        await IndexManager(connection, embedder.signature).setup(timeout=0.2, poll_interval=0.05)
    # no wait: returns at once with the indexes still building
    states = await IndexManager(connection, embedder.signature).setup(wait=False)
    assert any(s.state == "building" for s in states)


async def test_drop_removes_search_indexes_too(atlas, embedder):
    connection, server = atlas
    manager = IndexManager(connection, embedder.signature)
    await manager.setup(timeout=10, poll_interval=0.01)
    dropped = await manager.drop()
    assert {s.name for s in dropped if s.kind in ("vectorSearch", "search")} == {
        "memories_vector",
        "memories_text",
        "knowledge_vector",
        "knowledge_text",
        "action_logs_vector",
        "action_logs_text",
    }
    assert all(not indexes for indexes in server.indexes.values())
