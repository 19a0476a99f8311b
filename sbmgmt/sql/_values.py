"""Operators on SQL values, with the service's three-valued logic and C#-like typing.

A value is ``None`` (unknown: a missing property or NULL), a bool, an integer (kept
in the Int64 range, wrapping on overflow as unchecked C# does), a float, a string,
or whatever else an application property holds (uuid, datetime, timedelta, bytes).
A truth value is ``True``, ``False`` or ``None`` (unknown).

Operators never raise on a value: a NULL operand, operands of types that have no
such operator (a string compared with a number, a bool with ``<``) or an integer
division by zero give unknown.
"""

from __future__ import annotations

import math
import operator
import re
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

__all__ = [
    "ARITHMETIC",
    "COMPARISONS",
    "Truth",
    "is_number",
    "like_pattern",
    "sign",
    "to_int64",
    "truth_and",
    "truth_not",
    "truth_or",
]

#: SQL's three-valued logic: True, False or None (unknown).
Truth = bool | None

_INT64_MIN = -(2**63)
_UINT64 = 2**64


def to_int64(value: int) -> int:
    """``value`` wrapped into the Int64 range (two's complement, as C# ``unchecked``)."""
    return (value - _INT64_MIN) % _UINT64 + _INT64_MIN


def is_number(value: Any) -> bool:
    """An integer or a float, and not a bool (C# has no bool-to-number conversion)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- comparison --------------------------------------------------------------------

# Types whose values can be compared with each other for equality: numbers are one
# family (an integer is promoted to a float), every other type is its own.
_EQUALITY_FAMILIES: tuple[type, ...] = (str, bool, uuid.UUID, datetime, timedelta, bytes)
# Types that are ordered, besides numbers. C# has no <, > on strings or bools.
_ORDERED: tuple[type, ...] = (datetime, timedelta)


def _family(value: Any) -> type | None:
    if is_number(value):
        return float
    for family in _EQUALITY_FAMILIES:
        if isinstance(value, family):
            return family
    return None


def _comparison(test: Callable[[Any, Any], bool], ordering: bool) -> Callable[[Any, Any], Truth]:
    def compare(left: Any, right: Any) -> Truth:
        if left is None or right is None:
            return None
        family = _family(left)
        if family is None or family is not _family(right):
            return None
        if ordering and family is not float and family not in _ORDERED:
            return None
        try:
            return bool(test(left, right))
        except TypeError:  # naive against aware datetimes
            return None

    return compare


#: The comparison operators by their spelling.
COMPARISONS: dict[str, Callable[[Any, Any], Truth]] = {
    "=": _comparison(operator.eq, ordering=False),
    "<>": _comparison(operator.ne, ordering=False),
    "!=": _comparison(operator.ne, ordering=False),
    "<": _comparison(operator.lt, ordering=True),
    "<=": _comparison(operator.le, ordering=True),
    ">": _comparison(operator.gt, ordering=True),
    ">=": _comparison(operator.ge, ordering=True),
}


# --- three-valued logic ------------------------------------------------------------


def truth_not(value: Truth) -> Truth:
    """NOT: unknown stays unknown."""
    return None if value is None else not value


def truth_and(left: Truth, right: Truth) -> Truth:
    """AND: false wins, then unknown."""
    if left is False or right is False:
        return False
    if left is None or right is None:
        return None
    return True


def truth_or(left: Truth, right: Truth) -> Truth:
    """OR: true wins, then unknown."""
    if left is True or right is True:
        return True
    if left is None or right is None:
        return None
    return False


# --- arithmetic --------------------------------------------------------------------


def _float_divide(left: float, right: float) -> float:
    if right != 0:
        return left / right
    if left == 0 or math.isnan(left):
        return math.nan
    return math.copysign(math.inf, left) * math.copysign(1.0, right)


def _float_remainder(left: float, right: float) -> float:
    return math.nan if right == 0 else math.fmod(left, right)


def _int_divide(left: int, right: int) -> int | None:
    if right == 0:
        return None
    quotient = abs(left) // abs(right)
    return to_int64(quotient if (left < 0) == (right < 0) else -quotient)


def _int_remainder(left: int, right: int) -> int | None:
    if right == 0:
        return None
    remainder = abs(left) % abs(right)
    return remainder if left >= 0 else -remainder


_INT_OPS: dict[str, Callable[[int, int], int | None]] = {
    "+": lambda a, b: to_int64(a + b),
    "-": lambda a, b: to_int64(a - b),
    "*": lambda a, b: to_int64(a * b),
    "/": _int_divide,
    "%": _int_remainder,
}

_FLOAT_OPS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": _float_divide,
    "%": _float_remainder,
}

_TEMPORAL = (datetime, timedelta)


def _arithmetic(symbol: str) -> Callable[[Any, Any], Any]:
    int_op, float_op = _INT_OPS[symbol], _FLOAT_OPS[symbol]
    temporal_op = {"+": operator.add, "-": operator.sub}.get(symbol)

    def apply(left: Any, right: Any) -> Any:
        if left is None or right is None:
            return None
        if is_number(left) and is_number(right):
            if isinstance(left, float) or isinstance(right, float):
                return float_op(float(left), float(right))
            return int_op(int(left), int(right))
        if symbol == "+" and isinstance(left, str) and isinstance(right, str):
            return left + right
        if temporal_op is not None and isinstance(left, _TEMPORAL) and isinstance(
            right, _TEMPORAL
        ):
            try:
                return temporal_op(left, right)
            except (TypeError, OverflowError):
                return None
        return None

    return apply


#: The binary arithmetic operators by their spelling.
ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    symbol: _arithmetic(symbol) for symbol in ("+", "-", "*", "/", "%")
}


def sign(symbol: str, value: Any) -> Any:
    """Unary ``+`` / ``-`` on a number or a time span; unknown for anything else."""
    if is_number(value):
        if symbol == "+":
            return value
        return -value if isinstance(value, float) else to_int64(-int(value))
    if isinstance(value, timedelta):
        return value if symbol == "+" else -value
    return None


# --- LIKE --------------------------------------------------------------------------


def like_pattern(pattern: str, escape: str | None) -> re.Pattern[str] | None:
    """The regular expression for a LIKE pattern; ``None`` if the escape is misused.

    ``%`` is any run of characters, ``_`` any one character, and the escape
    character (a string of length 1) makes the next character literal. The match
    is case-sensitive and covers the whole string.
    """
    parts: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if escape is not None and char == escape:
            literal = next(chars, None)
            if literal is None:
                return None
            parts.append(re.escape(literal))
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)
