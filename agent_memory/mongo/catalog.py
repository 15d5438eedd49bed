"""The index catalog: every collection's index definitions, read from ``atlas_indexes/``.

The JSON files are the single source of truth. Vector fields there carry the defaults for
the production embedder; :meth:`IndexCatalog.load` rewrites ``numDimensions`` and
``similarity`` for the embedder actually configured.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from agent_memory.errors import ConfigurationError
from agent_memory.mongo.search.types import SearchTarget

__all__ = [
    "TENANT_KEY",
    "CollectionSpec",
    "IndexCatalog",
    "IndexSpec",
    "RetiredIndex",
    "SearchIndexSpec",
    "definitions_dir",
    "user_collections",
]

#: The fields every index of a collection holding users' data starts with.
TENANT_KEY = ("agent_id", "user_id")


def definitions_dir() -> Path:
    """Where the definitions are: inside the installed wheel, or in the source checkout."""
    packaged = Path(str(resources.files("agent_memory"))) / "_atlas_indexes"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "atlas_indexes"
    if checkout.is_dir():
        return checkout
    raise ConfigurationError("the index definitions (atlas_indexes/) are missing from the install")


@dataclass(frozen=True, slots=True)
class IndexSpec:
    name: str
    key: tuple[tuple[str, Any], ...]
    options: dict[str, Any]
    tiers: frozenset[str]

    def applies_to(self, tier: str) -> bool:
        return tier in self.tiers


@dataclass(frozen=True, slots=True)
class RetiredIndex:
    """An index an earlier version created and a newer one replaced (``replaced_by``).
    ``indexes setup`` drops it once its replacement exists; ``indexes status`` reports it as
    drift until then. Only an index with this name *and* this key is the framework's."""

    name: str
    key: tuple[tuple[str, Any], ...]
    replaced_by: str

    def matches(self, existing: dict[str, Any] | None) -> bool:
        return existing is not None and list(dict(existing.get("key", {})).items()) == list(
            self.key
        )


@dataclass(frozen=True, slots=True)
class SearchIndexSpec:
    name: str
    type: str  # "vectorSearch" or "search"
    definition: dict[str, Any]

    def filter_paths(self) -> frozenset[str]:
        if self.type == "vectorSearch":
            return frozenset(
                field["path"] for field in self.definition["fields"] if field["type"] == "filter"
            )
        return self._text_fields("token")

    def date_paths(self) -> frozenset[str]:
        """Fields a search can keep to a span of time with this index: ``filter`` fields of
        a vector index (which compare dates), ``date`` fields of a text index."""
        if self.type == "vectorSearch":
            return self.filter_paths()
        return self._text_fields("date")

    def _text_fields(self, kind: str) -> frozenset[str]:
        fields = self.definition.get("mappings", {}).get("fields", {})
        return frozenset(path for path, spec in fields.items() if spec.get("type") == kind)


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    name: str
    indexes: tuple[IndexSpec, ...]
    search_indexes: tuple[SearchIndexSpec, ...]
    retired: tuple[RetiredIndex, ...] = ()

    @property
    def holds_user_data(self) -> bool:
        """Whether documents here belong to one user: an index starts with the tenant's
        fields (``agent_id``, ``user_id``), so they can be found, counted and erased by user."""
        return any(
            tuple(field for field, _ in index.key[:2]) == TENANT_KEY for index in self.indexes
        )

    def search_target(self, prefix: str = "") -> SearchTarget | None:
        """The search target for this collection, or ``None`` if it is not searchable."""
        vector = next((s for s in self.search_indexes if s.type == "vectorSearch"), None)
        text = next((s for s in self.search_indexes if s.type == "search"), None)
        if vector is None or text is None:
            return None
        vector_field = next(f for f in vector.definition["fields"] if f["type"] == "vector")
        text_fields = text.definition["mappings"]["fields"]
        strings = tuple(p for p, spec in text_fields.items() if spec.get("type") == "string")
        text_path: str | tuple[str, ...] = strings[0] if len(strings) == 1 else strings
        # A path is filterable only where both indexes can pre-filter on it.
        filterable = vector.filter_paths() & text.filter_paths()
        return SearchTarget(
            collection=prefix + self.name,
            vector_index=vector.name,
            text_index=text.name,
            vector_path=vector_field["path"],
            text_path=text_path,
            filter_paths=filterable,
            range_paths=vector.date_paths() & text.date_paths(),
        )


class IndexCatalog:
    """All collections' index definitions, for one embedder's dimensions and similarity."""

    def __init__(self, collections: dict[str, CollectionSpec], *, prefix: str = "") -> None:
        self.collections = collections
        self.prefix = prefix

    @classmethod
    def load(
        cls,
        *,
        dimensions: int,
        similarity: str = "cosine",
        prefix: str = "",
        directory: Path | None = None,
    ) -> IndexCatalog:
        collections: dict[str, CollectionSpec] = {}
        for source, raw in _definitions(directory or definitions_dir()):
            spec = _parse(raw, dimensions=dimensions, similarity=similarity, source=source)
            collections[spec.name] = spec
        return cls(collections, prefix=prefix)

    def user_collections(self) -> tuple[str, ...]:
        """The collections that hold users' data (unprefixed names, sorted)."""
        return tuple(
            sorted(name for name, spec in self.collections.items() if spec.holds_user_data)
        )

    def __getitem__(self, name: str) -> CollectionSpec:
        return self.collections[name]

    def target(
        self, name: str, *, snapshot: bool = False, omit: tuple[str, ...] = ()
    ) -> SearchTarget:
        """The search target of collection ``name`` (with the prefix applied). ``snapshot``:
        every writer of the collection announces its writes, so the plain tier may keep its
        documents in memory between searches (``mongo/search/snapshots.py``). ``omit``: fields
        searches leave out of what they read and return (``SearchTarget.omit_paths``)."""
        target = self.collections[name].search_target(self.prefix)
        if target is None:
            raise ConfigurationError(f"collection {name!r} has no search indexes")
        if snapshot or omit:
            target = replace(target, snapshot=snapshot, omit_paths=tuple(omit))
        return target


@functools.cache
def _definitions(directory: Path) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The definition files of ``directory`` as (file name, parsed JSON), read once per
    process: they ship with the package and do not change while it runs. Callers parse
    them without changing them (:func:`_parse` copies what it rewrites)."""
    files = []
    for path in sorted(directory.glob("*.json")):
        try:
            files.append((path.name, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigurationError(f"cannot read index definitions {path.name}: {exc}") from exc
    return tuple(files)


def user_collections() -> tuple[str, ...]:
    """The collections that hold users' data, from the catalog (unprefixed, sorted)."""
    return IndexCatalog.load(dimensions=1).user_collections()


def _parse(raw: dict[str, Any], *, dimensions: int, similarity: str, source: str) -> CollectionSpec:
    try:
        indexes = tuple(
            IndexSpec(
                name=entry["name"],
                key=tuple(entry["key"].items()),
                options={k: v for k, v in entry.items() if k not in ("name", "key", "tiers")},
                tiers=frozenset(entry.get("tiers", ("atlas", "plain"))),
            )
            for entry in raw.get("indexes", [])
        )
        search_indexes = []
        for entry in raw.get("search_indexes", []):
            definition = copy.deepcopy(entry["definition"])
            if entry["type"] == "vectorSearch":
                for field in definition["fields"]:
                    if field["type"] == "vector":
                        field["numDimensions"] = dimensions
                        field["similarity"] = similarity
            search_indexes.append(SearchIndexSpec(entry["name"], entry["type"], definition))
        retired = tuple(
            RetiredIndex(entry["name"], tuple(entry["key"].items()), entry["replaced_by"])
            for entry in raw.get("retired_indexes", [])
        )
        return CollectionSpec(raw["collection"], indexes, tuple(search_indexes), retired)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"index definitions {source} are malformed: {exc!r}") from exc
