"""The filters of LangGraph store searches, checked and evaluated here in Python.

Filter keys name value fields, never operators or paths, and the only operators are
LangGraph's comparisons (``$eq $ne $gt $gte $lt $lte``), so a filter never reaches MongoDB.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langgraph.store.base import MatchCondition

from agent_memory.checks import check_int, check_mapping, is_number
from agent_memory.errors import InvalidInputError

__all__ = ["check_filter", "check_window", "matches_filter", "namespace_matches"]

_MAX_LIST = 1_000
_ORDERING = frozenset({"$gt", "$gte", "$lt", "$lte"})
_OPERATORS = _ORDERING | {"$eq", "$ne"}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def check_window(limit: Any, offset: Any) -> None:
    for name, number in (("limit", limit), ("offset", offset)):
        check_int(number, name, minimum=0, maximum=_MAX_LIST)


def check_filter(value: Any, where: str = "filter", depth: int = 0) -> None:
    """Filter keys name value fields, never operators or paths; the only operators are
    LangGraph's comparisons, evaluated here in Python (a filter never reaches MongoDB)."""
    if value is None and depth == 0:
        return
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where} must be a mapping, got {type(value).__name__}")
    if depth > 8:
        raise InvalidInputError(f"{where} is nested too deeply")
    for key, expected in value.items():
        if not isinstance(key, str) or not key or key.startswith("$") or "." in key:
            raise InvalidInputError(
                f"{where} has the key {_short(key)}; keys are value field names "
                "(no '$' at the start, no '.')"
            )
        _check_expected(expected, f"{where}.{key}", depth + 1)


def _check_expected(expected: Any, where: str, depth: int) -> None:
    if isinstance(expected, Mapping) and any(str(k).startswith("$") for k in expected):
        for operator, operand in expected.items():
            if operator not in _OPERATORS:
                raise InvalidInputError(
                    f"{where} uses {_short(operator)}; supported: {', '.join(sorted(_OPERATORS))}"
                )
            if operator in _ORDERING and not (is_number(operand) or isinstance(operand, str)):
                raise InvalidInputError(f"{where} {operator} needs a number or a string")
            if operator in ("$eq", "$ne"):
                _check_expected(operand, where, depth + 1)
    elif isinstance(expected, Mapping):
        check_filter(expected, where, depth)
    elif isinstance(expected, list | tuple):
        for item in expected:
            if isinstance(item, Mapping):
                check_mapping(item, where)
            else:
                _check_expected(item, where, depth + 1)
    elif expected is not None and not isinstance(expected, bool | int | float | str):
        raise InvalidInputError(f"{where} has a value of type {type(expected).__name__}")
    elif isinstance(expected, float) and not math.isfinite(expected):
        raise InvalidInputError(f"{where} is NaN or infinite")


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_compare(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(
            _equal(actual.get(k), v) for k, v in expected.items()
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(_equal(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected  # True is not 1 here
    return actual == expected


def _compare(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _equal(actual, operand)
    if operator == "$ne":
        return not _equal(actual, operand)
    comparable = (is_number(actual) and is_number(operand)) or (
        isinstance(actual, str) and isinstance(operand, str)
    )
    if not comparable:
        return False
    return {
        "$gt": actual > operand,
        "$gte": actual >= operand,
        "$lt": actual < operand,
        "$lte": actual <= operand,
    }[operator]


def matches_filter(value: Mapping[str, Any], filter_: Mapping[str, Any] | None) -> bool:
    return not filter_ or all(_equal(value.get(k), v) for k, v in filter_.items())


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(namespace) < len(pattern):
        return False
    if not pattern:
        return True
    if condition.match_type == "prefix":
        window = namespace[: len(pattern)]
    else:
        window = namespace[-len(pattern) :]
    return all(p == "*" or p == n for p, n in zip(pattern, window, strict=True))
