"""Memory schemas: a per-user profile updated by patches, and notes inserted as memories.

A :class:`MemorySchema` has a name, a description (for an extracting model), an update mode
and JSON-schema parameters, as in seed 001:

- ``patch``: one document per user and schema (the ``User`` profile), changed by patches
  that set, remove or add to fields; the result must validate against the schema.
- ``insert``: every instance is a new long-term memory (the ``Note`` schema), so it is
  searchable, consolidated and decays like any other memory.

Custom schemas are passed in as configuration (``ProfileMemory(schemas=...)`` or
:meth:`MemorySchema.from_dict`).

Round trips: get 1 (the user's generation token) while the profile this process read last is
current, 2 when it is not (the token, then the profile; see :mod:`agent_memory.mongo.kept`);
patch 3 (read, guarded write, then its announcement; one more read and write per lost race);
add 1 + store; render as get, per patch schema; forget_user 2 (the profile, then its token).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import jsonschema
from pymongo import errors as pm

from agent_memory._log import get_logger
from agent_memory.checks import check_document_size, check_id, check_mapping, clipped, shown
from agent_memory.errors import ConfigurationError, ConflictError, InvalidInputError
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.records import NewMemory, StoreResult
from agent_memory.mongo._errors import translate_errors
from agent_memory.mongo.connection import Connection
from agent_memory.mongo.kept import KeptReads
from agent_memory.stamps import utcnow
from agent_memory.tenancy import Tenant, check_tenant

__all__ = [
    "DEFAULT_SCHEMAS",
    "NOTE_SCHEMA",
    "USER_SCHEMA",
    "MemorySchema",
    "PatchOp",
    "Profile",
    "ProfileMemory",
]

logger = get_logger(__name__)

COLLECTION = "profiles"
_PATCH_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class MemorySchema:
    name: str
    description: str
    update_mode: Literal["patch", "insert"]
    parameters: Mapping[str, Any]

    def __post_init__(self) -> None:
        check_id(self.name, "schema name")
        if self.update_mode not in ("patch", "insert"):
            raise ConfigurationError(f"schema {self.name}: update_mode must be 'patch' or 'insert'")
        if self.parameters.get("type") != "object":
            raise ConfigurationError(f"schema {self.name}: parameters must describe an object")
        try:
            jsonschema.Draft202012Validator.check_schema(dict(self.parameters))
        except jsonschema.SchemaError as exc:
            raise ConfigurationError(
                f"schema {self.name} is not a valid JSON schema: {exc.message}"
            ) from exc
        if self.update_mode == "insert" and "content" not in self.parameters.get("properties", {}):
            raise ConfigurationError(f"insert schema {self.name} needs a 'content' property")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> MemorySchema:
        try:
            return cls(
                raw["name"], raw.get("description", ""), raw["update_mode"], raw["parameters"]
            )
        except KeyError as exc:
            raise ConfigurationError(f"a memory schema needs {exc.args[0]!r}") from exc

    def validate(self, data: Mapping[str, Any]) -> None:
        validator = jsonschema.Draft202012Validator(dict(self.parameters))
        errors = sorted(validator.iter_errors(dict(data)), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            where = "/".join(clipped(str(p)) for p in first.path) or "(document)"
            # jsonschema's message repeats the offending value whole: show it short.
            message = first.message.replace(repr(first.instance), shown(first.instance))
            raise InvalidInputError(f"{self.name} {clipped(where)}: {clipped(message, 200)}")


USER_SCHEMA = MemorySchema(
    name="User",
    description="Up-to-date information about the user in the conversation.",
    update_mode="patch",
    parameters={
        "type": "object",
        "properties": {
            "user_name": {"type": "string", "description": "The user's preferred name"},
            "age": {
                "type": "integer",
                "minimum": 0,
                "maximum": 150,
                "description": "The user's age",
            },
            "interests": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The user's interests",
            },
            "home": {"type": "string", "description": "The user's home town or neighbourhood"},
            "occupation": {"type": "string", "description": "The user's current occupation"},
            "conversation_preferences": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Preferred conversation styles, pronouns, topics to avoid",
            },
            "preferences": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Named preferences, e.g. seat: window, diet: vegetarian",
            },
        },
        "additionalProperties": False,
    },
)

NOTE_SCHEMA = MemorySchema(
    name="Note",
    description="Notable things the user shared, for later recall.",
    update_mode="insert",
    parameters={
        "type": "object",
        "properties": {
            "context": {"type": "string", "description": "When and where the memory applies"},
            "content": {"type": "string", "minLength": 1, "description": "What to remember"},
        },
        "required": ["content"],
        "additionalProperties": False,
    },
)

DEFAULT_SCHEMAS = (USER_SCHEMA, NOTE_SCHEMA)


@dataclass(frozen=True, slots=True)
class PatchOp:
    """``set`` a field, ``remove`` it, ``add`` a value to an array field (once), or ``merge``
    a mapping into an object field key by key (a ``None`` value removes that key). Merges and
    adds are applied to the profile as it is when written, so concurrent patches of different
    keys all survive."""

    op: Literal["set", "remove", "add", "merge"]
    path: str
    value: Any = None


@dataclass(frozen=True, slots=True)
class Profile:
    schema: str
    data: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    updated_at: datetime | None = None


def _ops(changes: Mapping[str, Any] | Sequence[PatchOp]) -> list[PatchOp]:
    if isinstance(changes, Mapping):
        check_mapping(changes, "changes")
        return [
            PatchOp("remove", k) if v is None else PatchOp("set", k, v) for k, v in changes.items()
        ]
    if isinstance(changes, str) or not isinstance(changes, Sequence):
        raise InvalidInputError("changes must be a mapping of field to value or a list of PatchOp")
    ops = list(changes)
    for op in ops:
        if not isinstance(op, PatchOp) or op.op not in ("set", "remove", "add", "merge"):
            raise InvalidInputError(f"not a patch operation: {shown(op)}")
        if not isinstance(op.path, str):
            raise InvalidInputError(
                f"a patch path must be a field name (str), got {type(op.path).__name__}"
            )
        if op.op == "merge" and not isinstance(op.value, Mapping):
            raise InvalidInputError(f"merge into {shown(op.path)} needs a mapping")
        check_mapping({op.path: op.value}, "patch")  # the path is a plain top-level field name
    return ops


def _stated_later(op: PatchOp, stated: Mapping[str, str], said: str | None) -> bool:
    """Whether ``op`` sets or removes a field that was last stated after ``said``."""
    last = stated.get(op.path)
    return said is not None and op.op in ("set", "remove") and last is not None and last > said


def _apply(data: dict[str, Any], ops: list[PatchOp]) -> dict[str, Any]:
    result = json.loads(json.dumps(data, default=str))  # a deep copy of plain data
    for op in ops:
        if op.op == "set":
            result[op.path] = op.value
        elif op.op == "remove":
            result.pop(op.path, None)
        elif op.op == "merge":
            current = result.get(op.path) or {}
            if not isinstance(current, dict):
                raise InvalidInputError(f"cannot merge into {shown(op.path)}: it is not an object")
            merged = {**current, **op.value}
            result[op.path] = {key: value for key, value in merged.items() if value is not None}
        else:
            current = result.setdefault(op.path, [])
            if not isinstance(current, list):
                raise InvalidInputError(f"cannot add to {shown(op.path)}: it is not a list")
            if op.value not in current:
                current.append(op.value)
    return result


class ProfileMemory:
    """Profiles (patch schemas) and notes (insert schemas) for each user.

    >>> profiles = ProfileMemory(connection, long_term)                       # doctest: +SKIP
    >>> await profiles.patch(tenant, {"user_name": "小明", "home": "Shanghai"})  # doctest: +SKIP
    >>> await profiles.add(tenant, "Note", {"content": "Wants to see cherry blossoms"})
    """

    def __init__(
        self,
        connection: Connection,
        long_term: LongTermMemory,
        *,
        schemas: Sequence[MemorySchema] = DEFAULT_SCHEMAS,
    ) -> None:
        self.connection = connection
        self.long_term = long_term
        self.collection = connection.collection(COLLECTION)
        #: Profiles as last read, kept while the user's token says nothing changed (an agent
        #: turn reads the profile every time; it changes when formation learns something).
        self.kept = KeptReads(connection, COLLECTION)
        self.schemas = {schema.name: schema for schema in schemas}
        if len(self.schemas) != len(schemas):
            raise ConfigurationError("memory schema names must be unique")

    def schema(self, name: str, mode: str) -> MemorySchema:
        if not isinstance(name, str):
            raise InvalidInputError(
                f"schema must be a schema name (str), got {type(name).__name__}"
            )
        schema = self.schemas.get(name)
        if schema is None:
            raise InvalidInputError(
                f"unknown memory schema {shown(name)}; known: {', '.join(self.schemas)}"
            )
        if schema.update_mode != mode:
            raise InvalidInputError(
                f"schema {shown(name)} is updated by {schema.update_mode}, not {mode}"
            )
        return schema

    async def get(self, tenant: Tenant, schema: str = "User") -> Profile:
        tenant = check_tenant(tenant)
        self.schema(schema, "patch")
        with translate_errors("reading a profile"):
            doc = await self.kept.read(tenant.filter(), schema, lambda: self._find(tenant, schema))
        profile, _ = _profile(schema, doc)
        return profile

    async def _find(self, tenant: Tenant, schema: str) -> dict[str, Any] | None:
        with translate_errors("reading a profile"):
            return await self.collection.find_one({**tenant.filter(), "schema": schema})

    async def _read(self, tenant: Tenant, schema: str) -> tuple[Profile, dict[str, str]]:
        """The profile as stored now (never a kept one: a patch builds on it) and, per field,
        where in a conversation it was last stated."""
        return _profile(schema, await self._find(tenant, schema))

    @contextlib.asynccontextmanager
    async def _announced(self, tenant: Tenant) -> AsyncIterator[None]:
        """Announce a write of the tenant's profile once it ran, landed or not."""
        try:
            yield
        finally:
            with translate_errors("announcing a profile change"):
                await self.kept.announce(tenant.filter())

    async def patch(
        self,
        tenant: Tenant,
        changes: Mapping[str, Any] | Sequence[PatchOp],
        *,
        schema: str = "User",
        said: str | None = None,
    ) -> Profile:
        """Apply ``changes`` (``{field: value}``, ``None`` removes; or a list of
        :class:`PatchOp`) and return the profile. The result must validate against the
        schema; a concurrent patch is not lost (the write is guarded by a version and
        re-applied on the fresh profile).

        ``said``: where in a conversation the changes were stated (the ``seq`` of the last
        message they were formed from; memory formation passes it). A ``set`` or ``remove``
        of a field that a later statement changed is skipped, so a session formed late does
        not undo a newer value; ``add`` and ``merge`` accumulate as always. Without it the
        newest write wins."""
        tenant = check_tenant(tenant)
        definition = self.schema(schema, "patch")
        ops = _ops(changes)
        if said is not None and not isinstance(said, str):
            raise InvalidInputError(f"said must be a string, got {type(said).__name__}")
        for _ in range(_PATCH_ATTEMPTS):
            current, stated = await self._read(tenant, schema)
            kept = [op for op in ops if not _stated_later(op, stated, said)]
            if not kept:
                return current  # every change was stated before the profile's own
            data = _apply(current.data, kept)
            definition.validate(data)
            now = utcnow()
            if said is not None:
                single = {op.path for op in kept if op.op in ("set", "remove")}
                before = stated
                stated = {**stated, **{path: max(said, stated.get(path, "")) for path in single}}
                if data == current.data and stated == before:
                    return current  # said again where it was said already (a job resumed)
            document = {
                **tenant.filter(),
                "schema": schema,
                "data": data,
                "said": stated,
                "version": current.version + 1,
                "updated_at": now,
            }
            check_document_size(document, f"the {schema} profile")
            async with self._announced(tenant):
                with translate_errors("writing a profile"):
                    if current.version == 0:
                        try:
                            await self.collection.insert_one(document)
                        except pm.DuplicateKeyError:
                            continue  # created concurrently: patch that one
                    else:
                        result = await self.collection.update_one(
                            {**tenant.filter(), "schema": schema, "version": current.version},
                            {
                                "$set": {
                                    "data": data,
                                    "said": stated,
                                    "version": current.version + 1,
                                    "updated_at": now,
                                }
                            },
                        )
                        if result.matched_count == 0:
                            continue  # someone patched in between: re-apply on theirs
            logger.info(
                "profile_patched", schema=schema, fields=len(ops), version=current.version + 1
            )
            return Profile(schema, data, current.version + 1, now)
        raise ConflictError(f"the {schema} profile kept changing; the patch was not applied")

    async def add(
        self,
        tenant: Tenant,
        schema: str,
        fields: Mapping[str, Any],
        *,
        importance: float | None = None,
    ) -> StoreResult:
        """Store an instance of an insert schema (a note) as a long-term memory."""
        return (await self.add_many(tenant, schema, [fields], importance=importance))[0]

    async def add_many(
        self,
        tenant: Tenant,
        schema: str,
        items: Sequence[Mapping[str, Any]],
        *,
        importance: float | None = None,
    ) -> list[StoreResult]:
        """Store several notes with one embedding call; every one is validated before any
        is stored, so an invalid note stores none of them."""
        definition = self.schema(schema, "insert")
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInputError(f"items must be a list of {schema} mappings")
        memories = []
        for fields in items:
            check_mapping(fields, schema)
            definition.validate(fields)
            context = fields.get("context")
            memories.append(
                NewMemory(
                    fields["content"],
                    memory_type="learned",
                    importance=importance,
                    tags=(schema,),
                    context=context if isinstance(context, str) and context.strip() else None,
                    schema=schema,
                )
            )
        if not memories:
            return []
        return await self.long_term.store_many(tenant, memories)

    async def render(self, tenant: Tenant) -> str:
        """The user's profiles as compact lines for a system prompt ("" when empty)."""
        lines = []
        for name, definition in self.schemas.items():
            if definition.update_mode != "patch":
                continue
            profile = await self.get(tenant, name)
            for key, value in profile.data.items():
                lines.append(f"- {key}: {_readable(value)}")
        return "\n".join(lines)

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        tenant = check_tenant(tenant)
        with translate_errors("forgetting a user's profile"):
            result = await self.collection.delete_many(tenant.filter())
            await self.kept.erase(tenant.filter())
        return {self.connection.collection_name(COLLECTION): result.deleted_count}


def _profile(schema: str, doc: dict[str, Any] | None) -> tuple[Profile, dict[str, str]]:
    """A stored profile and, per field, where in a conversation it was last stated."""
    if doc is None:
        return Profile(schema), {}
    stated = doc.get("said")
    return (
        Profile(schema, doc.get("data", {}), int(doc.get("version", 0)), doc.get("updated_at")),
        {k: v for k, v in stated.items() if isinstance(v, str)} if isinstance(stated, dict) else {},
    )


def _readable(value: Any) -> str:
    """A profile value as prompt text: ``seat: window; diet: vegetarian`` for a mapping,
    ``a, b`` for a list, JSON for anything deeper."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and all(
        isinstance(item, str | int | float | bool) for item in value.values()
    ):
        return "; ".join(f"{key}: {item}" for key, item in value.items())
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return ", ".join(map(str, value))
    return json.dumps(value, ensure_ascii=False, default=str)
