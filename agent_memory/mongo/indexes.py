"""Index lifecycle: set up, inspect, validate and drop every index agent_memory uses.

Regular indexes are created on every tier; Atlas Search and Vector Search indexes only on
the Atlas tier, where setup waits until their current definition serves queries. Nothing in
use is ever dropped or rebuilt unless asked: a definition that differs from the stored one is
reported as drift with what to do about it. Setup drops only an index an earlier version
created and a newer one replaced (``retired_indexes`` in the catalog), after creating its
replacement; data in an earlier form is migrated first (:mod:`agent_memory.mongo.migrations`).
The embedder the data was built with is
recorded, so a changed model or dimension is caught before mixed vectors make search
meaningless.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pymongo import IndexModel
from pymongo import errors as pm
from pymongo.operations import SearchIndexModel

from agent_memory._log import get_logger
from agent_memory.checks import check_number, is_int
from agent_memory.errors import EmbeddingMismatchError, StorageError
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import classify_refusal, first_line, translate_errors
from agent_memory.mongo.catalog import CollectionSpec, IndexCatalog, IndexSpec, SearchIndexSpec
from agent_memory.mongo.connection import META_COLLECTION, Connection, ensure_collection
from agent_memory.mongo.embedding_record import EMBEDDING_META_ID, embedding_drift
from agent_memory.mongo.migrations import MIGRATIONS, retire_indexes, retired_present
from agent_memory.mongo.search.index_watch import note_search_indexes_serving
from agent_memory.mongo.search.layout import Layout, choose_layout, record_layout
from agent_memory.providers.embedders.base import EmbeddingSignature

__all__ = ["IndexManager", "IndexState", "serving_state"]

logger = get_logger(__name__)

State = Literal[
    "ok",
    "missing",
    "drift",
    "building",
    "failed",
    "unknown",
    "created",
    "updated",
    "dropped",
    "not used",
]

#: Atlas's answer when a cluster holds as many search indexes as its tier allows.
_ALREADY_EXISTS = 68  # IndexAlreadyExists
_TOO_MANY_WORDS = "maximum number of fts indexes"


class _LimitReached(StorageError):
    """The cluster refused a search index for its tier's limit (M0: 3)."""

    #: The index refused, as ``collection.name``.
    index: str = ""


@dataclass(frozen=True, slots=True)
class IndexState:
    collection: str
    name: str
    kind: str  # regular | text | vectorSearch | search | embedding
    state: State
    detail: str = ""

    @property
    def problem(self) -> bool:
        """Missing, drifted or failed, or a search index whose state could not be read
        (``unknown``): nothing that can be taken as in place."""
        return self.state in ("missing", "drift", "failed", "unknown")


def _is_text(spec: IndexSpec) -> bool:
    return any(value == "text" for _, value in spec.key)


def _compare_regular(spec: IndexSpec, existing: dict[str, Any]) -> str:
    """Why ``existing`` differs from ``spec`` ('' when it does not)."""
    if _is_text(spec):
        wanted = sorted(path for path, value in spec.key if value == "text")
        weights = existing.get("weights")
        if isinstance(weights, dict):
            have = sorted(weights)
        else:
            have = sorted(
                path for path, value in dict(existing.get("key", {})).items() if value == "text"
            )
        if have != wanted:
            return f"text fields {have} instead of {wanted}"
    else:
        have_key = list(dict(existing.get("key", {})).items())
        if have_key != list(spec.key):
            return f"key {have_key} instead of {list(spec.key)}"
    for option, value in spec.options.items():
        if existing.get(option) != value:
            return f"{option}={existing.get(option)!r} instead of {value!r}"
    return ""


def _entry_key(item: Any) -> str:
    # Entries of a vector index's `fields` are identified by type and path; the server may add
    # defaults to them (e.g. quantization), which must not change how they pair up.
    if isinstance(item, dict) and "path" in item:
        return json.dumps([item.get("type"), item["path"]], default=str)
    return json.dumps(item, sort_keys=True, default=str)


def _differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where ``actual`` lacks or changes what ``expected`` says (extra server defaults are fine)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or 'definition'} is not an object"]
        found = []
        for key, value in expected.items():
            found += _differences(value, actual.get(key), f"{path}.{key}" if path else key)
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            count = len(actual) if isinstance(actual, list) else "no"
            return [f"{path} has {count} entries, expected {len(expected)}"]
        have = {_entry_key(item): item for item in actual}
        found = []
        for want in expected:
            key = _entry_key(want)
            if key not in have:
                found.append(f"{path} lacks {key}")
            else:
                found += _differences(want, have[key], f"{path}[{key}]")
        return found
    if expected != actual:
        return [f"{path} is {actual!r}, expected {expected!r}"]
    return []


def _version(value: Any) -> int | None:
    """``definitionVersion.version`` / ``latestDefinitionVersion.version``, when given."""
    version = value.get("version") if isinstance(value, dict) else None
    return version if is_int(version) else None


def _failure_message(found: dict[str, Any]) -> str:
    """Why a build failed: ``statusDetail[].stagedIndex.message`` or ``mainIndex.message``
    (where Atlas documents it), else a top-level ``message``."""
    for host in found.get("statusDetail") or []:
        if not isinstance(host, dict):
            continue
        for part in ("stagedIndex", "mainIndex"):
            detail = host.get(part)
            if isinstance(detail, dict) and detail.get("message"):
                return str(detail["message"])
    return str(found.get("message") or "")


def serving_state(found: dict[str, Any] | None) -> tuple[State, str]:
    """Whether a search index, as ``$listSearchIndexes`` lists it, serves its latest
    definition: ``ok``, ``missing`` (``found`` is ``None``), ``building`` or ``failed``, with a
    detail. The definition itself is not compared here (that is drift).

    After an update Atlas lists the index as ``status: BUILDING`` and ``queryable: true``
    with the new ``latestDefinition`` while ``statusDetail[].mainIndex`` still serves the old
    definition version and the new one is a ``stagedIndex`` (the documented sample output).
    So the latest definition serves only when the status is READY (or not given), no host
    has a staged index, and each host's main index is at ``latestDefinitionVersion`` (where
    both versions are given). Self-managed mongot lists no status at all: that is ``ok``
    ("status not reported"), since nothing would ever tell a wait that the build ended.
    """
    if found is None:
        return "missing", ""
    details = [host for host in found.get("statusDetail") or [] if isinstance(host, dict)]
    if "status" not in found and "queryable" not in found and not details:
        return "ok", "status not reported by this deployment"
    status = str(found.get("status", "")).upper()

    def states(part: str) -> list[str]:
        return [
            str(host[part].get("status", "")).upper()
            for host in details
            if isinstance(host.get(part), dict)
        ]

    staged_states = states("stagedIndex")
    # A failed index being fixed (an update staged a new definition that has not failed) is
    # building: what it will serve is the staged one.
    rebuilding = any(state != "FAILED" for state in staged_states)
    failed = "FAILED" in staged_states or (
        (status == "FAILED" or "FAILED" in states("mainIndex")) and not rebuilding
    )
    if failed:
        return "failed", _failure_message(found)
    latest = _version(found.get("latestDefinitionVersion"))
    serving = [
        _version(host["mainIndex"].get("definitionVersion"))
        for host in details
        if isinstance(host.get("mainIndex"), dict)
    ]
    behind = [v for v in serving if latest is not None and v is not None and v != latest]
    staged = any(isinstance(host.get("stagedIndex"), dict) for host in details)
    if status in ("PENDING", "BUILDING") or staged or behind:
        old = behind[0] if behind else None
        if old is not None:
            return "building", f"serving definition v{old} while v{latest} builds"
        return "building", status.lower() or "building"
    if status in ("DELETING", "DOES_NOT_EXIST"):
        return "missing", status.lower()
    if "queryable" in found and not found.get("queryable"):
        return "building", status.lower() or "not queryable"
    if status == "STALE":
        return "ok", "stale: queryable, but Atlas reports it stopped following new writes"
    return "ok", ""


class IndexManager:
    """Creates and checks the indexes of every collection in the catalog.

    >>> manager = IndexManager(connection, embedder.signature)   # doctest: +SKIP
    >>> await manager.setup()                                    # doctest: +SKIP
    """

    def __init__(
        self,
        connection: Connection,
        signature: EmbeddingSignature,
        *,
        catalog: IndexCatalog | None = None,
    ) -> None:
        self.connection = connection
        self.signature = signature
        #: The layout ``setup`` is putting in place while it runs.
        self._setting_up: Layout | None = None
        self.catalog = catalog or connection.index_catalog(
            dimensions=signature.dimensions, similarity=signature.similarity
        )

    @property
    def tier(self) -> str:
        return self.connection.tier

    # --- embedding record -----------------------------------------------------------------

    async def embedding_state(self) -> IndexState:
        meta = self.connection.collection(META_COLLECTION)
        stored = await meta.find_one({"_id": EMBEDDING_META_ID})
        name = self.connection.collection_name(META_COLLECTION)
        if stored is None:
            return IndexState(name, "embedding", "embedding", "missing", "no embedder recorded yet")
        reason = embedding_drift(stored, self.signature)
        if reason:
            return IndexState(name, "embedding", "embedding", "drift", reason)
        return IndexState(name, "embedding", "embedding", "ok", self.signature.describe())

    async def check_embedding(self) -> None:
        """Raise :class:`EmbeddingMismatchError` if stored data was embedded differently."""
        state = await self.embedding_state()
        if state.state == "drift":
            raise EmbeddingMismatchError(state.detail)

    async def _record_embedding(self) -> IndexState:
        meta = self.connection.collection(META_COLLECTION)
        signature = self.signature
        await meta.update_one(
            {"_id": EMBEDDING_META_ID},
            {
                "$setOnInsert": {
                    "provider": signature.provider,
                    "model": signature.model,
                    "dimensions": signature.dimensions,
                    "similarity": signature.similarity,
                    "recorded_at": datetime.now(UTC),
                }
            },
            upsert=True,
        )
        return await self.embedding_state()

    # --- status ---------------------------------------------------------------------------

    async def _regular_states(self, spec: CollectionSpec) -> list[IndexState]:
        name = self.connection.collection_name(spec.name)
        existing = {
            index["name"]: index
            for index in await _driver.list_indexes(self.connection.collection(spec.name))
        }
        states = []
        for index in spec.indexes:
            kind = "text" if _is_text(index) else "regular"
            if not index.applies_to(self.tier):
                states.append(IndexState(name, index.name, kind, "not used", f"{self.tier} tier"))
            elif index.name not in existing:
                states.append(IndexState(name, index.name, kind, "missing"))
            else:
                why = _compare_regular(index, existing[index.name])
                if why:
                    states.append(
                        IndexState(
                            name,
                            index.name,
                            kind,
                            "drift",
                            f"{why}; drop it (`agent-memory indexes drop`) and run setup again",
                        )
                    )
                else:
                    states.append(IndexState(name, index.name, kind, "ok"))
        for retired in retired_present(spec, existing):
            detail = f"replaced by {retired.replaced_by}; `agent-memory indexes setup` drops it"
            states.append(IndexState(name, retired.name, "regular", "drift", detail))
        return states

    async def _search_states(
        self, spec: CollectionSpec, *, refused_is_unknown: bool = False
    ) -> list[IndexState]:
        """The state of each search index of ``spec``. With ``refused_is_unknown``, a listing
        the server refuses (M0 and Flex clusters refuse ``$listSearchIndexes`` with code
        8000, a user may lack the privilege) makes them ``unknown``, with the reason, instead
        of raising; a transient error is raised either way."""
        name = self.connection.collection_name(spec.name)
        if self.tier != "atlas":
            return [
                IndexState(
                    name, index.name, index.type, "not used", "no Atlas Search on this server"
                )
                for index in spec.search_indexes
            ]
        try:
            listed = await _driver.list_search_indexes(self.connection.collection(spec.name))
        except pm.OperationFailure as exc:
            if not refused_is_unknown or classify_refusal(exc) == "transient":
                raise
            reason = (
                f"the server refused to list search indexes ({first_line(exc)}); "
                "run `agent-memory indexes status` as the provisioning user, or see the "
                "indexes in the Atlas UI (M0 and Flex clusters list none)"
            )
            return [
                IndexState(name, index.name, index.type, "unknown", reason)
                if self._searched(index)
                else self._unused(name, index)
                for index in spec.search_indexes
            ]
        existing = {index["name"]: index for index in listed}
        return [
            self._search_state(name, index, existing.get(index.name))
            if self._searched(index)
            else self._unused(name, index, exists=index.name in existing)
            for index in spec.search_indexes
        ]

    @property
    def layout(self) -> Layout:
        """The layout whose indexes are judged: the one setup is putting in place while it
        runs, else the one this process searches with."""
        return self._setting_up or self.connection.search_layout

    def _searched(self, index: SearchIndexSpec) -> bool:
        """Whether the layout searches ``index``: the vector layout has no text indexes
        (:mod:`~agent_memory.mongo.search.layout`)."""
        return not (self.layout == "vector" and index.type == "search")

    @staticmethod
    def _unused(
        collection: str, index: SearchIndexSpec, *, exists: bool = False, detail: str = ""
    ) -> IndexState:
        detail = detail or (
            "exists, but the vector layout does not search it (`agent-memory indexes drop` "
            "removes it with the others)"
            if exists
            else "vector layout: keywords are ranked in the framework"
        )
        return IndexState(collection, index.name, index.type, "not used", detail)

    def _search_state(
        self, collection: str, spec: SearchIndexSpec, found: dict[str, Any] | None
    ) -> IndexState:
        if found is None:
            return IndexState(collection, spec.name, spec.type, "missing")
        definition = found.get("latestDefinition") or found.get("definition") or {}
        differences = _differences(spec.definition, definition)
        if differences:
            return IndexState(
                collection,
                spec.name,
                spec.type,
                "drift",
                "; ".join(differences[:3]) + "; run `agent-memory indexes setup --update`",
            )
        state, detail = serving_state(found)
        return IndexState(collection, spec.name, spec.type, state, detail)

    async def status(self) -> list[IndexState]:
        """The state of every index and of the embedding record. Search indexes the server
        will not list are ``unknown``, with the reason."""
        with translate_errors("reading index status"):
            states: list[IndexState] = []
            for spec in self.catalog.collections.values():
                states += await self._regular_states(spec)
                search = await self._search_states(spec, refused_is_unknown=True)
                states += search
                self._note_serving(spec, search)
            states.append(await self.embedding_state())
        return states

    def _note_serving(self, spec: CollectionSpec, states: list[IndexState]) -> None:
        """Tell this process's searchers that ``spec``'s search indexes were just seen
        serving, so their first-use check need not list them again."""
        if (
            self.tier == "atlas"
            and states
            and all(state.state in ("ok", "not used") for state in states)
        ):
            note_search_indexes_serving(
                self.connection.db.name, self.connection.collection_name(spec.name)
            )

    async def validate(self) -> list[IndexState]:
        """Only the problems: missing, drifted or failed indexes, search indexes the server
        would not list (``unknown``: not known to be in place), and a changed embedder."""
        return [state for state in await self.status() if state.problem]

    # --- setup ----------------------------------------------------------------------------

    async def setup(
        self,
        *,
        wait: bool = True,
        timeout: float = 300.0,
        update: bool = False,
        on_progress: Callable[[IndexState], None] | None = None,
        poll_interval: float = 1.0,
    ) -> list[IndexState]:
        """Create what is missing. Idempotent: existing matching indexes are left alone.

        On the Atlas tier, search indexes build asynchronously; with ``wait`` their state is
        polled (every ``poll_interval`` seconds, backing off to 10) until each one's latest
        definition serves queries (:func:`serving_state`; an updated index keeps answering
        with its old definition while the new one builds).

        Raises :class:`EmbeddingMismatchError` when the data was embedded differently, and
        :class:`StorageError` when Atlas search indexes are not queryable within ``timeout``,
        or when the cluster refuses another search index (its tier's limit).
        """
        check_number(timeout, "timeout", minimum=0)
        check_number(poll_interval, "poll_interval", above=0)
        notify = on_progress or (lambda state: None)
        started = time.monotonic()
        waiting = (started + timeout, poll_interval)
        results: list[IndexState] = []
        with translate_errors("setting up indexes"):
            await self.check_embedding()
            for spec in self.catalog.collections.values():
                await ensure_collection(
                    self.connection.db, self.connection.collection_name(spec.name)
                )
                migrate = MIGRATIONS.get(spec.name)
                if migrate is not None:
                    await migrate(self.connection.collection(spec.name))
                for state in await self._setup_regular(spec):
                    results.append(state)
                    notify(state)
                if self.tier == "atlas":
                    for state in await self._setup_search(
                        spec, "vectorSearch", update=update, waiting=waiting
                    ):
                        results.append(state)
                        notify(state)
            layout: Layout = "full"
            reason = ""
            if self.tier == "atlas":
                states, layout, reason = await self._setup_text_indexes(
                    update=update, waiting=waiting
                )
                for state in states:
                    results.append(state)
                    notify(state)
            results.append(await self._record_embedding())
            if self.tier == "atlas":
                self._setting_up = layout
                try:
                    if layout == "vector":  # no text index to wait for: record it now
                        await self._record_layout(layout, reason, waited=False)
                    if wait:
                        await self._wait_queryable(
                            timeout=timeout, notify=notify, interval=poll_interval
                        )
                    if layout == "full":
                        await self._record_layout(layout, reason, waited=wait)
                finally:
                    self._setting_up = None
        created = sum(1 for state in results if state.state in ("created", "updated"))
        logger.info(
            "indexes_setup_completed",
            tier=self.tier,
            created=created,
            problems=sum(1 for state in results if state.problem),
            duration_ms=round((time.monotonic() - started) * 1000),
        )
        return results

    async def _setup_regular(self, spec: CollectionSpec) -> list[IndexState]:
        states = []
        retired = {index.name for index in spec.retired}
        for state in await self._regular_states(spec):
            if state.name in retired:
                continue  # dropped below, once its replacement exists
            if state.state != "missing":
                states.append(state)
                continue
            index = next(index for index in spec.indexes if index.name == state.name)
            model = IndexModel(list(index.key), name=index.name, **index.options)
            try:
                await self.connection.collection(spec.name).create_indexes([model])
            except pm.OperationFailure as exc:
                if exc.code in (85, 86):  # IndexOptionsConflict / IndexKeySpecsConflict
                    states.append(
                        IndexState(
                            state.collection, index.name, state.kind, "drift", str(exc)[:200]
                        )
                    )
                    continue
                raise
            states.append(IndexState(state.collection, index.name, state.kind, "created"))
        collection = self.connection.collection(spec.name)
        for old in await retire_indexes(collection, spec):
            name = self.connection.collection_name(spec.name)
            detail = f"replaced by {old.replaced_by}"
            states.append(IndexState(name, old.name, "regular", "dropped", detail))
        return states

    async def _setup_text_indexes(
        self, *, update: bool, waiting: tuple[float, float]
    ) -> tuple[list[IndexState], Layout, str]:
        """The text indexes, after every vector index, and the layout they leave (with why):
        on ``auto``, a cluster that refuses one for its search-index limit (M0 takes three)
        gets the vector layout, and the text indexes this run created are dropped again (they
        hold slots the layout exists to save); on ``full`` that refusal stops setup."""
        setting = self.connection.settings.atlas_layout
        if setting == "vector":
            return (
                self._all_unused(),
                "vector",
                "AGENT_MEMORY_ATLAS_LAYOUT=vector when setup ran",
            )
        states: list[IndexState] = []
        self._setting_up = "full"
        try:
            for spec in self.catalog.collections.values():
                states += await self._setup_search(spec, "search", update=update, waiting=waiting)
        except _LimitReached as exc:
            if setting == "full":
                raise
            reason = f"the cluster refused a text index for its search-index limit ({exc.index})"
            dropped = await self._drop_created(states)
            logger.warning(
                "search_layout_vector",
                reason=reason,
                consequence="keywords are ranked in the framework (BM25 over each tenant's "
                "documents)",
                remedy="on a cluster that takes six search indexes (Flex, M10+), run "
                "`agent-memory indexes setup` again",
                dropped=dropped,
            )
            return self._all_unused(dropped), "vector", reason
        finally:
            self._setting_up = None
        return states, "full", ""

    def _all_unused(self, dropped: list[str] | None = None) -> list[IndexState]:
        return [
            self._unused(
                self.connection.collection_name(spec.name),
                index,
                detail="created, then dropped again: the cluster has no room for the others"
                if index.name in (dropped or [])
                else "",
            )
            for spec in self.catalog.collections.values()
            for index in spec.search_indexes
            if index.type == "search"
        ]

    async def _drop_created(self, states: list[IndexState]) -> list[str]:
        """Drop the text indexes this run created before the limit stopped it (best effort:
        one that cannot be dropped stays, and `indexes status` shows it)."""
        dropped = []
        by_name = {
            self.connection.collection_name(spec.name): spec
            for spec in self.catalog.collections.values()
        }
        for state in states:
            if state.state != "created":
                continue
            spec = by_name[state.collection]
            try:
                await self.connection.collection(spec.name).drop_search_index(state.name)
            except pm.PyMongoError as exc:
                logger.warning(
                    "search_index_not_dropped",
                    collection=state.collection,
                    index=state.name,
                    reason=first_line(exc),
                )
                continue
            dropped.append(state.name)
        return dropped

    async def _record_layout(self, layout: Layout, reason: str, *, waited: bool) -> None:
        """Record the layout for every process of the deployment. The vector layout at once;
        the full one only once its text indexes serve (a process that switched to them
        before would find nothing): after the wait, or, without one, when the listing shows
        them serving already (else the next setup records it)."""
        if layout == "full" and not waited:
            states = [
                state
                for spec in self.catalog.collections.values()
                for state in await self._search_states(spec, refused_is_unknown=True)
                if state.kind == "search"
            ]
            if any(state.state in ("building", "missing", "failed") for state in states):
                logger.info(
                    "search_layout_not_recorded",
                    reason="the text indexes are not serving yet",
                    remedy="run `agent-memory indexes setup` again once they are",
                )
                return
        await record_layout(self.connection.collection(META_COLLECTION), layout, reason)
        setting = self.connection.settings.atlas_layout
        self.connection.layout_watch.set(*choose_layout(setting, layout, reason))

    async def _setup_search(
        self, spec: CollectionSpec, kind: str, *, update: bool, waiting: tuple[float, float]
    ) -> list[IndexState]:
        """Create or update ``spec``'s search indexes of type ``kind``. ``waiting`` is (the
        monotonic deadline, the poll interval) for indexes an earlier drop is still deleting."""
        collection = self.connection.collection(spec.name)
        states = []
        # M0 and Flex clusters refuse to list search indexes but create them: an index whose
        # state cannot be read ("unknown") is created, and one that exists already is left.
        for state in await self._search_states(spec, refused_is_unknown=True):
            index = next(index for index in spec.search_indexes if index.name == state.name)
            if index.type != kind:
                continue
            if state.state == "missing" and state.detail == "deleting":
                # Atlas deletes asynchronously and the name stays taken meanwhile.
                state = await self._until_deleted(spec, index, *waiting)
            if state.state in ("missing", "unknown"):
                try:
                    await collection.create_search_indexes(
                        [
                            SearchIndexModel(
                                definition=index.definition, name=index.name, type=index.type
                            )
                        ]
                    )
                except pm.OperationFailure as exc:
                    # Code 20 (IllegalOperation) alone says too little: the message decides.
                    if _TOO_MANY_WORDS in str(exc).lower():
                        reached = _LimitReached(self._limit_reached(state))
                        reached.index = f"{state.collection}.{index.name}"
                        raise reached from exc
                    if state.state == "unknown" and (
                        exc.code == _ALREADY_EXISTS or "already exists" in str(exc).lower()
                    ):
                        states.append(
                            IndexState(
                                state.collection,
                                index.name,
                                index.type,
                                "unknown",
                                "exists; " + state.detail,
                            )
                        )
                        continue
                    raise
                states.append(IndexState(state.collection, index.name, index.type, "created"))
            elif state.state == "drift" and update:
                await collection.update_search_index(index.name, index.definition)
                states.append(
                    IndexState(state.collection, index.name, index.type, "updated", state.detail)
                )
            else:
                states.append(state)
        return states

    async def _until_deleted(
        self, spec: CollectionSpec, index: SearchIndexSpec, deadline: float, interval: float
    ) -> IndexState:
        """The state of ``index`` once a deletion under way has ended (polled every
        ``interval`` seconds, backing off to 10); :class:`StorageError` at ``deadline``."""
        delay = interval
        while True:
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 10.0)
            state = next(
                found
                for found in await self._search_states(spec, refused_is_unknown=True)
                if found.name == index.name
            )
            if not (state.state == "missing" and state.detail == "deleting"):
                return state
            if time.monotonic() >= deadline:
                raise StorageError(
                    f"search index {state.collection}.{index.name} is still being deleted "
                    "by an earlier drop; run `agent-memory indexes setup` again once "
                    "`agent-memory indexes status` shows it missing"
                )

    def _limit_reached(self, state: IndexState) -> str:
        """The one line setup stops with when the cluster takes no more search indexes."""
        indexes = [i for spec in self.catalog.collections.values() for i in spec.search_indexes]
        vector = sum(1 for index in indexes if index.type == "vectorSearch")
        if state.kind == "search":
            remedy = (
                f"the full layout needs {len(indexes)}; set AGENT_MEMORY_ATLAS_LAYOUT=auto "
                f"or vector to search with the {vector} vector indexes and rank keywords in "
                "the framework, or use a Flex or dedicated (M10+) cluster"
            )
        else:
            remedy = (
                f"agent_memory needs at least {vector} (the vector layout); free search "
                "indexes other applications hold on this cluster, or use a Flex or dedicated "
                "(M10+) cluster"
            )
        return (
            f"Atlas refused to create search index {state.collection}.{state.name}: the "
            f"cluster's search-index limit was reached (M0 free clusters allow 3, Flex "
            f"clusters 10); {remedy}, then run `agent-memory indexes setup` again"
        )

    async def _wait_queryable(
        self, *, timeout: float, notify: Callable[[IndexState], None], interval: float
    ) -> None:
        deadline = time.monotonic() + timeout
        delay = interval
        while True:
            pending = []
            for spec in self.catalog.collections.values():
                # An index whose state the server will not list cannot be waited for.
                states = await self._search_states(spec, refused_is_unknown=True)
                self._note_serving(spec, states)
                for state in states:
                    if state.state == "failed":
                        raise StorageError(
                            f"search index {state.name} failed to build: {state.detail}"
                        )
                    if state.state in ("building", "missing"):
                        pending.append(state)
            if not pending:
                return
            for state in pending:
                notify(state)
            if time.monotonic() >= deadline:
                names = ", ".join(
                    f"{s.collection}.{s.name} ({s.detail or s.state})" for s in pending
                )
                raise StorageError(
                    f"search indexes not queryable after {timeout:.0f} s: {names}; they keep "
                    "building on the server, run `agent-memory indexes status` later"
                )
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 10.0)

    # --- drop -----------------------------------------------------------------------------

    async def drop(self, *, include_embedding_record: bool = False) -> list[IndexState]:
        """Drop the indexes this framework defines (never ``_id``, never data)."""
        results = []
        with translate_errors("dropping indexes"):
            for spec in self.catalog.collections.values():
                collection = self.connection.collection(spec.name)
                name = self.connection.collection_name(spec.name)
                existing = {index["name"] for index in await _driver.list_indexes(collection)}
                for index in spec.indexes:
                    if index.name in existing:
                        await collection.drop_index(index.name)
                        results.append(IndexState(name, index.name, "regular", "dropped"))
                if self.tier == "atlas":
                    found = {i["name"] for i in await _driver.list_search_indexes(collection)}
                    for search_index in spec.search_indexes:
                        if search_index.name in found:
                            await collection.drop_search_index(search_index.name)
                            results.append(
                                IndexState(name, search_index.name, search_index.type, "dropped")
                            )
            if include_embedding_record:
                await self.connection.collection(META_COLLECTION).delete_one(
                    {"_id": EMBEDDING_META_ID}
                )
        logger.info("indexes_dropped", count=len(results))
        return results
