"""A fast pure-Python decoder of AMQP 1.0 encoded values (part 1 §1.6).

It returns exactly what proton's ``Data.get_object()`` returns, every binary copied out of
proton's buffer: proton's wrapper types (``uint``, ``int32``, ``symbol``,
``timestamp``, ``Array``, ``Described``, ...), ``bytes`` for binary, plain ``int``
for long, ``float`` for double, ``uuid.UUID``, ``list`` and ``dict``; an array's
descriptor and element type are split out as proton does. Walking proton's tree
through cffi costs several times more per value than decoding the bytes here.

It is stricter than proton where proton is lenient with malformed input: a
container whose size does not match its contents, a map with an odd number of
items, more elements than the encoding has bytes for, a nested descriptor in an
array's element constructor or nesting deeper than :data:`MAX_DEPTH` all raise
:class:`~sbmgmt.errors.ProtocolError`, as does anything truncated or not AMQP.

The scalar readers are in :mod:`sbmgmt.amqp._scalars`; this module holds the compounds,
the constructor table and the entry points. :mod:`sbmgmt.amqp.scan` reads values of a
known shape (text-keyed maps, a reply's message list) in one pass.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    byte,
    decimal32,
    decimal64,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from ._scalars import (
    _SMALLULONGS,
    _boolean,
    _char,
    _constant,
    _decimal128,
    _fail,
    _fixed,
    _one_byte,
    _one_byte_values,
    _prefixed,
    _Reader,
    _uuid,
    new_uuid,
)

__all__ = [
    "MAX_DEPTH",
    "decode_described",
    "decode_descriptor",
    "decode_value",
]

#: Containers and described values nested deeper than this are refused.
MAX_DEPTH = 100

_DESCRIPTOR_REFUSED = (Described, Array, dict)  # proton refuses these as descriptors


def decode_value(data: bytes, offset: int = 0) -> tuple[Any, int]:
    """Decode the one AMQP value at ``offset``: the value and the offset just after it.

    Raises :class:`~sbmgmt.errors.ProtocolError` if the bytes there are not a
    complete, well-formed AMQP value.
    """
    return _value(data, offset, len(data), 0)


def decode_described(data: bytes, offset: int = 0) -> tuple[Any, Any, int]:
    """Decode the described value at ``offset``: its descriptor, its value and the
    offset just after it, without building a ``Described`` (message sections).

    Raises :class:`~sbmgmt.errors.ProtocolError` if the bytes there are not a
    complete, well-formed described value.
    """
    end = len(data)
    if offset + 3 < end and data[offset + 1] == 0x53 and data[offset] == 0x00:
        # 0x00 0x53 <code>: a smallulong descriptor, as every message section has.
        value, at = _READERS[data[offset + 3]](data, offset + 4, end, 1)
        return _SMALLULONGS[data[offset + 2]], value, at
    descriptor, at = decode_descriptor(data, offset)
    if at >= end:
        _fail("truncated described value", at)
    value, at = _READERS[data[at]](data, at + 1, end, 1)
    return descriptor, value, at


def decode_descriptor(data: bytes, offset: int = 0) -> tuple[Any, int]:
    """The descriptor of the described value at ``offset`` (its 0x00 first) and the
    offset of the value it describes; ProtocolError as for :func:`decode_described`."""
    if offset >= len(data) or data[offset] != 0x00:
        _fail("not a described value", offset)
    return _descriptor(data, offset + 1, len(data), 1)


def _value(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    if pos >= end:
        _fail("truncated value", pos)
    return _READERS[buf[pos]](buf, pos + 1, end, depth)


def _descriptor(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    if pos >= end:
        _fail("truncated descriptor", pos)
    descriptor, after = _READERS[buf[pos]](buf, pos + 1, end, depth)
    if isinstance(descriptor, _DESCRIPTOR_REFUSED):
        _fail("descriptor is not a plain value", pos)
    return descriptor, after


def _empty_list(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    return [], pos


# --- compound values ---------------------------------------------------------


def _header(width: int) -> Callable[[bytes, int, int], tuple[int, int, int]]:
    """A compound's size and count reader for ``width``-byte fields:
    ``(buf, pos, end) -> (first content byte, count, end of the compound)``."""
    unpack = struct.Struct(">BB" if width == 1 else ">II").unpack_from
    fields = 2 * width

    def read(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
        start = pos + fields
        if start > end:
            _fail("truncated size or count", pos)
        size, count = unpack(buf, pos)
        stop = pos + width + size
        if stop > end:
            _fail("size past the end", pos)
        return start, count, stop

    return read


def _items(buf: bytes, pos: int, count: int, stop: int, depth: int) -> list[Any]:
    """The ``count`` items of a list or map from ``pos``, which must end at ``stop``."""
    if count > stop - pos:  # each item takes at least its constructor byte
        _fail(f"count {count} larger than the encoding", pos)
    if depth >= MAX_DEPTH:
        _fail(f"nesting deeper than {MAX_DEPTH}", pos)
    readers = _READERS
    depth += 1
    out: list[Any] = []
    append = out.append
    for _ in range(count):
        if pos >= stop:
            _fail("truncated compound", pos)
        code = buf[pos]
        if code == 0x40:  # null: common in properties and header lists
            append(None)
            pos += 1
            continue
        value, pos = readers[code](buf, pos + 1, stop, depth)
        append(value)
    if pos != stop:
        _fail("compound size does not match its contents", pos)
    return out


def _list(width: int) -> _Reader:
    header = _header(width)

    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        start, count, stop = header(buf, pos, end)
        return _items(buf, start, count, stop, depth), stop

    return read


def _map(width: int) -> _Reader:
    header = _header(width)

    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        start, count, stop = header(buf, pos, end)
        items = _items(buf, start, count, stop, depth)
        if count % 2:
            _fail(f"map with an odd number of items ({count})", pos)
        try:
            return dict(zip(items[::2], items[1::2], strict=True)), stop
        except TypeError:
            _fail("map key is not hashable", pos)

    return read


def _array(width: int) -> _Reader:
    header = _header(width)

    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        start, count, stop = header(buf, pos, end)
        if count > stop - pos:
            # Zero-width elements (nulls) take no bytes: as many as the array's
            # encoding has bytes after its format code, no more.
            _fail(f"count {count} larger than the encoding", pos)
        if depth >= MAX_DEPTH:
            _fail(f"nesting deeper than {MAX_DEPTH}", pos)
        depth += 1
        if start >= stop:
            _fail("array without an element constructor", start)
        code = buf[start]
        at = start + 1
        descriptor: Any = UNDESCRIBED
        if code == 0x00:
            descriptor, at = _descriptor(buf, at, stop, depth)
            if at >= stop:
                _fail("array without an element constructor", at)
            code = buf[at]
            at += 1
        element_type = _ARRAY_TYPES.get(code)
        if element_type is None:
            _fail(f"bad array element constructor 0x{code:02x}", at - 1)
        bulk = _BULK_ELEMENTS.get(code)
        if bulk is not None:
            elements = bulk(buf, at, stop, count)
        else:
            reader = _READERS[code]
            elements = []
            append = elements.append
            for _ in range(count):
                value, at = reader(buf, at, stop, depth)
                append(value)
            if at != stop:
                _fail("array size does not match its contents", at)
        return Array(descriptor, element_type, *elements), stop

    return read


_Bulk = Callable[[bytes, int, int, int], list[Any]]


def _bulk_numbers(fmt: str, kind: type | None) -> _Bulk:
    """All elements of an array of one fixed-width number type in one ``unpack``
    (the lock-token expirations and sequence numbers of big batches)."""
    width = struct.calcsize(">" + fmt)

    def values(buf: bytes, at: int, stop: int, count: int) -> list[Any]:
        if at + count * width != stop:
            _fail("array size does not match its contents", at)
        return list(struct.unpack_from(f">{count}{fmt}", buf, at))

    if kind is None:
        return values
    new = kind.__mro__[1].__new__

    def typed(buf: bytes, at: int, stop: int, count: int) -> list[Any]:
        return [new(kind, value) for value in values(buf, at, stop, count)]

    return typed


def _bulk_uuids(buf: bytes, at: int, stop: int, count: int) -> list[Any]:
    if at + count * 16 != stop:
        _fail("array size does not match its contents", at)
    return [new_uuid(buf[i:i + 16]) for i in range(at, stop, 16)]


# element constructor -> reader of all of an array's elements at once
_BULK_ELEMENTS: dict[int, _Bulk] = {
    0x81: _bulk_numbers("q", None),        # long
    0x83: _bulk_numbers("q", timestamp),   # timestamp: ms since the Unix epoch
    0x98: _bulk_uuids,                     # uuid
}


def _described(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_DEPTH:
        _fail(f"nesting deeper than {MAX_DEPTH}", pos)
    descriptor, pos = _descriptor(buf, pos, end, depth + 1)
    value, pos = _value(buf, pos, end, depth + 1)
    return Described(descriptor, value), pos


def _bad_constructor(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    _fail(f"bad constructor 0x{buf[pos - 1]:02x}", pos - 1)


# --- the constructor table ---------------------------------------------------

# format code -> (reader, proton type code of an array with that element constructor)
_CONSTRUCTORS: dict[int, tuple[_Reader, int]] = {
    0x40: (_constant(None), Data.NULL),
    0x41: (_constant(True), Data.BOOL),
    0x42: (_constant(False), Data.BOOL),
    0x56: (_boolean, Data.BOOL),
    0x43: (_constant(uint(0)), Data.UINT),
    0x52: (_one_byte(_one_byte_values(">B", uint)), Data.UINT),
    0x70: (_fixed(">I", uint), Data.UINT),
    0x44: (_constant(ulong(0)), Data.ULONG),
    0x53: (_one_byte(_SMALLULONGS), Data.ULONG),
    0x80: (_fixed(">Q", ulong), Data.ULONG),
    0x50: (_one_byte(_one_byte_values(">B", ubyte)), Data.UBYTE),
    0x51: (_one_byte(_one_byte_values(">b", byte)), Data.BYTE),
    0x60: (_fixed(">H", ushort), Data.USHORT),
    0x61: (_fixed(">h", short), Data.SHORT),
    0x54: (_one_byte(_one_byte_values(">b", int32)), Data.INT),
    0x71: (_fixed(">i", int32), Data.INT),
    0x55: (_one_byte(_one_byte_values(">b", None)), Data.LONG),
    0x81: (_fixed(">q", None), Data.LONG),
    0x72: (_fixed(">f", float32), Data.FLOAT),
    0x82: (_fixed(">d", None), Data.DOUBLE),
    0x73: (_char, Data.CHAR),
    0x74: (_fixed(">I", decimal32), Data.DECIMAL32),
    0x84: (_fixed(">Q", decimal64), Data.DECIMAL64),
    0x94: (_decimal128, Data.DECIMAL128),
    0x83: (_fixed(">q", timestamp), Data.TIMESTAMP),
    0x98: (_uuid, Data.UUID),
    0xA0: (_prefixed(1, None), Data.BINARY),
    0xB0: (_prefixed(4, None), Data.BINARY),
    0xA1: (_prefixed(1, str), Data.STRING),
    0xB1: (_prefixed(4, str), Data.STRING),
    0xA3: (_prefixed(1, symbol), Data.SYMBOL),
    0xB3: (_prefixed(4, symbol), Data.SYMBOL),
    0x45: (_empty_list, Data.LIST),
    0xC0: (_list(1), Data.LIST),
    0xD0: (_list(4), Data.LIST),
    0xC1: (_map(1), Data.MAP),
    0xD1: (_map(4), Data.MAP),
    0xE0: (_array(1), Data.ARRAY),
    0xF0: (_array(4), Data.ARRAY),
}

_READERS: list[_Reader] = [_bad_constructor] * 256
for _code, (_reader, _) in _CONSTRUCTORS.items():
    _READERS[_code] = _reader
_READERS[0x00] = _described

_ARRAY_TYPES: dict[int, int] = {code: kind for code, (_, kind) in _CONSTRUCTORS.items()}
