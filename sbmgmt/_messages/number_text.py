"""AMQP numbers as decimal text, whatever type they came in.

Decoded AMQP values keep their wire type as proton's classes (``int32``, ``short``,
``byte``, ``ubyte``, ``ushort``, ``uint``, ``ulong``, ``float32``, ``decimal32`` /
``decimal64`` / ``decimal128``...). They subclass ``int``, ``float`` or ``bytes`` but
have no ``__str__`` of their own, so ``str(int32(0))`` is ``"int32(0)"``.
:func:`number_text` renders each as a number:

- integers of every width in plain decimal (``-3``, ``18446744073709551615``);
- ``float32`` in the shortest decimal that reads back as the same 32-bit float (``0.1``,
  not ``0.10000000149011612``); ``double`` as Python's ``repr`` (also shortest);
- ``decimal32`` / ``decimal64`` / ``decimal128`` (IEEE 754-2008, binary integer
  significand, as the azure-servicebus and .NET SDKs encode decimals) as the exact
  decimal value in Python's ``Decimal`` notation (``12.345``, ``-1E+3``, ``Infinity``,
  ``NaN``); a ``Decimal`` likewise.
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any

from proton import decimal32, decimal64, decimal128, float32

__all__ = ["number_text"]

# (total bits, exponent bits, exponent bias) of each IEEE 754-2008 decimal format.
_DECIMAL32 = (32, 8, 101)
_DECIMAL64 = (64, 10, 398)
_DECIMAL128 = (128, 14, 6176)
_FLOAT32 = struct.Struct(">f")


def number_text(value: Any) -> str | None:
    """The decimal text of an AMQP number; None when ``value`` is not a number (booleans
    and timestamps are not: they have their own renderings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, decimal32):
        return str(decimal_from_bid(int(value), *_DECIMAL32))
    if isinstance(value, decimal64):
        return str(decimal_from_bid(int(value), *_DECIMAL64))
    if isinstance(value, decimal128):
        return str(decimal_from_bid(int.from_bytes(bytes(value), "big"), *_DECIMAL128))
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float32):
        return _float32_text(float(value))
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, Decimal):
        return str(value)
    return None


def decimal_from_bid(bits: int, width: int, exponent_bits: int, bias: int) -> Decimal:
    """The value of an IEEE 754-2008 decimal of ``width`` bits, binary integer encoding.

    Below the sign bit, a combination field starting ``11`` puts the exponent two bits
    further down and gives the significand an implicit ``100`` prefix; ``11110`` and
    ``11111`` are infinity and NaN.
    """
    negative = bits >> (width - 1) & 1
    sign = "-" if negative else ""
    if bits >> (width - 5) & 0b1111 == 0b1111:
        return Decimal("NaN") if bits >> (width - 6) & 1 else Decimal(f"{sign}Infinity")
    mask = (1 << exponent_bits) - 1
    if bits >> (width - 3) & 0b11 == 0b11:
        low = width - 3 - exponent_bits
        exponent = bits >> low & mask
        significand = (0b100 << low) | (bits & ((1 << low) - 1))
    else:
        low = width - 1 - exponent_bits
        exponent = bits >> low & mask
        significand = bits & ((1 << low) - 1)
    return Decimal((negative, tuple(int(d) for d in str(significand)), exponent - bias))


def _float32_text(value: float) -> str:
    """The shortest decimal text that reads back as the same 32-bit float."""
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)
    packed = _FLOAT32.pack(value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if _FLOAT32.pack(float(text)) == packed:
            return repr(float(text))
    return repr(value)
