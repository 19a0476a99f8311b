"""The readers of AMQP 1.0 scalar values (part 1 §1.6) for :mod:`sbmgmt.amqp.decode`:
fixed-width numbers, booleans, chars, decimals, UUIDs, binaries, strings and symbols.

A reader takes the bytes, the offset just after the constructor, the end of the
enclosing compound and the nesting depth; it returns the value and the offset after it,
or raises :class:`~sbmgmt.errors.ProtocolError` (through :func:`_fail`).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, NoReturn

from proton import char, decimal128, symbol, ulong

from ..errors import ProtocolError

_Reader = Callable[[bytes, int, int, int], tuple[Any, int]]

_UUID = uuid.UUID


def _fail(what: str, pos: int) -> NoReturn:
    raise ProtocolError(f"malformed AMQP value: {what} at byte {pos}")


# --- fixed-width values ------------------------------------------------------


def _constant(value: Any) -> _Reader:
    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        return value, pos

    return read


def _fixed(fmt: str, kind: type | None) -> _Reader:
    """A fixed-width number; ``kind`` is the proton type (``None``: plain int / float).

    proton's unsigned types re-check their sign in a Python ``__init__``; the value
    here cannot be negative, so the instance is made with the base type's ``__new__``.
    """
    unpack = struct.Struct(fmt).unpack_from
    width = struct.calcsize(fmt)

    if kind is None:
        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            stop = pos + width
            if stop > end:
                _fail("truncated value", pos)
            return unpack(buf, pos)[0], stop
    else:
        new = kind.__mro__[1].__new__

        def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
            stop = pos + width
            if stop > end:
                _fail("truncated value", pos)
            return new(kind, unpack(buf, pos)[0]), stop

    return read


def _one_byte_values(fmt: str, kind: type | None) -> list[Any]:
    """The 256 values of a one-byte number, indexed by the byte."""
    values = [unpack[0] for unpack in struct.iter_unpack(fmt, bytes(range(256)))]
    if kind is None:
        return values
    new = kind.__mro__[1].__new__
    return [new(kind, value) for value in values]


#: smallulong (0x53) values: also the descriptors of message sections.
_SMALLULONGS = _one_byte_values(">B", ulong)


def _one_byte(values: list[Any]) -> _Reader:
    """A one-byte number, from its table of the 256 values (made once)."""

    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        if pos >= end:
            _fail("truncated value", pos)
        return values[buf[pos]], pos + 1

    return read


def _boolean(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    if pos >= end:
        _fail("truncated boolean", pos)
    return buf[pos] != 0, pos + 1  # proton takes any non-zero byte as true


def _char(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    stop = pos + 4
    if stop > end:
        _fail("truncated char", pos)
    code_point = int.from_bytes(buf[pos:stop], "big")
    if code_point > 0x10FFFF:
        _fail(f"char U+{code_point:X} is not a code point", pos)
    return char(chr(code_point)), stop


def _decimal128(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    stop = pos + 16
    if stop > end:
        _fail("truncated decimal128", pos)
    return decimal128(buf[pos:stop]), stop


_new_object = object.__new__
# The slot descriptors UUID.__init__ fills (through object.__setattr__, as UUID
# forbids setting attributes).
_set_int = _UUID.__dict__["int"].__set__
_set_safety = _UUID.__dict__["is_safe"].__set__
_UNKNOWN_SAFETY = uuid.SafeUUID.unknown
_from_bytes = int.from_bytes


def new_uuid(sixteen: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=sixteen)`` without its argument checks (the caller passes
    exactly 16 bytes): the two slots ``UUID.__init__`` sets, at a third of the cost."""
    value: uuid.UUID = _new_object(_UUID)
    _set_int(value, _from_bytes(sixteen, "big"))
    _set_safety(value, _UNKNOWN_SAFETY)
    return value


def _uuid(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    stop = pos + 16
    if stop > end:
        _fail("truncated uuid", pos)
    return new_uuid(buf[pos:stop]), stop


# --- variable-width values ---------------------------------------------------


def _prefixed(width: int, kind: type[str] | None) -> _Reader:
    """binary (``kind`` None), string (``str``: UTF-8) or symbol (``symbol``: ASCII, as
    proton decodes it): a ``width``-byte length, then that many bytes."""
    unpack = struct.Struct(">I").unpack_from

    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        start = pos + width
        if start > end:
            _fail("truncated length", pos)
        stop = start + (buf[pos] if width == 1 else unpack(buf, pos)[0])
        if stop > end:
            _fail("length past the end", pos)
        if kind is None:
            return buf[start:stop], stop
        if kind is str:
            try:
                return buf[start:stop].decode(), stop
            except UnicodeDecodeError:
                _fail("string is not utf-8", pos)
        encoded = buf[start:stop]
        value = _SYMBOLS.get(encoded)
        return (_new_symbol(encoded, pos) if value is None else value), stop

    return read


#: Symbols by their encoded bytes: a few (descriptors, annotation keys, content types)
#: come again and again. At most :data:`_SYMBOLS_KEPT` are kept.
_SYMBOLS: dict[bytes, symbol] = {}
_SYMBOLS_KEPT = 4096


def _new_symbol(encoded: bytes, pos: int) -> symbol:
    try:
        value = symbol(encoded, "ascii")
    except UnicodeDecodeError:
        _fail("symbol is not ascii", pos)
    if len(_SYMBOLS) < _SYMBOLS_KEPT:
        _SYMBOLS[encoded] = value
    return value
