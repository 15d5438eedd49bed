"""Which user a LangGraph namespace belongs to: the mapping :class:`MemoryStore` stores by.

Every item the store keeps is a long-term memory of one tenant (an agent and a user), so that
erasing a user erases their items and one user's reads never scan another's. LangGraph
namespaces are free-form tuples; a :class:`NamespaceMap` says which label holds the user:

>>> users = NamespaceMap()                                 # the default
>>> users.user_of(("memories", "user-456", "notes"))
'user-456'
>>> users.user_of(("docs", "faq")) is None                 # app-wide: every user's agent sees it
True
>>> NamespaceMap(user_roots=None, user_segment=0).user_of(("user-456", "notes"))
'user-456'
>>> NamespaceMap(user_segment=0).user_of(("user-456", "memories"))    # user, then the root
'user-456'

A namespace shaped for another map (``("user-456", "memories")`` under the default one, where
the root comes first) names no user under this one: it is refused rather than stored
app-wide, where every user would read it and no user's erasure would reach it
(:meth:`NamespaceMap.check`).

The pitfall: the store trusts the namespace it is given. A node that builds a namespace from
text a user typed can name another user's. Build namespaces from the run's configuration
(``config["configurable"]["user_id"]`` or the runtime context), never from message content;
see docs/langgraph.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.store.base import InvalidNamespaceError

from agent_memory.checks import check_int
from agent_memory.errors import InvalidInputError

__all__ = ["MAX_DEPTH", "NamespaceError", "NamespaceMap", "check_label", "check_namespace"]

#: The most labels a namespace may have (one tag per prefix of it is stored).
MAX_DEPTH = 20
#: The user id of app-wide items (the same as shared knowledge's); no label may claim it.
APP_WIDE = "*"


class NamespaceError(InvalidInputError, InvalidNamespaceError):
    """A namespace the store cannot accept: caught as this framework's
    :class:`~agent_memory.errors.InvalidInputError` and as LangGraph's
    ``InvalidNamespaceError``, which the reference stores raise."""


def check_label(label: Any, namespace: Any = None) -> str:
    """One namespace label: a non-empty ``str`` without ``.`` or control characters."""
    where = "" if namespace is None else f" in {_short(namespace)}"
    if not isinstance(label, str):
        raise NamespaceError(
            f"namespace labels must be str, got {type(label).__name__} {_short(label)}{where}"
        )
    if not label:
        raise NamespaceError(f"namespace labels cannot be empty{where}")
    if "." in label:
        raise NamespaceError(f"namespace label {_short(label)} contains '.'{where}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in label):
        raise NamespaceError(f"namespace label {_short(label)} contains control characters")
    if len(label) > 256:
        raise NamespaceError(f"namespace label is longer than 256 characters{where}")
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        raise NamespaceError(f"namespace label {_short(label)} is not valid Unicode") from None
    return label


def check_namespace(
    namespace: Any, what: str = "namespace", *, empty: bool = False
) -> tuple[str, ...]:
    """``namespace`` as a tuple of checked labels; ``empty`` allows ``()`` (a search prefix)."""
    if not isinstance(namespace, tuple | list):
        raise NamespaceError(f"{what} must be a tuple of labels, got {_short(namespace)}")
    if not namespace and not empty:
        raise NamespaceError(f"{what} cannot be empty")
    if len(namespace) > MAX_DEPTH:
        raise NamespaceError(f"{what} has more than {MAX_DEPTH} labels")
    labels = tuple(check_label(label, namespace) for label in namespace)
    if labels and labels[0] == "langgraph":
        raise NamespaceError(f"{what} cannot start with 'langgraph' (reserved by LangGraph)")
    return labels


@dataclass(frozen=True, slots=True)
class NamespaceMap:
    """How :class:`~agent_memory.langgraph.MemoryStore` maps a namespace to a user.

    - ``user_roots``: the labels that mark per-user namespaces, first in them; the label at
      ``user_segment`` is the user id (``("memories", user_id, ...)`` by default). With
      ``user_segment=0`` the root comes second, after the user: ``(user_id, "memories", ...)``.
      ``None``: every namespace with a label at ``user_segment`` is a user's
      (``user_roots=None, user_segment=0`` for ``(user_id, ...)``, whatever follows).
    - Every other namespace is app-wide: stored once for the agent, read by all its users'
      graphs. A root label elsewhere in an app-wide namespace (``("u1", "memories")`` under
      the default map) is refused: that is a user's namespace written for another map.
    - ``span_users``: whether a read whose prefix names no user (a search from ``()`` or
      ``("memories",)``, ``list_namespaces()`` without a prefix) covers every user of the
      agent, as LangGraph's own stores do. ``False`` refuses such reads: a graph that forgot
      the user id then fails instead of reading everyone's items.
    - ``learned``: the label under which a user's memories that were not put through the
      store (what the formation worker and the agent learned) are readable:
      ``(*home, learned, memory_type)``, where ``home`` is ``(user_roots[0], user_id)``
      (or ``(user_id,)`` with ``user_roots=None, user_segment=0``). ``None`` hides them.
    """

    user_roots: tuple[str, ...] | None = ("memories",)
    user_segment: int = 1
    span_users: bool = True
    learned: str | None = "learned"

    def __post_init__(self) -> None:
        if self.user_roots is not None:
            if isinstance(self.user_roots, str) or not isinstance(self.user_roots, Sequence):
                raise InvalidInputError("user_roots must be a tuple of labels or None")
            roots = tuple(check_label(root) for root in self.user_roots)
            if not roots:
                raise InvalidInputError("user_roots must name at least one label (or be None)")
            object.__setattr__(self, "user_roots", roots)
        check_int(self.user_segment, "user_segment", minimum=0, maximum=MAX_DEPTH - 2)
        if not isinstance(self.span_users, bool):
            raise InvalidInputError("span_users must be a bool")
        if self.learned is not None:
            check_label(self.learned)

    @property
    def _root_at(self) -> int:
        """Where the root label is: first, or after the user when the user comes first."""
        return 1 if self.user_segment == 0 else 0

    @property
    def schema_at(self) -> int:
        """Where the label after a user's home is (the item's schema: ``"notes"`` in
        ``("memories", user_id, "notes")``)."""
        at = -1 if self.user_roots is None else self._root_at
        return max(self.user_segment, at) + 1

    def user_of(self, namespace: Sequence[str]) -> str | None:
        """The user id ``namespace`` belongs to, or ``None`` for an app-wide namespace."""
        if len(namespace) <= self.user_segment:
            return None
        if self.user_roots is not None:
            at = self._root_at
            if len(namespace) <= at or namespace[at] not in self.user_roots:
                return None
        return namespace[self.user_segment]

    def _misplaced(self, namespace: Sequence[str]) -> str | None:
        """The first root label out of place in a namespace that names no user."""
        if self.user_roots is None or self.user_of(namespace) is not None:
            return None
        for at, label in enumerate(namespace):
            if label in self.user_roots and at != self._root_at:
                return label
        return None

    def refuses(self, namespace: Sequence[str]) -> bool:
        """Whether :meth:`check` refuses ``namespace``."""
        return self._misplaced(namespace) is not None

    def check(self, namespace: Sequence[str], what: str = "namespace") -> None:
        """Refuse a namespace (or a read's prefix) that names no user under this map but
        holds a root label where this map does not read one: a user's namespace written for
        another map (``("u1", "memories")`` under the default map). Stored app-wide, its
        items would be read by every user and erased by none."""
        root = self._misplaced(namespace)
        if root is not None:
            if self.user_segment == 0:
                shape = f"(user_id, {root!r}, ...)"
            else:
                shape = (
                    f"({root!r}, {', '.join(['...'] * (self.user_segment - 1) + ['user_id'])}, ...)"
                )
            raise NamespaceError(
                f"{what} {_short(tuple(namespace))} names no user, but {root!r} is a user root "
                f"in another place than this store's layout {shape}: use that layout, or a "
                "NamespaceMap for yours (NamespaceMap(user_segment=0) for "
                f"(user_id, {root!r}, ...)); stored app-wide, every user would read it"
            )

    def reach(
        self, prefix: Sequence[str]
    ) -> tuple[Literal["user", "both", "span", "app"], str | None]:
        """Whose items namespaces starting with ``prefix`` can be (``"*"`` labels match any
        label): one ``"user"`` (and which), or ``"app"``-wide ones only, ``"both"`` (one user
        and app-wide ones: ``(user_id,)`` when the root follows the user), or ``"span"``:
        app-wide ones and every user's."""
        segment, roots = self.user_segment, self.user_roots
        at = None if roots is None else self._root_at
        user = prefix[segment] if len(prefix) > segment and prefix[segment] != "*" else None
        root = prefix[at] if at is not None and len(prefix) > at and prefix[at] != "*" else None
        if roots is not None and root is not None and root not in roots:
            return "app", None  # the root's place holds another label: app-wide ones only
        if user is not None:
            if at is None or root is not None:
                return "user", user
            if at > segment:
                return "both", user  # (user_id,) or (user_id, "*"): the user's and app-wide
        return "span", None

    def home(self, user_id: str) -> tuple[str, ...] | None:
        """The namespace a user's learned memories are listed under the ``learned`` label of,
        or ``None`` when this map gives them none."""
        if self.learned is None:
            return None
        if self.user_roots is None and self.user_segment == 0:
            return (user_id,)
        if self.user_roots is not None and self.user_segment == 1:
            return (self.user_roots[0], user_id)
        if self.user_roots is not None and self.user_segment == 0:
            return (user_id, self.user_roots[0])
        return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
