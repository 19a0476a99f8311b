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
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
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

from ..errors import ProtocolError

__all__ = [
    "MAX_DEPTH",
    "ValueReader",
    "decode_described",
    "decode_message_list_map",
    "decode_text_map",
    "decode_value",
    "compound_at",
]

#: Containers and described values nested deeper than this are refused.
MAX_DEPTH = 100

_Reader = Callable[[bytes, int, int, int], tuple[Any, int]]

_UUID = uuid.UUID
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
    if offset >= end or data[offset] != 0x00:
        _fail("not a described value", offset)
    descriptor, at = _descriptor(data, offset + 1, end, 1)
    if at >= end:
        _fail("truncated described value", at)
    value, at = _READERS[data[at]](data, at + 1, end, 1)
    return descriptor, value, at


#: Reads one value whose constructor is known: (bytes, offset just after the
#: constructor, end of the enclosing compound) -> (value, offset after it).
ValueReader = Callable[[bytes, int, int], tuple[Any, int]]

_NO_SPECIAL: dict[str, dict[int, ValueReader]] = {}


def decode_text_map(
    data: bytes, offset: int, special: Mapping[str, Mapping[int, ValueReader]] = _NO_SPECIAL
) -> tuple[dict[str, Any] | None, int]:
    """The map at ``offset`` (a message section's value, just after its descriptor) with
    its keys as ``str``, and the offset just after it; ``(None, offset)`` if the value
    there is not a map8 / map32 whose size fits the data, or a key is not a string or a
    symbol.

    The dict is ``{str(k): v for k, v in decode_value(...)[0].items()}`` for such a map
    (string and symbol keys of one text are one key, as in that dict), built in one pass,
    except that the value of a key in ``special`` is read by ``special[key]``'s reader
    for its constructor (``(None, offset)`` if it has none for it).
    Raises :class:`~sbmgmt.errors.ProtocolError` where :func:`decode_described` would
    for what is inside the map, and where a ``special`` reader does.
    """
    listed = compound_at(data, offset, 0xC1, 0xD1)  # map8 / map32
    if listed is None:
        return None, offset
    start, count, stop = listed
    if count > stop - start:
        _fail(f"count {count} larger than the encoding", offset + 1)
    if count % 2:
        _fail(f"map with an odd number of items ({count})", offset + 1)
    readers = _READERS
    keys = _TEXT_KEYS
    out: dict[str, Any] = {}
    pos = start
    for _ in range(count // 2):
        if pos + 1 >= stop:
            _fail("truncated compound", pos)
        code = data[pos]
        if code == 0xA3 or code == 0xA1:  # sym8 / str8: the key, from its cached text
            after = pos + 2 + data[pos + 1]
            if after > stop:
                _fail("length past the end", pos + 1)
            encoded = data[pos:after]
            key = keys.get(encoded)
            if key is None:
                key = str(readers[code](data, pos + 1, stop, 2)[0])
                if len(keys) < _TEXT_KEYS_KEPT:
                    keys[encoded] = key
            pos = after
        elif code == 0xB3 or code == 0xB1:  # sym32 / str32
            text, pos = readers[code](data, pos + 1, stop, 2)
            key = str(text)
        else:
            return None, offset
        if pos >= stop:
            _fail("truncated compound", pos)
        by_code = special.get(key)
        if by_code is None:
            out[key], pos = readers[data[pos]](data, pos + 1, stop, 2)
        else:
            read = by_code.get(data[pos])
            if read is None:
                return None, offset
            out[key], pos = read(data, pos + 1, stop)
    if pos != stop:
        _fail("compound size does not match its contents", pos)
    return out, stop


def decode_message_list_map(data: bytes, offset: int) -> tuple[dict[str, Any] | None, int]:
    """``decode_value(data, offset)`` for the body of a peek or receive-by-sequence-number
    reply, ``{"messages": [{"message": <binary>}, ...]}``, in one pass that only slices
    the binaries out; ``(None, offset)`` for any other value (or other encoding of it:
    a key of another type, an entry with a lock token), malformed ones included.

    Reads map8 / map32 (0xc1 / 0xd1), list0 / list8 / list32 (0x45 / 0xc0 / 0xd0),
    str8 keys (0xa1) and vbin8 / vbin32 (0xa0 / 0xb0).
    """
    outer = compound_at(data, offset, 0xC1, 0xD1)
    if outer is None or outer[1] != 2 or data[outer[0]:outer[0] + 10] != b"\xa1\x08messages":
        return None, offset
    at, _, end = outer
    at += 10
    if at < end and data[at] == 0x45:  # list0
        return ({"messages": []}, end) if at + 1 == end else (None, offset)
    listed = compound_at(data, at, 0xC0, 0xD0)
    if listed is None or listed[2] != end:
        return None, offset
    at, count, _ = listed
    entries: list[Any] = []
    append = entries.append
    for _ in range(count):
        entry = compound_at(data, at, 0xC1, 0xD1)
        if entry is None or entry[1] != 2:
            return None, offset
        at, _, stop = entry
        if data[at:at + 9] != b"\xa1\x07message" or at + 10 >= stop:
            return None, offset
        at += 9
        if data[at] == 0xA0:  # vbin8
            at += 2
            after = at + data[at - 1]
        elif data[at] == 0xB0 and at + 5 <= stop:  # vbin32
            at += 5
            after = at + _UINT32(data, at - 4)[0]
        else:
            return None, offset
        if after != stop:
            return None, offset
        append({"message": data[at:after]})
        at = after
    return ({"messages": entries}, end) if at == end else (None, offset)


def compound_at(data: bytes, offset: int, code8: int, code32: int) -> tuple[int, int, int] | None:
    """The list or map at ``offset`` if it is encoded with ``code8`` (one-byte size and
    count) or ``code32`` (four-byte): its first item, its count and its end; ``None``
    for another constructor or a size past the end of ``data``."""
    end = len(data)
    if offset >= end:
        return None
    code = data[offset]
    if code == code32 and offset + 9 <= end:
        size, count = _SIZE_COUNT_32(data, offset + 1)
        start, stop = offset + 9, offset + 5 + size
    elif code == code8 and offset + 3 <= end:
        size, count = _SIZE_COUNT_8(data, offset + 1)
        start, stop = offset + 3, offset + 2 + size
    else:
        return None
    return None if stop > end or start > stop else (start, count, stop)


_UINT32 = struct.Struct(">I").unpack_from
_SIZE_COUNT_8 = struct.Struct(">BB").unpack_from
_SIZE_COUNT_32 = struct.Struct(">II").unpack_from


#: Encoded sym8 / str8 map keys (constructor, length, bytes) -> their text. Message
#: annotations and application properties repeat a few keys in every message.
_TEXT_KEYS: dict[bytes, str] = {}
_TEXT_KEYS_KEPT = 4096


def _fail(what: str, pos: int) -> NoReturn:
    raise ProtocolError(f"malformed AMQP value: {what} at byte {pos}")


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


# --- fixed-width values ------------------------------------------------------


def _constant(value: Any) -> _Reader:
    def read(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
        return value, pos

    return read


def _empty_list(buf: bytes, pos: int, end: int, depth: int) -> tuple[Any, int]:
    return [], pos


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
