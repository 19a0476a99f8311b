"""Algebraic properties of SQL filter evaluation, checked with hypothesis."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sbmgmt.message import Message
from sbmgmt.sql import parse_filter

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
_TEXT = st.text(max_size=12)
_VALUES = st.one_of(st.none(), st.booleans(), _INT64, _FLOATS, _TEXT)
_OPERATORS = st.sampled_from(["=", "<>", "!=", "<", "<=", ">", ">="])
_MIRRORED = {"=": "=", "<>": "<>", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _message(**props: Any) -> Message:
    return Message(application_properties=props)


def _evaluate(expression: str, message: Message) -> bool | None:
    return parse_filter(expression).evaluate(message)


@given(a=_VALUES, b=_VALUES, op=_OPERATORS)
def test_comparison_is_symmetric_under_mirroring(a: Any, b: Any, op: str) -> None:
    message = _message(a=a, b=b)
    assert _evaluate(f"a {op} b", message) is _evaluate(f"b {_MIRRORED[op]} a", message)


@given(a=_VALUES, b=_VALUES)
def test_equality_and_inequality_are_complements_or_both_unknown(a: Any, b: Any) -> None:
    message = _message(a=a, b=b)
    equal, different = _evaluate("a = b", message), _evaluate("a <> b", message)
    if equal is None:
        assert different is None
    else:
        assert different is (not equal)


@given(a=_VALUES, b=_VALUES, op=_OPERATORS)
def test_not_not_is_identity_and_not_flips_known_results(a: Any, b: Any, op: str) -> None:
    message = _message(a=a, b=b)
    plain = _evaluate(f"a {op} b", message)
    assert _evaluate(f"NOT NOT a {op} b", message) is plain
    negated = _evaluate(f"NOT (a {op} b)", message)
    assert negated is (None if plain is None else not plain)


@given(a=_VALUES, op=_OPERATORS)
def test_any_comparison_with_null_is_unknown(a: Any, op: str) -> None:
    message = _message(a=a)
    assert _evaluate(f"a {op} missing", message) is None
    assert _evaluate(f"a {op} NULL", message) is None


_PLAIN_TEXT = st.text(
    alphabet=st.characters(exclude_characters="%_'", codec="utf-8"),
    max_size=12,
)


@given(text=_TEXT, literal=_PLAIN_TEXT)
def test_like_without_wildcards_is_equality_for_strings(text: str, literal: str) -> None:
    message = _message(s=text)
    assert _evaluate(f"s LIKE '{literal}'", message) is _evaluate(f"s = '{literal}'", message)


@given(text=_TEXT)
def test_a_string_is_like_itself_once_its_wildcards_are_escaped(text: str) -> None:
    escaped = text.replace("!", "!!").replace("%", "!%").replace("_", "!_").replace("'", "''")
    message = _message(s=text)
    assert _evaluate(f"s LIKE '{escaped}' ESCAPE '!'", message) is True
    assert _evaluate("s LIKE '%'", message) is True


@given(a=_INT64, b=_INT64)
def test_integer_arithmetic_stays_in_int64(a: int, b: int) -> None:
    message = _message(a=a, b=b)
    for op in "+-*":
        assert _evaluate(f"a {op} b >= -9223372036854775807 - 1", message) is True
        assert _evaluate(f"a {op} b <= 9223372036854775807", message) is True


@given(a=_INT64, b=_INT64.filter(lambda v: v != 0))
def test_integer_division_identity(a: int, b: int) -> None:
    message = _message(a=a, b=b)
    if (a, b) != (-(2**63), -1):
        assert _evaluate("(a / b) * b + a % b = a", message) is True


@given(a=_VALUES, b=_VALUES, c=_VALUES)
def test_in_is_a_disjunction_of_equalities(a: Any, b: Any, c: Any) -> None:
    message = _message(a=a, b=b, c=c)
    assert _evaluate("a IN (b, c)", message) is _evaluate("a = b OR a = c", message)
    assert _evaluate("a NOT IN (b, c)", message) is _evaluate("NOT (a = b OR a = c)", message)
