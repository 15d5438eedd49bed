"""The SQLite engine the embedded server runs: mongoeco's, with one cost removed.

mongoeco 4.11 checks a newly inserted document's ``_id`` twice: by the primary key of its
storage row, then (``scan_payload_id=True`` on the single-document path, which its wire server
uses for every insert) by decoding every document of the collection and comparing ``_id``\\ s by
BSON equality. The scan only matters when two different storage keys can hold equal ``_id``\\ s,
which is the case for numbers (``1`` and ``1.0``) and values that contain them; mongoeco's own
bulk path already skips it. Every ``_id`` the framework writes is a string, and pymongo's
default is an ObjectId: for those the primary-key lookup is the whole check, so here the scan
is skipped for them and kept for everything else. An insert then costs the same at any
collection size (5 ms instead of 37 ms at 1,000 documents;
``docs/upstream/mongoeco-insert-scan.md``).

If a mongoeco release changes the method this relies on, the engine is used unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any

import structlog
from bson import ObjectId

__all__ = ["engine_class"]

logger = structlog.get_logger(__name__)

_METHOD = "_validate_document_against_unique_indexes"
_UNAMBIGUOUS_IDS = (str, ObjectId)


def engine_class() -> type[Any]:
    """mongoeco's ``SQLiteEngine``, without the whole-collection ``_id`` scan for string and
    ObjectId ``_id``\\ s when this mongoeco has the method it lives in; else unchanged."""
    from mongoeco.engines import SQLiteEngine

    original = getattr(SQLiteEngine, _METHOD, None)
    if original is None or "scan_payload_id" not in inspect.signature(original).parameters:
        logger.debug("mongoeco_engine_unpatched", reason=f"{_METHOD} changed")
        return SQLiteEngine

    class Engine(SQLiteEngine):  # type: ignore[misc, valid-type]
        def _validate_document_against_unique_indexes(  # type: ignore[override]
            self,
            db_name: str,
            coll_name: str,
            document: Any,
            *args: Any,
            scan_payload_id: bool = False,
            **kwargs: Any,
        ) -> None:
            if scan_payload_id and isinstance(document.get("_id"), _UNAMBIGUOUS_IDS):
                scan_payload_id = False
            return original(
                self, db_name, coll_name, document, *args, scan_payload_id=scan_payload_id, **kwargs
            )

    Engine.__name__ = Engine.__qualname__ = "SQLiteEngine"
    return Engine
