"""The namespace map of the LangGraph store: which user a namespace belongs to, what a read's
prefix can reach, and where a user's learned memories are listed."""

from __future__ import annotations

import pytest
from langgraph.store.base import InvalidNamespaceError

from agent_memory.errors import InvalidInputError
from agent_memory.langgraph.namespaces import NamespaceError, NamespaceMap, check_namespace


def test_the_default_map_reads_the_user_after_the_memories_root():
    users = NamespaceMap()
    assert users.user_of(("memories", "u1")) == "u1"
    assert users.user_of(("memories", "u1", "notes", "x")) == "u1"
    assert users.user_of(("memories",)) is None
    assert users.user_of(("docs", "u1")) is None
    assert users.home("u1") == ("memories", "u1")


@pytest.mark.parametrize(
    ("prefix", "reach"),
    [
        ((), ("span", None)),
        (("memories",), ("span", None)),
        (("memories", "*"), ("span", None)),
        (("*", "u1"), ("span", None)),
        (("memories", "u1"), ("user", "u1")),
        (("memories", "u1", "*"), ("user", "u1")),
        (("docs",), ("app", None)),
        (("docs", "u1", "x"), ("app", None)),
    ],
)
def test_what_a_prefix_can_reach(prefix, reach):
    assert NamespaceMap().reach(prefix) == reach


def test_a_map_with_the_user_first():
    users = NamespaceMap(user_roots=None, user_segment=0)
    assert users.user_of(("u1", "memories")) == "u1"
    assert users.reach(("u1",)) == ("user", "u1")
    assert users.reach(()) == ("span", None)
    assert users.home("u1") == ("u1",)


def test_the_root_after_the_user():
    users = NamespaceMap(user_segment=0)
    assert users.user_of(("u1", "memories", "notes")) == "u1"
    assert users.user_of(("u1", "docs")) is None
    assert users.user_of(("u1",)) is None
    assert users.home("u1") == ("u1", "memories")
    assert users.schema_at == 2
    assert users.reach(("u1",)) == ("both", "u1")
    assert users.reach(("u1", "*")) == ("both", "u1")
    assert users.reach(("u1", "memories")) == ("user", "u1")
    assert users.reach(("u1", "docs")) == ("app", None)
    assert users.reach(("*", "memories")) == ("span", None)
    assert users.reach(()) == ("span", None)


@pytest.mark.parametrize(
    ("users", "namespace"),
    [
        (NamespaceMap(), ("u1", "memories")),
        (NamespaceMap(), ("org", "u1", "memories", "notes")),
        (NamespaceMap(user_segment=0), ("memories", "u1")),
        (NamespaceMap(user_roots=("memories", "profiles"), user_segment=2), ("eu", "profiles")),
    ],
)
def test_a_root_out_of_place_in_an_app_wide_namespace_is_refused(users, namespace):
    with pytest.raises(NamespaceError, match="names no user") as caught:
        users.check(namespace)
    assert isinstance(caught.value, InvalidNamespaceError)


@pytest.mark.parametrize(
    ("users", "namespace"),
    [
        (NamespaceMap(), ("memories",)),
        (NamespaceMap(), ("memories", "u1", "memories")),  # the user's own: any labels after
        (NamespaceMap(), ("docs", "faq")),
        (NamespaceMap(user_roots=None, user_segment=0), ("memories", "u1")),
        (NamespaceMap(user_segment=0), ("u1", "memories")),
    ],
)
def test_namespaces_of_the_maps_layout_pass_the_check(users, namespace):
    users.check(namespace)


def test_several_roots_and_a_deeper_user_segment():
    users = NamespaceMap(user_roots=("memories", "profiles"), user_segment=2)
    assert users.user_of(("profiles", "eu", "u1")) == "u1"
    assert users.user_of(("memories", "eu")) is None
    assert users.reach(("profiles", "eu")) == ("span", None)
    assert users.home("u1") is None  # no learned view for this shape
    assert NamespaceMap(learned=None).home("u1") is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"user_roots": ()},
        {"user_roots": "memories"},
        {"user_roots": ("a.b",)},
        {"user_segment": -1},
        {"user_segment": True},
        {"user_roots": None, "user_segment": 20},
        {"span_users": 1},
        {"learned": ""},
    ],
)
def test_a_bad_map_is_refused_when_built(kwargs):
    with pytest.raises(InvalidInputError):
        NamespaceMap(**kwargs)


@pytest.mark.parametrize(
    "namespace",
    [(), ("",), ("a.b",), (1,), ("langgraph", "x"), ("x",) * 21, "memories", None, ("a\x00",)],
)
def test_bad_namespaces_raise_langgraphs_error_and_ours(namespace):
    with pytest.raises(InvalidNamespaceError) as caught:
        check_namespace(namespace)
    assert isinstance(caught.value, InvalidInputError)


def test_an_empty_prefix_is_allowed_where_asked_for():
    assert check_namespace((), empty=True) == ()
    assert check_namespace(["a", "b"]) == ("a", "b")


def test_refuses_says_what_check_refuses() -> None:
    users = NamespaceMap()
    assert users.refuses(("u1", "memories")) and users.refuses(("u1", "x", "memories"))
    assert not users.refuses(("memories", "u1")) and not users.refuses(("docs", "u1"))
    assert not NamespaceMap(user_segment=0).refuses(("u1", "memories"))
    assert not NamespaceMap(user_roots=None).refuses(("u1", "memories"))
