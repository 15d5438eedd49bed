"""A wire-level stand-in for Atlas Search in front of the embedded server, for tests.

Atlas cannot run here, and the embedded engine has no search of its own (it refuses
``$listSearchIndexes`` and ``$rankFusion``, and answers ``$vectorSearch`` on a missing index with
an error where Atlas returns nothing). :class:`AtlasDouble` is a :class:`FaultProxy` that answers
the search commands and stages itself, the way MongoDB documents them, and forwards everything
else to the embedded server untouched. The framework connects to it with an ordinary URI, so what
is tested is what the library sends over the wire and how it reads the replies: nothing inside
the library is replaced.

What it answers (never forwarded):

- ``createSearchIndexes``, ``updateSearchIndex``, ``dropSearchIndex``: a registry of search indexes
  per namespace (name, type, every definition version). A new index is PENDING, then BUILDING,
  then READY; an updated index keeps serving its old definition while the new one is staged, as
  in the documented ``$listSearchIndexes`` sample (``status: BUILDING``, ``queryable: true``,
  ``latestDefinition`` the new one, ``statusDetail[].mainIndex`` the old one). Builds move only
  when the test says so (:meth:`AtlasDouble.advance`, :meth:`AtlasDouble.ready`), or one step
  per listing with ``auto_advance``. ``max_search_indexes`` is the free tier's limit (3 on M0).
- ``aggregate`` starting with ``$listSearchIndexes``: the documented output shape.
- ``aggregate`` starting with ``$vectorSearch``: exact nearest neighbours over a *view* of the
  collection (mongot's copy), which is refreshed only by :meth:`AtlasDouble.sync`, or when it is
  older than ``lag`` seconds of ``clock``: the indexing lag. The stage's ``filter`` is applied to
  the view; the score is the documented normalised one; the documents returned are the *current*
  ones, looked up by ``_id`` upstream (mongod's lookup), and the rest of the pipeline is run here
  over them (the stages the framework uses: ``$set``/``$addFields`` with ``$meta``, ``$unset``,
  ``$project``, ``$match``, ``$limit``, ``$skip``).
- ``aggregate`` starting with ``$search``: ``compound`` (must, should, filter, mustNot) of ``text``,
  ``equals``, ``in`` and ``exists``, over the same view. The ``text`` score is a simple term match,
  not Lucene's BM25: the number of distinct query words (lower-cased, split on non-word
  characters, like ``lucene.standard``) found in the fields searched; ``equals`` and ``in`` match
  only fields the index maps as ``token`` (strings), as Atlas Search does.
- ``aggregate`` starting with ``$rankFusion``: each input run as above (an input that does not
  start with a search stage is run upstream), fused by reciprocal rank fusion with k = 60 and the
  ``combination.weights``, ``scoreDetails`` in the server's shape; or refused like an 8.0 cluster
  (``rank_fusion="refuse"``, or ``"refuse_vector_inputs"`` for inputs holding ``$vectorSearch``).

A missing, misnamed or not yet queryable index gives an empty cursor, never an error (the
``$vectorSearch`` page: it "doesn't return results if you misspell the index name or if the
specified index doesn't already exist").

Scenario switches: :meth:`AtlasDouble.refuse` injects an error reply for a command or a stage,
always or ``times`` times (Atlas's 8000 AtlasError refusals, 31082 SearchNotEnabled, 6
HostUnreachable...). ``answered`` lists every reply the double wrote itself (command name, or the
first stage for aggregates), refusals included, so tests can count round trips; the forwarded
commands are counted in ``commands`` as in :class:`FaultProxy`.

Clients must not negotiate wire compression (pymongo does not unless the URI asks):
``OP_COMPRESSED`` messages are forwarded untouched, never answered. Answers written by the double
do not go through :meth:`FaultProxy.freeze`; a cut closes their connection as it does any other.
"""

from __future__ import annotations

import copy
import math
import re
import struct
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import count
from typing import Any, Literal

import bson
from bson import ObjectId
from bson.binary import Binary, BinaryVectorDtype
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.int64 import Int64
from pymongo import AsyncMongoClient

from agent_memory.config import Settings
from agent_memory.mongo.connection import Connection, connect
from agent_memory.mongo.embedded import ServerInfo
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.embedders.fake import FakeEmbedder
from tests.integration.fault_proxy import _HEADER, _OP_MSG, FaultProxy

__all__ = [
    "ATLAS_NOT_ALLOWED",
    "ManualClock",
    "RANK_FUSION_REFUSAL",
    "RRF_DESCRIPTION",
    "TOO_MANY_INDEXES",
    "AtlasDouble",
    "SearchIndex",
    "indexed_connection",
]


@asynccontextmanager
async def indexed_connection(settings: Settings) -> AsyncIterator[Connection]:
    """A connection with ``settings`` (the Atlas tier through a double, as the ``through``
    fixture makes them), the catalog's indexes set up and READY; its database is dropped
    and the connection closed on exit."""
    async with await connect(settings) as conn:
        try:
            await IndexManager(conn, FakeEmbedder().signature).setup(
                timeout=10, poll_interval=0.001
            )
            yield conn
        finally:
            await conn.client.drop_database(conn.db.name)


#: Decoding and encoding keep every value as it was (dates out of range, UUID subtypes).
CODEC: CodecOptions[dict[str, Any]] = CodecOptions(
    datetime_conversion=DatetimeConversion.DATETIME_AUTO
)

#: The free and shared tiers' refusal of a command they do not run (superduper-io#1901).
ATLAS_NOT_ALLOWED = (
    "{} is not allowed or the syntax is incorrect, see the Atlas documentation for more information"
)
#: What an 8.0 cluster answers to ``$rankFusion`` (FCV 8.0, last LTS: server jstests).
RANK_FUSION_REFUSAL: dict[str, Any] = {
    "ok": 0.0,
    "code": 40324,
    "codeName": "Location40324",
    "errmsg": "Unrecognized pipeline stage name: '$rankFusion'",
}
#: Creating more search indexes than the tier allows (M0: 3, Flex: 10).
TOO_MANY_INDEXES: dict[str, Any] = {
    "ok": 0.0,
    "code": 20,
    "codeName": "IllegalOperation",
    "errmsg": "The maximum number of FTS indexes has been reached for this instance size.",
}
#: ``scoreDetails.description`` of ``$rankFusion`` (the server's own string).
RRF_DESCRIPTION = (
    "value output by reciprocal rank fusion algorithm, computed as sum of (weight * (1 / "
    "(60 + rank))) across input pipelines from which this document is output, from:"
)
RRF_K = 60
MAX_CANDIDATES = 10_000
#: Stages a ``$rankFusion`` input may hold: they retrieve, limit or order, never modify.
_SELECTION_STAGES = frozenset(
    {"$match", "$search", "$vectorSearch", "$sample", "$geoNear", "$sort", "$skip", "$limit"}
)
_SEARCH_STAGES = ("$vectorSearch", "$search")
_HOSTNAME = "atlas-double-shard-00-01"
_MISSING: Any = object()
_WORD = re.compile(r"\w+")

Phase = Literal["PENDING", "BUILDING"]
RankFusionMode = Literal["accept", "refuse", "refuse_vector_inputs"]
ListingStyle = Literal["atlas", "on_prem", "empty"]
#: What self-managed mongot leaves out of a listing.
_STATUS_FIELDS = ("status", "queryable", "statusDetail")


class _ServerError(Exception):
    """An error reply: ``{ok: 0, code, codeName, errmsg}``."""

    def __init__(self, code: int, code_name: str, errmsg: str) -> None:
        super().__init__(errmsg)
        self.reply = {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": code_name}


def _not_modelled(what: str) -> _ServerError:
    """Something the double does not model: loud, so a test never passes by accident."""
    return _ServerError(1, "InternalError", f"atlas_double does not model {what}")


def _plan_error(cause: str) -> _ServerError:
    """A query error raised inside mongot, as mongod words it (the code is not documented)."""
    return _ServerError(
        8, "UnknownError", f"PlanExecutor error during aggregation :: caused by :: {cause}"
    )


# --- the search index registry -------------------------------------------------------------------


@dataclass
class SearchIndex:
    """One search index and its builds.

    ``definitions[v]`` is version ``v`` (0 when created, one more per update). ``serving`` is the
    version queries use (``None`` until the first build finishes); ``building`` the one being
    built (``None`` when nothing is), in ``phase`` PENDING then BUILDING.
    """

    namespace: str
    name: str
    type: str
    id: str
    definitions: list[tuple[dict[str, Any], datetime]]
    serving: int | None = None
    building: int | None = 0
    phase: Phase = "PENDING"
    #: The message of a failed build (the build of ``building``), or ``None``.
    failed: str | None = None
    #: Dropped: how many more listings show it DELETING (``AtlasDouble.slow_drops``); 0: live.
    deleting: int = 0

    @property
    def collection(self) -> str:
        return self.namespace.split(".", 1)[1]

    @property
    def latest(self) -> int:
        return len(self.definitions) - 1

    @property
    def queryable(self) -> bool:
        return self.serving is not None and self.deleting == 0

    @property
    def status(self) -> str:
        if self.deleting:
            return "DELETING"
        if self.failed is not None:
            return "FAILED"
        if self.building is None:
            return "READY"
        if self.serving is None:
            return self.phase
        return "BUILDING"  # a rebuild: the documented sample's top-level status

    @property
    def definition(self) -> dict[str, Any] | None:
        """The definition queries are answered with (the serving one)."""
        return None if self.serving is None else self.definitions[self.serving][0]

    def step(self) -> None:
        """One step of the build under way: PENDING -> BUILDING -> served."""
        if self.building is None or self.failed is not None:
            return
        if self.phase == "PENDING":
            self.phase = "BUILDING"
        else:
            self.serving, self.building = self.building, None

    def _version(self, version: int) -> dict[str, Any]:
        return {"version": version, "createdAt": self.definitions[version][1]}

    def _detail(self, version: int, status: str, queryable: bool) -> dict[str, Any]:
        detail: dict[str, Any] = {
            "status": status,
            "queryable": queryable,
            "definitionVersion": self._version(version),
            "definition": copy.deepcopy(self.definitions[version][0]),
        }
        if status == "FAILED":
            detail["message"] = self.failed
        return detail

    def listing(self) -> dict[str, Any]:
        """The ``$listSearchIndexes`` document (the manual's fields; ``message`` where the Admin
        API puts it, inside ``mainIndex``/``stagedIndex``)."""
        building = "FAILED" if self.failed is not None else self.phase
        host: dict[str, Any] = {
            "hostname": _HOSTNAME,
            "status": self.status,
            "queryable": self.queryable,
        }
        if self.serving is None:
            assert self.building is not None
            host["mainIndex"] = self._detail(self.building, building, False)
        else:
            host["mainIndex"] = self._detail(self.serving, "READY", True)
            if self.building is not None:
                host["stagedIndex"] = self._detail(self.building, building, False)
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "status": self.status,
            "queryable": self.queryable,
            "latestDefinitionVersion": self._version(self.latest),
            "latestDefinition": copy.deepcopy(self.definitions[self.latest][0]),
            "statusDetail": [host],
        }


@dataclass
class _View:
    """mongot's copy of a collection: the documents as they were at ``synced_at``."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    synced_at: float | None = None


@dataclass
class _Refusal:
    target: str
    reply: dict[str, Any]
    times: int | None
    collection: str | None


@dataclass
class _Row:
    """A document moving through the stages after a search stage, with its metadata."""

    doc: dict[str, Any]
    meta: dict[str, Any]


# --- the double ------------------------------------------------------------------------------------


class ManualClock:
    """A monotonic clock a test moves by hand (``clock.now += 601``): for the double's lag and
    for anything else in a test that takes a clock."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class AtlasDouble(FaultProxy):
    """``async with AtlasDouble(host, port, secret) as atlas:`` then connect to ``atlas.uri``.

    - ``lag``: seconds of ``clock`` after which a search refreshes the view of its collection
      first; ``None`` (the default): only :meth:`sync` refreshes it. ``0``: no lag at all.
    - ``auto_advance``: every ``$listSearchIndexes`` answer moves each build it lists one step
      (PENDING, BUILDING, READY: ready on the third listing), for code that polls until ready.
    - ``max_search_indexes``: how many search indexes the cluster takes (M0: 3).
    - ``rank_fusion``: ``"accept"``, ``"refuse"`` (every ``$rankFusion``) or
      ``"refuse_vector_inputs"`` (those with an input holding ``$vectorSearch``), answered with
      ``rank_fusion_refusal``.
    - ``listing``: how ``$listSearchIndexes`` reports: ``"atlas"``; ``"on_prem"``, without
      ``status``, ``queryable`` and ``statusDetail`` (self-managed mongot "do[es] not output index
      stats or statuses"); ``"empty"``, always ``[]`` (Community 6.0.7-6.0.10 and 7.0.0-7.0.1
      answer so although they have no search; refuse the search stages with 31082 to match).
    """

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        secret: str | None = None,
        *,
        lag: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        auto_advance: bool = False,
        max_search_indexes: int | None = None,
        rank_fusion: RankFusionMode = "accept",
        listing: ListingStyle = "atlas",
    ) -> None:
        super().__init__(upstream_host, upstream_port, secret)
        self.lag = lag
        self.clock = clock
        self.auto_advance = auto_advance
        self.max_search_indexes = max_search_indexes
        self.rank_fusion: RankFusionMode = rank_fusion
        self.rank_fusion_refusal: dict[str, Any] = dict(RANK_FUSION_REFUSAL)
        self.listing: ListingStyle = listing
        #: How many listings show a dropped index as DELETING (its name still taken) before it
        #: is gone, as Atlas deletes asynchronously; 0: gone at once.
        self.slow_drops = 0
        #: Every reply the double wrote itself, by command name or first stage.
        self.answered: list[str] = []
        #: The refusals it answered: (command or stage, code).
        self.refused: list[tuple[str, int]] = []
        self.indexes: dict[str, dict[str, SearchIndex]] = {}
        self.views: dict[str, _View] = {}
        self._refusals: list[_Refusal] = []
        self._clients: dict[Any, Any] = {}
        self._request_ids = count(1 << 20)
        # mongot's own connection to the data: reads the view and the documents to return.
        self._data: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            ServerInfo(upstream_host, upstream_port, 0, secret).uri,
            document_class=dict,
            datetime_conversion=DatetimeConversion.DATETIME_AUTO,
        )

    async def __aenter__(self) -> AtlasDouble:
        await self.start()
        return self

    async def aclose(self) -> None:
        await super().aclose()
        await self._data.close()

    # --- what tests drive --------------------------------------------------------------------

    def refuse(
        self,
        target: str,
        code: int,
        code_name: str,
        errmsg: str,
        *,
        times: int | None = None,
        collection: str | None = None,
    ) -> None:
        """Answer ``target`` (a command name such as ``createSearchIndexes``, or a stage such as
        ``$listSearchIndexes``/``$vectorSearch``, also inside ``$rankFusion`` inputs) with this
        error, ``times`` times (``None``: until :meth:`allow`), optionally only on ``collection``.
        Refusals are consulted in the order they were made."""
        reply = {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": code_name}
        self._refusals.append(_Refusal(target, reply, times, collection))

    def allow(self, target: str | None = None) -> None:
        """Drop the refusals of ``target`` (all of them when ``None``)."""
        self._refusals = [r for r in self._refusals if target is not None and r.target != target]

    def index(self, name: str, collection: str | None = None) -> SearchIndex:
        """The index called ``name`` (on ``collection``, a name or ``db.coll``, if given)."""
        found = list(self._matching(name, collection))
        if len(found) != 1:
            raise KeyError(f"{len(found)} search indexes match {name!r} on {collection!r}")
        return found[0]

    @property
    def index_states(self) -> dict[tuple[str, str], str]:
        """``{(collection, index name): status}`` for every index on the cluster."""
        return {
            (index.collection, index.name): index.status
            for per_namespace in self.indexes.values()
            for index in per_namespace.values()
        }

    def advance(
        self, name: str | None = None, *, collection: str | None = None, steps: int = 1
    ) -> dict[tuple[str, str], str]:
        """Move the builds of the matching indexes (all when ``name`` is ``None``) ``steps``
        steps on; returns :attr:`index_states`."""
        for index in self._matching(name, collection):
            for _ in range(steps):
                index.step()
        return self.index_states

    def ready(
        self, name: str | None = None, *, collection: str | None = None
    ) -> dict[tuple[str, str], str]:
        """Finish the builds of the matching indexes: the latest definition serves queries."""
        return self.advance(name, collection=collection, steps=2)

    def fail(self, name: str, message: str, *, collection: str | None = None) -> None:
        """Make the build under way of ``name`` fail with ``message``."""
        index = self.index(name, collection)
        if index.building is None:
            raise ValueError(f"no build of {name} is under way")
        index.failed = message

    async def sync(self, collection: str | None = None) -> None:
        """mongot catches up: the view of ``collection`` becomes a copy of what is stored now.

        ``collection`` is ``db.coll``, or a bare name of a collection that has search indexes or
        a view; ``None``: every such collection (mongot copies only indexed collections)."""
        if collection is None:
            namespaces = set(self.indexes) | set(self.views)
        else:
            namespaces = {ns for ns in set(self.indexes) | set(self.views) if _is(ns, collection)}
            if "." in collection:
                namespaces.add(collection)
            elif not namespaces:
                raise ValueError(f"no search index or view on {collection!r}: name it db.coll")
        for namespace in sorted(namespaces):
            await self._sync(namespace)

    # --- framing ---------------------------------------------------------------------------------

    async def _accept(self, reader: Any, writer: Any) -> None:
        self._clients[reader] = writer
        try:
            await super()._accept(reader, writer)
        finally:
            self._clients.pop(reader, None)

    async def _requests(self, reader: Any, up: Any) -> None:
        # FaultProxy forwards what it reads; it reads through a filter that answers the search
        # commands itself and passes every other message on, byte for byte.
        await super()._requests(_Answering(self, reader, self._clients[reader]), up)

    def _reply(self, request_id: int, document: dict[str, Any]) -> bytes:
        """An OP_MSG reply: responseTo the request, flag bits 0, one kind-0 section."""
        body = struct.pack("<iB", 0, 0) + bson.encode(document, codec_options=CODEC)
        header = _HEADER.pack(
            _HEADER.size + len(body), next(self._request_ids), request_id, _OP_MSG
        )
        return header + body

    async def answer(self, message: bytes) -> bytes | None:
        """The double's reply to ``message``, or ``None`` to forward it."""
        request = _parse(message)
        if request is None:
            return None
        request_id, body = request
        command = next(iter(body), "")
        database = body.get("$db", "")
        collection = body.get(command)
        namespace = f"{database}.{collection}" if isinstance(collection, str) else database
        names = _names(command, body)
        refusal = self._refusal(names, collection if isinstance(collection, str) else None)
        if refusal is not None:
            self.answered.append(names[0])
            self.refused.append((names[0], int(refusal["code"])))
            return self._reply(request_id, refusal)
        handler = self._handler(command, names[0])
        if handler is None:
            self._observe(command, database, collection)
            return None
        self.answered.append(names[0])
        try:
            document = await handler(namespace, body)
        except _ServerError as exc:
            document = exc.reply
        except Exception as exc:  # a bug of the double: an error reply, not a dead connection
            document = _not_modelled(f"this request ({type(exc).__name__}: {exc})").reply
        return self._reply(request_id, document)

    def _handler(self, command: str, first: str) -> Callable[[str, dict[str, Any]], Any] | None:
        if command == "createSearchIndexes":
            return self._create
        if command == "updateSearchIndex":
            return self._update
        if command == "dropSearchIndex":
            return self._drop
        if command == "aggregate":
            return {
                "$listSearchIndexes": self._list,
                "$vectorSearch": self._search_aggregate,
                "$search": self._search_aggregate,
                "$rankFusion": self._rank_fusion,
            }.get(first)
        return None

    def _refusal(self, names: list[str], collection: str | None) -> dict[str, Any] | None:
        for rule in self._refusals:
            if rule.target not in names:
                continue
            if rule.collection is not None and rule.collection != collection:
                continue
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    self._refusals.remove(rule)
            return dict(rule.reply)
        return None

    def _observe(self, command: str, database: str, collection: Any) -> None:
        """Search indexes go with their collection or database (forwarded drops)."""
        if command == "drop" and isinstance(collection, str):
            self.indexes.pop(f"{database}.{collection}", None)
            self.views.pop(f"{database}.{collection}", None)
        elif command == "dropDatabase":
            for store in (self.indexes, self.views):
                for namespace in [ns for ns in store if ns.startswith(database + ".")]:
                    del store[namespace]

    def _matching(self, name: str | None, collection: str | None) -> Iterable[SearchIndex]:
        for namespace, per_namespace in self.indexes.items():
            if collection is not None and not _is(namespace, collection):
                continue
            for index in per_namespace.values():
                if name is None or index.name == name:
                    yield index

    # --- search index commands ------------------------------------------------------------------

    async def _create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        wanted = body.get("indexes")
        if not isinstance(wanted, list) or not wanted:
            raise _ServerError(9, "FailedToParse", "createSearchIndexes needs a list of indexes")
        existing = self.indexes.setdefault(namespace, {})
        new: list[SearchIndex] = []
        for spec in wanted:
            name = spec.get("name", "default")
            kind = spec.get("type", "search")
            definition = spec.get("definition")
            if kind not in ("search", "vectorSearch"):
                raise _ServerError(2, "BadValue", f"Invalid index type '{kind}'")
            if not isinstance(definition, dict):
                raise _ServerError(9, "FailedToParse", "a search index needs a definition")
            _check_definition(kind, definition)
            if name in existing or any(index.name == name for index in new):
                # The code and text are not documented; the condition is.
                raise _ServerError(68, "IndexAlreadyExists", f"Index {name} already exists")
            created = datetime.now(UTC)
            new.append(SearchIndex(namespace, name, kind, str(ObjectId()), [(definition, created)]))
        total = sum(len(per_namespace) for per_namespace in self.indexes.values())
        if self.max_search_indexes is not None and total + len(new) > self.max_search_indexes:
            raise _ServerError(
                TOO_MANY_INDEXES["code"], TOO_MANY_INDEXES["codeName"], TOO_MANY_INDEXES["errmsg"]
            )
        for index in new:
            existing[index.name] = index
        return {"indexesCreated": [{"id": i.id, "name": i.name} for i in new], "ok": 1.0}

    def _named(self, namespace: str, body: dict[str, Any]) -> SearchIndex:
        per_namespace = self.indexes.get(namespace, {})
        if "id" in body:
            found = next((i for i in per_namespace.values() if i.id == body["id"]), None)
            label = f"id {body['id']}"
        else:
            found = per_namespace.get(body.get("name", "default"))
            label = f"name {body.get('name', 'default')}"
        if found is None:
            # The text is documented (doctrine/mongodb-odm#3054); the code is not.
            raise _ServerError(
                27, "IndexNotFound", f"No index with {label} exists in namespace {namespace}"
            )
        return found

    async def _update(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        index = self._named(namespace, body)
        definition = body.get("definition")
        if not isinstance(definition, dict):
            raise _ServerError(9, "FailedToParse", "updateSearchIndex needs a definition")
        _check_definition(index.type, definition)
        index.definitions.append((definition, datetime.now(UTC)))
        index.building, index.phase, index.failed = index.latest, "PENDING", None
        return {"ok": 1.0}

    async def _drop(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        index = self._named(namespace, body)
        if self.slow_drops:
            index.deleting = self.slow_drops  # listed as DELETING that many times, then gone
        else:
            del self.indexes[namespace][index.name]
        return {"ok": 1.0}

    async def _list(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        pipeline = body["pipeline"]
        spec = pipeline[0]["$listSearchIndexes"] or {}
        listed = [
            index
            for index in self.indexes.get(namespace, {}).values()
            if ("name" not in spec or index.name == spec["name"])
            and ("id" not in spec or index.id == spec["id"])
        ]
        rows = [_Row(index.listing(), {}) for index in listed]
        for index in listed:
            if index.deleting:
                index.deleting -= 1
                if index.deleting == 0:  # the deletion has ended
                    del self.indexes[namespace][index.name]
        if self.listing == "empty":
            rows = []
        elif self.listing == "on_prem":
            for row in rows:
                for name in _STATUS_FIELDS:
                    del row.doc[name]
        if self.auto_advance:
            for index in listed:
                index.step()
        return _cursor(namespace, _run_stages(rows, pipeline[1:]))

    # --- the view (mongot's copy) ---------------------------------------------------------------

    async def _sync(self, namespace: str) -> _View:
        database, collection = namespace.split(".", 1)
        documents = await self._data[database][collection].find({}).to_list(None)
        view = self.views[namespace] = _View(documents, self.clock())
        return view

    async def _view(self, namespace: str) -> _View:
        view = self.views.get(namespace)
        if self.lag is not None and (
            view is None or view.synced_at is None or self.clock() - view.synced_at >= self.lag
        ):
            view = await self._sync(namespace)
        return view or _View()

    async def _lookup(self, namespace: str, ids: list[Any]) -> list[dict[str, Any]]:
        """The current documents of ``ids``, in that order; deleted ones are left out."""
        if not ids:
            return []
        database, collection = namespace.split(".", 1)
        found = await self._data[database][collection].find({"_id": {"$in": ids}}).to_list(None)
        by_key = {_key(doc["_id"]): doc for doc in found}
        return [by_key[_key(i)] for i in ids if _key(i) in by_key]

    # --- $vectorSearch and $search ----------------------------------------------------------------

    def _queryable(self, namespace: str, name: str, kind: str) -> SearchIndex | None:
        index = self.indexes.get(namespace, {}).get(name)
        if index is None or index.type != kind or not index.queryable:
            return None
        return index

    async def _rank(
        self, namespace: str, stage: dict[str, Any]
    ) -> tuple[list[Any], list[float], str]:
        """What mongot answers for a search stage: the ``_id``s and scores, best first, and the
        name of the score's ``$meta`` field."""
        ((name, spec),) = stage.items()
        if not isinstance(spec, dict):
            raise _ServerError(9, "FailedToParse", f"{name} must take a nested object")
        if name == "$vectorSearch":
            ranking = await self._vector_search(namespace, spec)
            meta = "vectorSearchScore"
        else:
            ranking = await self._text_search(namespace, spec)
            meta = "searchScore"
        return [doc_id for doc_id, _ in ranking], [score for _, score in ranking], meta

    async def _vector_search(self, namespace: str, spec: dict[str, Any]) -> list[tuple[Any, float]]:
        for required in ("path", "queryVector", "limit"):
            if required not in spec:
                raise _ServerError(
                    40414,
                    "Location40414",
                    f"BSON field '$vectorSearch.{required}' is missing but a required field",
                )
        exact = bool(spec.get("exact", False))
        limit = spec["limit"]
        candidates = spec.get("numCandidates")
        if not isinstance(limit, int) or limit < 1:
            raise _ServerError(2, "BadValue", "limit must be a positive integer")
        if not exact:
            if candidates is None:
                raise _ServerError(
                    40414,
                    "Location40414",
                    "BSON field '$vectorSearch.numCandidates' is missing but a required field",
                )
            if not isinstance(candidates, int) or not limit <= candidates <= MAX_CANDIDATES:
                raise _ServerError(
                    2,
                    "BadValue",
                    f"numCandidates must be between limit ({limit}) and {MAX_CANDIDATES}",
                )
        index = self._queryable(namespace, str(spec.get("index", "default")), "vectorSearch")
        if index is None:
            return []  # documented: no results, no error
        definition = index.definition or {}
        fields = definition.get("fields", [])
        vector_field = next(
            (f for f in fields if f.get("type") == "vector" and f.get("path") == spec["path"]), None
        )
        if vector_field is None:
            raise _plan_error(f"Path '{spec['path']}' needs to be indexed as vector")
        filter_paths = {f.get("path") for f in fields if f.get("type") == "filter"}
        query_filter = spec.get("filter") or {}
        for path in _filter_paths(query_filter):
            if path not in filter_paths:  # the troubleshooting page's error
                raise _plan_error(f"Path '{path}' needs to be indexed as token")
        query = [float(x) for x in spec["queryVector"]]
        dimensions = int(vector_field["numDimensions"])
        if len(query) != dimensions:
            raise _plan_error(
                f"vector field is indexed with {dimensions} dimensions but queried with "
                f"{len(query)}"
            )
        similarity = vector_field.get("similarity", "cosine")
        scored: list[tuple[Any, float]] = []
        for doc in (await self._view(namespace)).documents:
            stored = _vector(_get(doc, spec["path"]))
            if stored is None or len(stored) != dimensions or not _matches(doc, query_filter):
                continue  # mongot does not index a vector of another length
            score = _score(similarity, query, stored)
            if score is not None:
                scored.append((doc["_id"], score))
        scored.sort(key=lambda item: -item[1])
        return scored[: min(limit, candidates or limit)]

    async def _text_search(self, namespace: str, spec: dict[str, Any]) -> list[tuple[Any, float]]:
        index = self._queryable(namespace, str(spec.get("index", "default")), "search")
        operators = [key for key in spec if key not in _SEARCH_OPTIONS]
        if len(operators) != 1:
            raise _ServerError(9, "FailedToParse", "$search needs exactly one operator")
        if index is None:
            return []
        mappings = (index.definition or {}).get("mappings", {})
        operator = {operators[0]: spec[operators[0]]}
        scored = []
        for doc in (await self._view(namespace)).documents:
            score = _operator(doc, operator, mappings)
            if score is not None:
                scored.append((doc["_id"], score))
        scored.sort(key=lambda item: -item[1])
        return scored

    async def _search_aggregate(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        pipeline = body["pipeline"]
        ids, scores, meta = await self._rank(namespace, pipeline[0])
        by_key = {_key(i): s for i, s in zip(ids, scores, strict=True)}
        rows = [
            _Row(doc, {meta: by_key[_key(doc["_id"])], "score": by_key[_key(doc["_id"])]})
            for doc in await self._lookup(namespace, ids)
        ]
        return _cursor(namespace, _run_stages(rows, pipeline[1:]))

    # --- $rankFusion ----------------------------------------------------------------------------

    async def _rank_fusion(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        pipeline = body["pipeline"]
        spec = pipeline[0]["$rankFusion"]
        try:
            inputs: dict[str, list[dict[str, Any]]] = dict(spec["input"]["pipelines"])
        except (KeyError, TypeError) as exc:
            raise _ServerError(
                40414, "Location40414", f"BSON field '$rankFusion.input' {exc}"
            ) from None
        with_vectors = any(
            "$vectorSearch" in stage for stages in inputs.values() for stage in stages
        )
        if self.rank_fusion == "refuse" or (
            self.rank_fusion == "refuse_vector_inputs" and with_vectors
        ):
            return dict(self.rank_fusion_refusal)
        weights = dict((spec.get("combination") or {}).get("weights") or {})
        unknown = sorted(set(weights) - set(inputs))
        if unknown:
            raise _ServerError(
                9967500,
                "Location9967500",
                f"$rankFusion stage contained ({len(unknown)}) weight(s) in "
                "'combination.weights' that did not reference valid pipeline names.",
            )
        details = bool(spec.get("scoreDetails", False))
        fused: dict[bytes, dict[str, Any]] = {}
        for name in sorted(inputs):  # the server orders inputs by name (an ordered map)
            stages = inputs[name]
            _check_ranked_input(stages)
            weight = float(weights.get(name, 1.0))
            if weight < 0:
                raise _ServerError(
                    9460300,
                    "Location9460300",
                    f"Rank fusion pipeline weight must be non-negative, but given {weight} "
                    f"for pipeline '{name}'.",
                )
            for rank, row in enumerate(await self._input_rows(namespace, stages), start=1):
                entry = fused.setdefault(
                    _key(row.doc["_id"]), {"doc": row.doc, "score": 0.0, "inputs": {}}
                )
                entry["score"] += weight * (1.0 / (RRF_K + rank))
                entry["inputs"][name] = (rank, row.meta.get("score"))
        ordered = sorted(fused.values(), key=lambda entry: _id_order(entry["doc"]["_id"]))
        ordered.sort(key=lambda entry: -entry["score"])
        rows = []
        for entry in ordered:
            meta: dict[str, Any] = {"score": entry["score"]}
            if details:
                meta["scoreDetails"] = {
                    "value": entry["score"],
                    "description": RRF_DESCRIPTION,
                    "details": [
                        _input_detail(
                            name, float(weights.get(name, 1.0)), entry["inputs"].get(name)
                        )
                        for name in sorted(inputs)
                    ],
                }
            rows.append(_Row(entry["doc"], meta))
        return _cursor(namespace, _run_stages(rows, pipeline[1:]))

    async def _input_rows(self, namespace: str, stages: list[dict[str, Any]]) -> list[_Row]:
        """One ``$rankFusion`` input's documents, in its order (scores in ``meta["score"]``)."""
        first = next(iter(stages[0]))
        if first in _SEARCH_STAGES:
            ids, scores, meta = await self._rank(namespace, stages[0])
            by_key = {_key(i): s for i, s in zip(ids, scores, strict=True)}
            rows = [
                _Row(doc, {meta: by_key[_key(doc["_id"])], "score": by_key[_key(doc["_id"])]})
                for doc in await self._lookup(namespace, ids)
            ]
            return _run_stages_rows(rows, stages[1:])
        database, collection = namespace.split(".", 1)
        cursor = await self._data[database][collection].aggregate(stages)
        return [_Row(doc, {}) for doc in await cursor.to_list(None)]


class _Answering:
    """What :meth:`FaultProxy._requests` reads from: the client's messages, less those the double
    answered (their replies are written straight back to the client). It relies on
    ``_requests`` reading one message at a time (its length, then the rest) with
    ``readexactly``, the only method it calls."""

    def __init__(self, double: AtlasDouble, reader: Any, writer: Any) -> None:
        self._double, self._reader, self._writer = double, reader, writer
        self._pending = b""

    async def readexactly(self, n: int) -> bytes:
        while not self._pending:
            header = await self._reader.readexactly(4)
            (length,) = struct.unpack("<i", header)
            message = header + await self._reader.readexactly(length - 4)
            reply = await self._double.answer(message)
            if reply is None:
                self._pending = message
            else:
                # pymongo waits for each reply before sending again on a connection, so
                # nothing from upstream can be in flight on it now.
                self._writer.write(reply)
                await self._writer.drain()
        if len(self._pending) < n:
            raise AssertionError("FaultProxy read across a message boundary")
        chunk, self._pending = self._pending[:n], self._pending[n:]
        return chunk


# --- the wire ------------------------------------------------------------------------------------


def _parse(message: bytes) -> tuple[int, dict[str, Any]] | None:
    """An OP_MSG's request id and command (kind-1 sequences folded in), or ``None`` for any
    other message (the legacy handshake, OP_COMPRESSED)."""
    _, request_id, _, op_code = _HEADER.unpack_from(message)
    if op_code != _OP_MSG:
        return None
    (flags,) = struct.unpack_from("<I", message, _HEADER.size)
    end = len(message) - (4 if flags & 1 else 0)  # checksumPresent
    offset = _HEADER.size + 4
    body: dict[str, Any] | None = None
    sequences: dict[str, list[Any]] = {}
    while offset < end:
        kind = message[offset]
        (size,) = struct.unpack_from("<i", message, offset + 1)
        if kind == 0:
            body = bson.decode(message[offset + 1 : offset + 1 + size], codec_options=CODEC)
            offset += 1 + size
        elif kind == 1:
            section = message[offset + 1 : offset + 1 + size]
            identifier_end = section.index(b"\x00", 4)
            identifier = section[4:identifier_end].decode()
            sequences[identifier] = bson.decode_all(section[identifier_end + 1 :], CODEC)
            offset += 1 + size
        else:
            return None
    if body is None:
        return None
    body.update(sequences)
    return request_id, body


def _names(command: str, body: dict[str, Any]) -> list[str]:
    """What a refusal may name: the first stage of an aggregate (first in the list, the name the
    answer is logged under), then stages first in ``$rankFusion`` inputs, then the command."""
    names: list[str] = []
    pipeline = body.get("pipeline") if command == "aggregate" else None
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[0], dict) and pipeline[0]:
        first = next(iter(pipeline[0]))
        names.append(first)
        if first == "$rankFusion":
            try:
                for stages in pipeline[0][first]["input"]["pipelines"].values():
                    names.append(next(iter(stages[0])))
            except (KeyError, TypeError, IndexError, AttributeError, StopIteration):
                pass
    names.append(command)
    return names


def _cursor(namespace: str, documents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cursor": {"firstBatch": documents, "id": Int64(0), "ns": namespace}, "ok": 1.0}


def _is(namespace: str, collection: str) -> bool:
    return namespace == collection or namespace.split(".", 1)[1] == collection


def _key(value: Any) -> bytes:
    """A hashable stand-in for any ``_id``."""
    return bson.encode({"_id": value}, codec_options=CODEC)


def _id_order(value: Any) -> tuple[int, Any]:
    """The ``_id: 1`` tie-break of ``$rankFusion`` for the usual ``_id`` types."""
    if isinstance(value, bool):
        return (3, int(value))
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, ObjectId):
        return (2, value.binary)
    return (4, _key(value))


# --- definitions, vectors, scores --------------------------------------------------------------


def _check_definition(kind: str, definition: dict[str, Any]) -> None:
    """The checks Atlas makes when an index is created or updated that matter here."""
    if kind == "vectorSearch":
        fields = definition.get("fields")
        if not isinstance(fields, list) or not fields:
            raise _ServerError(2, "BadValue", "Invalid vectorSearch index: fields is required")
        for entry in fields:
            if entry.get("type") == "vector" and (
                not isinstance(entry.get("numDimensions"), int)
                or entry.get("similarity") not in ("cosine", "euclidean", "dotProduct")
            ):
                raise _ServerError(
                    2,
                    "BadValue",
                    "Invalid vectorSearch index: a vector field needs numDimensions and a "
                    "similarity of cosine, euclidean or dotProduct",
                )
    elif not isinstance(definition.get("mappings"), dict):
        raise _ServerError(2, "BadValue", "Invalid search index: mappings is required")


def _vector(value: Any) -> list[float] | None:
    """A stored vector: a BSON binary vector (subtype 9) of any dtype, or an array of numbers."""
    if isinstance(value, Binary) and value.subtype == 9:
        vector = value.as_vector()
        if vector.dtype == BinaryVectorDtype.PACKED_BIT:
            bits = [(byte >> (7 - i)) & 1 for byte in vector.data for i in range(8)]
            return [float(b) for b in bits[: len(bits) - vector.padding]]
        return [float(x) for x in vector.data]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
    ):
        return [float(x) for x in value]
    return None


def _score(similarity: str, query: list[float], stored: list[float]) -> float | None:
    """The documented ``vectorSearchScore``: ``(1 + cosine) / 2``, ``(1 + dotProduct) / 2``, or
    ``1 / (1 + euclidean distance)``. ``None`` for a zero vector under cosine (not indexable)."""
    dot = sum(a * b for a, b in zip(query, stored, strict=True))
    if similarity == "cosine":
        norms = math.sqrt(sum(a * a for a in query)) * math.sqrt(sum(b * b for b in stored))
        return None if norms == 0 else (1.0 + dot / norms) / 2.0
    if similarity == "dotProduct":
        return (1.0 + dot) / 2.0
    distance = math.sqrt(sum((a - b) ** 2 for a, b in zip(query, stored, strict=True)))
    return 1.0 / (1.0 + distance)


# --- the MQL subset (the $vectorSearch filter, $match after a search) --------------------------------


def _get(doc: Any, path: str) -> Any:
    value = doc
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _equals(value: Any, wanted: Any) -> bool:
    """MQL equality: a missing field equals null; an array equals a value it contains."""
    if value is _MISSING:
        return wanted is None
    if isinstance(value, list) and not isinstance(wanted, list):
        return any(_same(item, wanted) for item in value)
    return _same(value, wanted)


def _utc(value: Any) -> Any:
    """A date as the server compares it: BSON dates carry no zone (UTC)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _compare(value: Any, bound: Any, op: str) -> bool:
    candidates = value if isinstance(value, list) else [value]
    bound = _utc(bound)
    for item in map(_utc, candidates):
        try:
            if (
                (op == "$gt" and item > bound)
                or (op == "$gte" and item >= bound)
                or (op == "$lt" and item < bound)
                or (op == "$lte" and item <= bound)
            ):
                return True
        except TypeError:
            continue
    return False


def _matches(doc: dict[str, Any], query: dict[str, Any]) -> bool:
    for key, condition in query.items():
        if key == "$and":
            if not all(_matches(doc, part) for part in condition):
                return False
        elif key == "$or":
            if not any(_matches(doc, part) for part in condition):
                return False
        elif key == "$nor":
            if any(_matches(doc, part) for part in condition):
                return False
        elif key.startswith("$"):
            raise _not_modelled(f"the query operator {key}")
        elif not _field_matches(_get(doc, key), condition):
            return False
    return True


def _field_matches(value: Any, condition: Any) -> bool:
    if not (
        isinstance(condition, dict) and condition and all(k.startswith("$") for k in condition)
    ):
        return _equals(value, condition)
    for op, argument in condition.items():
        if op == "$eq":
            ok = _equals(value, argument)
        elif op == "$ne":
            ok = not _equals(value, argument)
        elif op == "$in":
            ok = any(_equals(value, item) for item in argument)
        elif op == "$nin":
            ok = not any(_equals(value, item) for item in argument)
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            ok = value is not _MISSING and _compare(value, argument, op)
        elif op == "$exists":
            ok = (value is not _MISSING) == bool(argument)
        elif op == "$not":
            ok = not _field_matches(value, argument)
        else:
            raise _not_modelled(f"the query operator {op}")
        if not ok:
            return False
    return True


def _filter_paths(query: dict[str, Any]) -> Iterable[str]:
    for key, condition in query.items():
        if key in ("$and", "$or", "$nor"):
            for part in condition:
                yield from _filter_paths(part)
        elif not key.startswith("$"):
            yield key


# --- the $search operators -----------------------------------------------------------------------

#: Top-level ``$search`` options that are not the operator.
_SEARCH_OPTIONS = frozenset(
    {
        "index",
        "highlight",
        "count",
        "scoreDetails",
        "returnStoredSource",
        "concurrent",
        "sort",
        "tracking",
        "searchAfter",
        "searchBefore",
    }
)


def _mapped_types(mappings: dict[str, Any], path: str) -> set[str]:
    """The types ``path`` is indexed as in a search index's ``mappings``."""
    level: Any = mappings
    types: set[str] = set()
    parts = path.split(".")
    for depth, part in enumerate(parts):
        fields = level.get("fields", {}) if isinstance(level, dict) else {}
        entry = fields.get(part)
        entries = entry if isinstance(entry, list) else [entry] if entry else []
        if depth == len(parts) - 1:
            types = {str(e.get("type")) for e in entries if isinstance(e, dict)}
        else:
            level = next((e for e in entries if e.get("type") == "document"), None)
            if level is None:
                break
    return types


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _words(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(_WORD.findall(value.lower()))
    if isinstance(value, list):
        return set().union(*(_words(item) for item in value)) if value else set()
    return set()


def _indexed_value(doc: dict[str, Any], path: str, mappings: dict[str, Any], kind: str) -> Any:
    """The value of ``path`` if the index holds it as ``kind``, else ``_MISSING`` (Lucene knows
    nothing of a field it does not index: no match, no error)."""
    types = _mapped_types(mappings, path)
    dynamic = bool(mappings.get("dynamic", False))
    if kind == "string" and not ("string" in types or (dynamic and not types)):
        return _MISSING
    if kind == "token" and "token" not in types:
        return _MISSING
    if kind == "other" and not (types or dynamic):
        return _MISSING
    return _get(doc, path)


def _operator(
    doc: dict[str, Any], operator: dict[str, Any], mappings: dict[str, Any]
) -> float | None:
    """The score of ``doc`` for one operator, or ``None`` when it does not match."""
    ((name, spec),) = operator.items()
    if name == "compound":
        score = 0.0
        for clause in _as_list(spec.get("filter", [])):
            if _operator(doc, clause, mappings) is None:
                return None
        for clause in _as_list(spec.get("mustNot", [])):
            if _operator(doc, clause, mappings) is not None:
                return None
        for clause in _as_list(spec.get("must", [])):
            part = _operator(doc, clause, mappings)
            if part is None:
                return None
            score += part
        should = [_operator(doc, clause, mappings) for clause in _as_list(spec.get("should", []))]
        matched = [part for part in should if part is not None]
        needed = spec.get("minimumShouldMatch", 0 if ("must" in spec or "filter" in spec) else 1)
        if should and len(matched) < needed:
            return None
        return score + sum(matched)
    if name == "text":
        terms = _words(spec.get("query"))
        found: set[str] = set()
        for path in _as_list(spec.get("path")):
            if not isinstance(path, str):
                raise _not_modelled("a text path that is not a field name")
            found |= _words(_indexed_value(doc, path, mappings, "string"))
        overlap = len(terms & found)
        return float(overlap) if overlap else None
    if name in ("equals", "in"):
        wanted = _as_list(spec.get("value")) if name == "in" else [spec.get("value")]
        path = spec.get("path")
        strings = all(isinstance(w, str) for w in wanted)
        value = _indexed_value(doc, path, mappings, "token" if strings else "other")
        if value is _MISSING:
            return None
        return 1.0 if any(_equals(value, w) for w in wanted) else None
    if name == "exists":
        return 1.0 if _get(doc, spec.get("path", "")) is not _MISSING else None
    if name == "range":
        bounds = {key: spec[key] for key in ("gt", "gte", "lt", "lte") if key in spec}
        if not bounds or not all(isinstance(b, datetime) for b in bounds.values()):
            raise _not_modelled("a range that is not of dates")
        if "date" not in _mapped_types(mappings, spec.get("path", "")):
            return None  # Lucene holds no dates of a field it does not index as date
        value = _get(doc, spec["path"])
        if not isinstance(value, datetime):
            return None
        ok = all(_compare(value, bound, f"${key}") for key, bound in bounds.items())
        return 1.0 if ok else None
    raise _not_modelled(f"the $search operator {name}")


# --- the stages after a search stage -----------------------------------------------------------


def _check_ranked_input(stages: list[dict[str, Any]]) -> None:
    """A ``$rankFusion`` input must select and rank (the server's checks and messages)."""
    if not stages:
        raise _ServerError(
            9834300, "Location9834300", "$rankFusion input pipeline cannot be empty."
        )
    names = [next(iter(stage)) for stage in stages]
    for name in names:
        if name not in _SELECTION_STAGES:
            raise _ServerError(
                9191103,
                "Location9191103",
                f"{name} is not allowed in a $rankFusion subpipeline because it modifies the "
                "documents or transforms their fields. Only stages that retrieve, limit, or "
                "order documents are allowed.",
            )
    if names[0] not in (*_SEARCH_STAGES, "$geoNear") and "$sort" not in names:
        raise _ServerError(
            9191100,
            "Location9191100",
            "All subpipelines to the $rankFusion stage must begin with one of $search, "
            "$vectorSearch, $geoNear, $scoreFusion, $rankFusion or have a custom $sort in the "
            "pipeline.",
        )


def _run_stages(rows: list[_Row], stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row.doc for row in _run_stages_rows(rows, stages)]


def _run_stages_rows(rows: list[_Row], stages: list[dict[str, Any]]) -> list[_Row]:
    """Run the stages the framework puts after a search stage, as mongod would."""
    for stage in stages:
        ((name, spec),) = stage.items()
        if name == "$limit":
            rows = rows[: int(spec)]
        elif name == "$skip":
            rows = rows[int(spec) :]
        elif name == "$match":
            rows = [row for row in rows if _matches(row.doc, spec)]
        elif name in ("$set", "$addFields"):
            rows = [_Row(_with_fields(row, spec), row.meta) for row in rows]
        elif name == "$unset":
            rows = [_Row(_without(row.doc, _as_list(spec)), row.meta) for row in rows]
        elif name == "$project":
            rows = [_Row(_projected(row, spec), row.meta) for row in rows]
        else:
            raise _not_modelled(f"the stage {name} after a search stage")
    return rows


def _evaluate(expression: Any, row: _Row) -> Any:
    if isinstance(expression, str) and expression.startswith("$"):
        return _get(row.doc, expression[1:])
    if isinstance(expression, dict):
        if set(expression) == {"$meta"}:
            name = expression["$meta"]
            if name not in row.meta:
                raise _ServerError(
                    40218,
                    "Location40218",
                    f"query requires {name} metadata, but it is not available",
                )
            return copy.deepcopy(row.meta[name])
        if set(expression) == {"$literal"}:
            return expression["$literal"]
        if any(key.startswith("$") for key in expression):
            raise _not_modelled(f"the expression {sorted(expression)}")
        return {key: _evaluate(value, row) for key, value in expression.items()}
    if isinstance(expression, list):
        return [_evaluate(item, row) for item in expression]
    return expression


def _with_fields(row: _Row, spec: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(row.doc)
    for path, expression in spec.items():
        value = _evaluate(expression, row)
        parts = path.split(".")
        target = doc
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        if value is _MISSING:
            target.pop(parts[-1], None)
        else:
            target[parts[-1]] = value
    return doc


def _without(doc: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for path in paths:
        parts = path.split(".")
        target: Any = doc
        for part in parts[:-1]:
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target.pop(parts[-1], None)
    return doc


def _projected(row: _Row, spec: dict[str, Any]) -> dict[str, Any]:
    excluded = [p for p, v in spec.items() if v in (0, False) and not isinstance(v, dict)]
    if len(excluded) == len(spec):
        return _without(row.doc, excluded)
    out: dict[str, Any] = {}
    if spec.get("_id", 1) not in (0, False) and "_id" in row.doc:
        out["_id"] = row.doc["_id"]
    for path, value in spec.items():
        if path == "_id" and value in (0, False, 1, True):
            continue
        if value in (1, True) and not isinstance(value, dict):
            found = _get(row.doc, path)
            if found is not _MISSING:
                out[path] = found
        elif value not in (0, False):
            out[path] = _evaluate(value, row)
    return out


def _input_detail(name: str, weight: float, found: tuple[int, Any] | None) -> dict[str, Any]:
    """One ``scoreDetails.details`` entry: the input's rank ("N/A" when it did not return the
    document), weight and, for a scored input, its own score."""
    if found is None:
        return {"inputPipelineName": name, "rank": "N/A", "weight": weight, "details": []}
    rank, score = found
    entry: dict[str, Any] = {"inputPipelineName": name, "rank": rank, "weight": weight}
    if score is not None:
        entry["value"] = score
    entry["details"] = []
    return entry
