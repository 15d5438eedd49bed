"""A lease in MongoDB: one holder at a time for a named job, taken over when its holder died.

Each lease is one document in the ``locks`` collection (the configured prefix applies),
``_id`` the lease's name::

    {"_id": "maintenance", "holder": "host:pid:uuid", "token": "...", "acquired_at": ...,
     "renewed_at": ..., "expires_at": ..., "released_at": ...}

``holder`` says who holds it (for people); ``token`` is drawn afresh by each :class:`Lease`
object, and only the object that took the lease may renew or release it. Two processes given
the same fixed ``holder`` (``Maintenance(holder="cron")``) therefore still exclude each other.

Taking it is one atomic ``find_one_and_update`` with ``upsert``: it matches the document only
when it is free (expired, released, or without an expiry at all) or already ours; when another
holder's lease is still
valid the filter matches nothing, the upsert tries to insert a second document with the same
``_id`` and the server refuses it (duplicate key), so exactly one of any number of concurrent
callers gets the lease. A holder renews it while working (a background task, every third of
the time to live); a holder that crashed stops renewing, and once ``expires_at`` has passed
the next caller takes the lease over. Releasing sets ``expires_at`` to now and keeps the
document, so the last holder stays visible.

Expiry compares times from the callers' clocks: keep hosts in sync (NTP) and the time to
live well above their skew. A holder that finds its lease taken over (it stalled past the
expiry) learns it at its next renewal, :meth:`Lease.confirm` or :meth:`Lease.release`, and
stops with :class:`LeaseLostError`: its work may have overlapped the other holder's.

>>> lease = Lease(connection, "maintenance", ttl_seconds=600)     # doctest: +SKIP
>>> async with lease:                                              # LeaseHeldError if taken
...     ...                                                         # renewed meanwhile
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo import ReturnDocument
from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.checks import check_id, check_number
from agent_memory.errors import ConflictError, InvalidInputError
from agent_memory.mongo._errors import map_error, translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.stamps import utcnow

__all__ = ["LOCKS", "Lease", "LeaseHeldError", "LeaseLostError", "LeaseState"]

logger = get_logger(__name__)

LOCKS = "locks"


class LeaseHeldError(ConflictError):
    """Another holder has the lease and it has not expired."""

    def __init__(self, name: str, holder: str | None, expires_at: datetime | None) -> None:
        until = f" until {expires_at.isoformat(timespec='seconds')}" if expires_at else ""
        super().__init__(
            f"another run holds the {name!r} lock ({holder or 'unknown holder'}{until}); "
            "it is taken over automatically if that run died"
        )
        self.name = name
        self.holder = holder
        self.expires_at = expires_at


class LeaseLostError(ConflictError):
    """Our lease expired and another holder took it over while we were working."""


@dataclass(frozen=True, slots=True)
class LeaseState:
    """The lease as we took it: ``took_over`` names a holder whose lease had expired."""

    name: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
    took_over: str | None


def default_holder() -> str:
    """``host:pid:random``: says where a run came from and is unique per run."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Lease:
    """A named lease held by ``holder`` (a fresh id per instance unless given)."""

    def __init__(
        self,
        connection: Connection,
        name: str,
        *,
        ttl_seconds: float = 600.0,
        holder: str | None = None,
    ) -> None:
        check_number(ttl_seconds, "ttl_seconds", minimum=0.05, maximum=86_400)
        self.name = check_id(name, "lease name")
        self.holder = default_holder() if holder is None else check_id(holder, "holder")
        self._token = uuid.uuid4().hex
        self.ttl = timedelta(seconds=ttl_seconds)
        self._locks = connection.collection(LOCKS)
        self._renewer: asyncio.Task[None] | None = None
        self._lost = False
        self.state: LeaseState | None = None

    # --- taking and giving back ---------------------------------------------------------------

    async def acquire(self, *, now: datetime | None = None) -> LeaseState:
        """Take the lease or raise :class:`LeaseHeldError`. Taking a lease we hold renews it."""
        now = utcnow() if now is None else now
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise InvalidInputError("now must be a timezone-aware datetime")
        free = {
            "_id": self.name,
            "$or": [
                {"expires_at": {"$lte": now}},
                {"expires_at": None},  # missing too: a document no holder can ever renew
                self._ours(),
            ],
        }
        try:
            before = await self._locks.find_one_and_update(
                free,
                {
                    "$set": {
                        "holder": self.holder,
                        "token": self._token,
                        "acquired_at": now,
                        "renewed_at": now,
                        "expires_at": now + self.ttl,
                        "released_at": None,
                    }
                },
                upsert=True,
                return_document=ReturnDocument.BEFORE,
            )
        except pm.DuplicateKeyError:
            current = await self._current()
            raise LeaseHeldError(
                self.name, current.get("holder"), current.get("expires_at")
            ) from None
        except pm.PyMongoError as exc:
            raise map_error(exc, "taking the maintenance lock") from exc
        took_over = None
        if before is not None and before.get("token") != self._token:
            if before.get("released_at") is None:  # it expired while held: its holder died
                took_over = before.get("holder") or "unknown holder"
        self._lost = False
        self.state = LeaseState(self.name, self.holder, now, now + self.ttl, took_over)
        logger.info(
            "lease_acquired",
            name=self.name,
            holder=self.holder,
            took_over=took_over,
            ttl_s=self.ttl.total_seconds(),
        )
        return self.state

    async def renew(self, *, now: datetime | None = None) -> bool:
        """Push the expiry on; ``False`` (and :meth:`check` raises from then on) when another
        holder has taken the lease over."""
        now = utcnow() if now is None else now
        with translate_errors("renewing the maintenance lock"):
            result = await self._locks.update_one(
                {**self._ours(), "released_at": None},
                {"$set": {"renewed_at": now, "expires_at": now + self.ttl}},
            )
        if result.matched_count == 0:
            self._lost = True
            logger.warning("lease_lost", name=self.name, holder=self.holder)
        return not self._lost

    async def release(self) -> None:
        """Give the lease back. Raises :class:`LeaseLostError` when it is no longer ours
        (another holder took it over: the work done under it may have overlapped), and leaves
        the other holder's lock alone. Idempotent: once released, a second call does nothing."""
        await self._stop_renewing()
        if self.state is None:
            return
        if not self._lost:  # known lost: renew logged it and the lock is the other holder's
            now = utcnow()
            with translate_errors("releasing the maintenance lock"):
                result = await self._locks.update_one(
                    {**self._ours(), "released_at": None},
                    {"$set": {"expires_at": now, "released_at": now}},
                )
            if result.matched_count == 0:
                self._lost = True
                logger.warning("lease_lost", name=self.name, holder=self.holder)
        self.state = None
        if self._lost:
            raise LeaseLostError(
                f"the {self.name!r} lock was taken over by another run before this one "
                "finished (it stalled past its expiry); its work may have overlapped"
            )
        logger.info("lease_released", name=self.name, holder=self.holder)

    async def confirm(self) -> None:
        """Renew now and raise :class:`LeaseLostError` if the lease is no longer ours: call it
        before each step that must not overlap another holder's work."""
        await self.renew()
        self.check()

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if a renewal found the lease taken over."""
        if self._lost:
            raise LeaseLostError(
                f"the {self.name!r} lock was taken over by another run (this run stalled past "
                "its expiry); stopped"
            )

    def _ours(self) -> dict[str, Any]:
        """The lock document as this object holds it."""
        return {"_id": self.name, "holder": self.holder, "token": self._token}

    # --- renewing while held ------------------------------------------------------------------

    def start_renewing(self) -> None:
        """Renew every third of the time to live until :meth:`release`."""
        if self._renewer is None:
            self._renewer = asyncio.create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        interval = self.ttl.total_seconds() / 3
        while True:
            await asyncio.sleep(interval)
            try:
                if not await self.renew():
                    return
            except Exception as exc:  # a blip: the next renewal tries again before expiry
                logger.warning("lease_renewal_failed", name=self.name, error=type(exc).__name__)

    async def _stop_renewing(self) -> None:
        task, self._renewer = self._renewer, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _current(self) -> dict[str, Any]:
        with contextlib.suppress(pm.PyMongoError):
            return await self._locks.find_one({"_id": self.name}) or {}
        return {}

    async def __aenter__(self) -> Lease:
        await self.acquire()
        self.start_renewing()
        return self

    async def __aexit__(self, exc_type: object, *exc_info: object) -> None:
        if exc_type is None:
            await self.release()  # LeaseLostError when the work overlapped another holder's
            return
        await self.release_quietly()  # the body's error is the one to see

    async def release_quietly(self) -> None:
        """:meth:`release` while another error is on its way: a failure to release (or a
        lost lease) is logged, not raised, so it does not replace that error."""
        try:
            await self.release()
        except LeaseLostError:
            pass  # logged as lease_lost
        except Exception as exc:
            logger.warning("lease_release_failed", name=self.name, error=type(exc).__name__)
