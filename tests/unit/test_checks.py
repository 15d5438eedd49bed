"""The ground floor's number checks: one predicate and one check each for ints and numbers."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_memory.checks import (
    SHOWN_CHARS,
    check_count,
    check_importance,
    check_int,
    check_number,
    check_seconds,
    is_int,
    is_number,
)
from agent_memory.errors import ConfigurationError, InvalidInputError

NOT_NUMBERS = [True, False, None, "3", b"3", [3], {"n": 3}, 3j, object()]


@pytest.mark.parametrize("value", [0, 1, -7, 2**80])
def test_is_int_takes_ints(value: int) -> None:
    assert is_int(value) and is_number(value)


@pytest.mark.parametrize("value", [*NOT_NUMBERS, 1.0, math.nan])
def test_is_int_refuses_bools_and_everything_not_an_int(value: Any) -> None:
    assert not is_int(value)


@pytest.mark.parametrize("value", [0.0, -2.5, 1e300, math.inf, -math.inf, math.nan])
def test_is_number_is_a_type_test_that_includes_nan_and_infinity(value: float) -> None:
    assert is_number(value) and not is_int(value)


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_is_number_refuses_bools_and_everything_not_a_number(value: Any) -> None:
    assert not is_number(value)


@pytest.mark.parametrize("value", [*NOT_NUMBERS, 1.0, 2.5, math.nan, math.inf])
def test_check_int_refuses_bools_floats_and_non_numbers(value: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"^limit must be an int, got "):
        check_int(value, "limit")


def test_check_int_bounds_are_inclusive_and_named() -> None:
    assert check_int(1, "n", minimum=1, maximum=5) == 1
    assert check_int(5, "n", minimum=1, maximum=5) == 5
    with pytest.raises(InvalidInputError, match=r"^n must be an int from 1 to 5, got 0$"):
        check_int(0, "n", minimum=1, maximum=5)
    with pytest.raises(InvalidInputError, match=r"^n must be an int from 1 to 5, got 6$"):
        check_int(6, "n", minimum=1, maximum=5)
    with pytest.raises(InvalidInputError, match=r"^n must be an int >= 0, got -1$"):
        check_int(-1, "n", minimum=0)
    with pytest.raises(InvalidInputError, match=r"^n must be an int <= 9, got 10$"):
        check_int(10, "n", maximum=9)
    assert check_int(-(2**70), "n") == -(2**70)  # no bound, no limit


@given(
    value=st.integers(-1000, 1000),
    low=st.integers(-100, 100),
    span=st.integers(0, 100),
)
def test_check_int_accepts_exactly_the_range(value: int, low: int, span: int) -> None:
    high = low + span
    if low <= value <= high:
        assert check_int(value, "n", minimum=low, maximum=high) is value
    else:
        with pytest.raises(InvalidInputError, match=f"from {low} to {high}, got {value}$"):
            check_int(value, "n", minimum=low, maximum=high)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400])
def test_check_number_refuses_nan_infinity_and_ints_beyond_a_float(value: float) -> None:
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number, got "):
        check_number(value, "x")


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_check_number_refuses_bools_and_non_numbers(value: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number, got "):
        check_number(value, "x")


def test_check_number_bounds_are_inclusive_and_above_is_not() -> None:
    assert check_number(0, "x", minimum=0, maximum=8) == 0
    assert check_number(8.0, "x", minimum=0, maximum=8) == 8.0
    assert check_number(1e-9, "x", above=0) == 1e-9
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number > 0, got 0$"):
        check_number(0, "x", above=0)
    with pytest.raises(
        InvalidInputError, match=r"^x must be a finite number > 0 and <= 1, got 1\.5$"
    ):
        check_number(1.5, "x", above=0, maximum=1)
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number from 0\.05 to 86400"):
        check_number(0.04, "x", minimum=0.05, maximum=86_400)
    with pytest.raises(InvalidInputError, match=r"^x must be a finite number >= 0, got -0\.5$"):
        check_number(-0.5, "x", minimum=0)


def test_check_number_returns_the_value_as_given() -> None:
    assert type(check_number(3, "x")) is int
    assert type(check_number(3.0, "x")) is float


def test_check_number_may_take_infinity_but_never_nan() -> None:
    assert check_number(math.inf, "x", above=0, finite=False) == math.inf
    with pytest.raises(InvalidInputError, match=r"^x must be a number > 0, got nan$"):
        check_number(math.nan, "x", above=0, finite=False)
    with pytest.raises(InvalidInputError, match=r"^x must be a number <= 1, got inf$"):
        check_number(math.inf, "x", maximum=1, finite=False)


def test_check_number_takes_minimum_or_above_not_both() -> None:
    with pytest.raises(TypeError):
        check_number(1, "x", minimum=0, above=0)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_check_number_accepts_exactly_finite_floats_in_range(value: float) -> None:
    if math.isfinite(value) and -1 <= value <= 1:
        assert check_number(value, "x", minimum=-1, maximum=1) == value
    else:
        with pytest.raises(InvalidInputError, match=r"^x must be a finite number from -1 to 1"):
            check_number(value, "x", minimum=-1, maximum=1)


@pytest.mark.parametrize(
    "check",
    [
        lambda value: check_int(value, "n", minimum=1, error=ConfigurationError),
        lambda value: check_number(value, "n", minimum=1, error=ConfigurationError),
    ],
)
@pytest.mark.parametrize("value", [0, True, "1", math.nan])
def test_the_error_class_is_the_callers(check: Any, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"^n must be "):
        check(value)
    assert not issubclass(ConfigurationError, InvalidInputError)  # the class really differs


@pytest.mark.parametrize(
    "value", [10**200, -(10**200), "x" * 100_000, ["a"] * 10_000, {"k": "v" * 10_000}]
)
def test_the_value_is_echoed_but_clipped(value: Any) -> None:
    for check in (check_int, check_number):
        with pytest.raises(InvalidInputError) as caught:
            check(value, "n", minimum=1, maximum=2)
        echoed = str(caught.value).split(", got ", 1)[1]
        assert len(echoed) <= SHOWN_CHARS
        assert echoed[:6] == repr(value)[:6]  # the value's start, clipped


def test_check_count_is_an_int_from_minimum_to_maximum() -> None:
    assert check_count(1, "k", maximum=3) == 1
    assert check_count(0, "k", minimum=0, maximum=3) == 0
    for bad in (0, 4, True, 2.0, "2", None):
        with pytest.raises(InvalidInputError, match=r"^k must be an int from 1 to 3, got "):
            check_count(bad, "k", maximum=3)


def test_importance_and_seconds_are_number_checks_with_floats_out() -> None:
    assert check_importance(1) == 1.0 and type(check_importance(1)) is float
    assert check_seconds(0, "wait", allow_zero=True) == 0.0
    with pytest.raises(InvalidInputError, match=r"^importance must be a finite number from 0 to 1"):
        check_importance(True)
    with pytest.raises(InvalidInputError, match=r"^wait must be a finite number > 0, got 0$"):
        check_seconds(0, "wait")
    with pytest.raises(InvalidInputError, match=r"^wait must be a finite number >= 0, got inf$"):
        check_seconds(math.inf, "wait", allow_zero=True)
