"""The one way into the database: a URI, a database handle the app already has, or the
embedded default.

>>> import asyncio
>>> from agent_memory import connect
>>> async def main():                              # doctest: +SKIP
...     async with await connect() as conn:        # embedded server when MONGODB_URI is unset
...         print(conn.tier, conn.capabilities.describe())
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
import weakref
from datetime import UTC
from os import PathLike
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from pymongo import AsyncMongoClient
from pymongo import errors as pm
from pymongo.driver_info import DriverInfo

from agent_memory._log import get_logger
from agent_memory._version import __version__
from agent_memory.config import Settings, load_settings, redact_uri
from agent_memory.errors import ConfigurationError
from agent_memory.mongo import _driver
from agent_memory.mongo._errors import map_error
from agent_memory.mongo.capabilities import (
    Capabilities,
    SearchTier,
    choose_tier,
    probe_capabilities,
    tier_reason,
)
from agent_memory.mongo.catalog import IndexCatalog
from agent_memory.mongo.embedded import EmbeddedServer
from agent_memory.mongo.embedded_takeover import START_WAIT, Standby, serve_or_share
from agent_memory.mongo.search.layout import Layout, LayoutWatch, choose_layout, read_layout
from agent_memory.mongo.search.snapshots import GENERATIONS, KeptBudget, TokenReads

__all__ = ["META_COLLECTION", "Connection", "connect", "ensure_collection"]

logger = get_logger(__name__)

META_COLLECTION = "meta"
_CODEC = CodecOptions(tz_aware=True, tzinfo=UTC, uuid_representation=UuidRepresentation.STANDARD)
# Options naming files the driver opens while the client is built (lower case -> spelling).
_TLS_FILE_NAMES = ("tlsCertificateKeyFile", "tlsCAFile", "tlsCRLFile")
_TLS_FILE_OPTIONS = {name.lower(): name for name in _TLS_FILE_NAMES}


class Connection:
    """A database handle plus what the framework learnt about the server behind it.

    A client or embedded server this object opened is closed by :meth:`close`; a database
    handle passed in by the application stays the application's to close. So is the standby
    of a connection that shares another program's embedded server (and the server it took
    over, if that program went; :mod:`~agent_memory.mongo.embedded_takeover`).
    """

    def __init__(
        self,
        *,
        db: Any,
        settings: Settings,
        capabilities: Capabilities,
        tier: SearchTier,
        client: Any | None = None,
        embedded: EmbeddedServer | None = None,
        standby: Standby | None = None,
        search_layout: Layout = "full",
        layout_reason: str = "",
    ) -> None:
        self.db = db
        self.settings = settings
        self.capabilities = capabilities
        self.tier: SearchTier = tier
        #: Atlas only: which search indexes to search (:mod:`~agent_memory.mongo.search.layout`),
        #: followed while the process runs.
        self.layout_watch = LayoutWatch(
            db[settings.collection_prefix + META_COLLECTION],
            settings.atlas_layout,
            search_layout,
            layout_reason,
        )
        #: Generation tokens of the kept search corpora, read together by every store of this
        #: connection (:class:`~agent_memory.mongo.search.snapshots.TokenReads`).
        generations = settings.collection_prefix + GENERATIONS
        self.token_reads = TokenReads(
            db[generations],
            local=None if embedded is None else embedded._file_reads(db.name, generations),
        )
        #: The memory every kept search corpus of this connection shares
        #: (:class:`~agent_memory.mongo.search.snapshots.KeptBudget`, ``search_cache_mb``).
        self.kept_budget = KeptBudget(settings.search_cache_mb * 2**20)
        self._client = client
        self._embedded = embedded
        self._standby = standby
        self._closed = False
        # Writes started in the background on this connection (access statistics, session
        # activity, ...): finished before it closes. Weak, so a memory object that is gone
        # is not kept alive by its connection.
        self._background: weakref.WeakSet[Any] = weakref.WeakSet()
        self._catalogs: dict[tuple[int, str], IndexCatalog] = {}

    @property
    def search_layout(self) -> Layout:
        """The Atlas search layout this process searches with (as last read)."""
        return self.layout_watch.layout

    @property
    def layout_reason(self) -> str:
        return self.layout_watch.reason

    @property
    def tier_reason(self) -> str:
        """One line: the search tier in use and why (the setting, or what the probe found);
        on Atlas, also which search indexes it uses."""
        line = tier_reason(self.capabilities, self.settings.search_tier, self.tier)
        if self.tier == "atlas" and self.layout_reason:
            line += f"; search layout {self.search_layout}: {self.layout_reason}"
        return line

    @property
    def client(self) -> Any:
        return self.db.client

    @property
    def uses_motor(self) -> bool:
        return _driver.is_motor(self.db)

    def collection(self, name: str) -> Any:
        """The collection ``name``, with the configured prefix applied."""
        return self.db[self.settings.collection_prefix + name]

    def collection_name(self, name: str) -> str:
        return self.settings.collection_prefix + name

    def index_catalog(self, *, dimensions: int, similarity: str = "cosine") -> IndexCatalog:
        """The index catalog for one embedder's vectors, with this connection's collection
        prefix; made once per connection and shared by every store on it."""
        key = (dimensions, similarity)
        catalog = self._catalogs.get(key)
        if catalog is None:
            catalog = IndexCatalog.load(
                dimensions=dimensions,
                similarity=similarity,
                prefix=self.settings.collection_prefix,
            )
            self._catalogs[key] = catalog
        return catalog

    async def ping(self) -> None:
        """Ask the server to answer; :class:`~agent_memory.errors.StorageUnavailableError`
        (or another storage error) when it cannot."""
        try:
            await self.db.client.admin.command("ping")
        except pm.PyMongoError as exc:
            raise map_error(exc, "pinging the database") from exc

    def track(self, background: Any) -> None:
        """Have :meth:`close` first wait for ``background`` (an object with ``async
        drain()``, such as the memories' background writes)."""
        self._background.add(background)

    async def close(self) -> None:
        """Finish the writes started in the background on this connection, then close what
        this connection opened. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for background in list(self._background):
            try:
                await background.drain()
            except Exception as exc:  # closing goes on; the failure is the writes' own
                logger.warning("background_drain_failed", error=type(exc).__name__)
        if self._client is not None:
            await self._client.close()
        if self._standby is not None:
            await self._standby.astop()
        if self._embedded is not None:
            await self._embedded.astop()

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _first_steps(
    db: Any, settings: Settings, *, embedded: bool
) -> tuple[Capabilities, SearchTier, Layout, str]:
    """What :func:`connect` asks a server before handing it out: that it answers, its meta
    collection (created when missing), what it can do, and the search tier and layout."""
    await db.client.admin.command("ping")
    meta = settings.collection_prefix + META_COLLECTION
    await ensure_collection(db, meta)
    capabilities = await probe_capabilities(
        db, probe_collection=meta, embedded=embedded, requested_tier=settings.search_tier
    )
    tier = choose_tier(capabilities, settings.search_tier)
    layout: Layout = "full"
    layout_reason = ""
    if tier == "atlas":
        recorded, why = None, ""
        if settings.atlas_layout == "auto":  # a layout set explicitly reads nothing
            recorded, why = await read_layout(db[meta])
        layout, layout_reason = choose_layout(settings.atlas_layout, recorded, why)
    return capabilities, tier, layout, layout_reason


def _new_client(uri: str, settings: Settings, options: dict[str, Any]) -> AsyncMongoClient:
    timeout = settings.connect_timeout_ms
    try:
        return AsyncMongoClient(
            uri,
            **options,
            serverSelectionTimeoutMS=timeout,
            connectTimeoutMS=timeout,
            appname="agent-memory",
            driver=DriverInfo("agent-memory", __version__),
            tz_aware=True,
            tzinfo=UTC,
            uuidRepresentation="standard",
        )
    except (pm.ConfigurationError, pm.InvalidURI, ValueError, TypeError) as exc:
        raise ConfigurationError(
            f"the MongoDB URI {redact_uri(uri)!r} is not valid: {exc}"
        ) from None
    except OSError as exc:
        # The driver reads TLS files while building the client: a missing or unreadable
        # file surfaces as FileNotFoundError/IsADirectoryError/ssl.SSLError, not as its own
        # ConfigurationError. The message names the option and the file, never the URI's
        # secrets (a key file's password is an option too).
        raise ConfigurationError(_tls_file_problem(uri, options, exc)) from None


def _tls_file_problem(uri: str, options: dict[str, Any], exc: OSError) -> str:
    """A one-line explanation of a TLS file the driver could not load."""
    given: dict[str, str] = {}
    for key, value in parse_qsl(urlsplit(uri).query):
        if key.lower() in _TLS_FILE_OPTIONS:
            given[_TLS_FILE_OPTIONS[key.lower()]] = value
    for key, value in options.items():
        if key.lower() in _TLS_FILE_OPTIONS and isinstance(value, str | PathLike):
            given[_TLS_FILE_OPTIONS[key.lower()]] = str(value)
    # pymongo 4.20.1 and later keep only the errno of a file given in the URI (its message no
    # longer names the file or the reason): say the reason from the errno, and find the file
    # by opening each one given.
    reason = (os.strerror(exc.errno) if exc.errno else None) or exc.strerror
    reason = reason or exc.__class__.__name__
    if isinstance(exc, ssl.SSLError):
        reason = f"not a usable PEM file ({getattr(exc, 'reason', None) or exc.__class__.__name__})"
    named = [name for name, value in given.items() if exc.filename and value == exc.filename]
    if not named and len(given) > 1 and not isinstance(exc, ssl.SSLError):
        named = [name for name, value in given.items() if not _readable(value)]
    if not named and len(given) == 1:
        named = list(given)
    if not given:  # not a file this module knows of: say what failed, guess no option
        return f"the MongoDB client for {redact_uri(uri)!r} could not be created: {reason}"
    if named:
        where = f"{named[0]}={given[named[0]]!r}"
    else:
        where = "one of the TLS file options (" + ", ".join(given) + ")"
    return (
        f"{where} in the MongoDB connection settings cannot be loaded: {reason}; "
        f"check the path and permissions (URI {redact_uri(uri)!r})"
    )


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


async def ensure_collection(db: Any, name: str) -> None:
    if name not in await db.list_collection_names(filter={"name": name}):
        try:
            await db.create_collection(name)
        except pm.CollectionInvalid:
            pass  # created concurrently by another process
        except pm.OperationFailure as exc:
            # NamespaceExists; the embedded engine sends the message without the code.
            if exc.code != 48 and "already exists" not in str(exc):
                raise


async def connect(
    settings: Settings | None = None,
    *,
    uri: str | None = None,
    database: Any | None = None,
    client_options: dict[str, Any] | None = None,
) -> Connection:
    """Connect to MongoDB and learn what the server supports.

    - ``database``: a ``pymongo`` ``AsyncDatabase`` (or a Motor database) the app already has.
    - ``uri``: a connection string; overrides ``MONGODB_URI``.
    - neither: ``MONGODB_URI`` from the settings, or, when that is unset, the embedded server
      in ``settings.data_dir`` (shared with another process that already serves it, and
      taken over, on the same port, when that process goes).

    ``client_options`` go to ``AsyncMongoClient`` as they are (for example
    ``event_listeners`` for command monitoring, ``maxPoolSize``); they do not apply to a
    ``database`` handed in.

    Unreachable servers fail within ``connect_timeout_ms`` with
    :class:`~agent_memory.errors.StorageUnavailableError` (an embedded server shared with a
    program that ends meanwhile: once this process cannot take it over, or after 30 s);
    refused credentials with :class:`~agent_memory.errors.AuthenticationError`.
    """
    if uri is not None and database is not None:
        raise ConfigurationError("pass either uri or database, not both")
    settings = settings or load_settings()

    client: Any | None = None
    embedded: EmbeddedServer | None = None
    standby: Standby | None = None
    if database is not None:
        if not hasattr(database, "client") or not hasattr(database, "name"):
            raise ConfigurationError(
                f"database must be a pymongo AsyncDatabase or a Motor database, "
                f"got {type(database).__name__}"
            )
        if _driver.is_motor(database):
            logger.warning(
                "motor_database_used",
                detail="Motor is deprecated; pass a pymongo AsyncDatabase when you can",
            )
        db = database.with_options(codec_options=_CODEC)
        target = "application database handle"
        is_embedded = False
    else:
        target_uri = uri or settings.uri()
        is_embedded = target_uri is None
        if target_uri is None:
            target_uri, embedded, standby = await serve_or_share(
                settings.data_dir, host=settings.embedded_host, port=settings.embedded_port
            )
        client = _new_client(target_uri, settings, dict(client_options or {}))
        db = client.get_database(settings.database, codec_options=_CODEC)
        target = redact_uri(target_uri)

    try:
        # A shared server may go away while this program connects (its owner ended just
        # then). A standby serves the directory again on the same port, which on a busy
        # machine can take longer than the connect timeout; the steps (they create only what
        # is missing, and read) are run again while this process may take the directory over,
        # for as long as a program starting beside another waits for the other's server.
        started = time.monotonic()
        while True:
            try:
                capabilities, tier, layout, layout_reason = await _first_steps(
                    db, settings, embedded=is_embedded
                )
                break
            except pm.AutoReconnect as exc:
                waited = time.monotonic() - started
                if standby is None or not standby.may_serve or waited >= START_WAIT:
                    raise map_error(exc, f"connecting to {target}") from exc
                logger.debug("embedded_server_went_while_connecting", error=type(exc).__name__)
                await asyncio.sleep(0.05)
            except pm.PyMongoError as exc:
                raise map_error(exc, f"connecting to {target}") from exc
    except BaseException:  # a refusal, a cancellation, anything: leave nothing open
        if client is not None:
            await asyncio.shield(client.close())
        if standby is not None:
            await asyncio.shield(standby.astop())
        if embedded is not None:
            await asyncio.shield(embedded.astop())
        raise

    connection = Connection(
        db=db,
        settings=settings,
        capabilities=capabilities,
        tier=tier,
        client=client,
        embedded=embedded,
        standby=standby,
        search_layout=layout,
        layout_reason=layout_reason,
    )
    logger.info(
        "database_connected",
        target=target,
        tier=tier,
        database=db.name,
        reason=connection.tier_reason,
    )
    return connection
