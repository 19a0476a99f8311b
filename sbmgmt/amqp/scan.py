"""One-pass readers of the AMQP values whose shape is known: a map with text keys (the
map sections of a message, whole or one key of it) and the message list of a peek or
receive-by-sequence-number reply. Each reads what it knows in one pass over the bytes,
with no intermediate AMQP values, and says ``None`` for anything else;
:func:`sbmgmt.amqp.decode.decode_value` stays the reference they are tested against.

:func:`value_end` finds where any value ends without decoding it: the structure of a
message's sections (:func:`sbmgmt.amqp.sections.section_spans`) is read with it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from ._scalars import _fail
from .decode import _CONSTRUCTORS, _READERS

__all__ = [
    "ValueReader",
    "compound_at",
    "decode_message_list_map",
    "decode_text_map",
    "text_map_find",
    "text_map_find_two",
    "value_end",
]


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


def text_map_find(data: bytes, offset: int, key: bytes) -> int | None:
    """The offset of the value of ``key`` (its text, encoded) in the map at ``offset``,
    found by reading the keys and skipping the values (:func:`value_end`): the last entry
    of that key, as in the dict :func:`decode_text_map` gives.

    ``None`` if the value there is not a map8 / map32 whose keys are all str8 / sym8 (any
    other encoding: read the map another way) or ``key`` is not in it. Raises
    :class:`~sbmgmt.errors.ProtocolError` where :func:`value_end` does.
    """
    found = text_map_find_two(data, offset, key, None)
    return None if found is None else found[0]


def text_map_find_two(data: bytes, offset: int, key: bytes,
                      other: bytes | None) -> tuple[int | None, int | None] | None:
    """:func:`text_map_find` of two keys in one reading of the map: the offsets of
    ``key``'s and ``other``'s values (each None when that key is not in it; ``other``
    None: not looked for).

    ``None`` if the value there is not a map8 / map32 whose keys are all str8 / sym8.
    Raises :class:`~sbmgmt.errors.ProtocolError` where :func:`value_end` does.
    """
    listed = compound_at(data, offset, 0xC1, 0xD1)  # map8 / map32
    if listed is None or listed[1] % 2:
        return None
    pos, count, stop = listed
    size = len(key)
    other_size = -1 if other is None else len(other)
    extents = _EXTENTS
    found = found_other = None
    for _ in range(count // 2):
        if pos + 1 >= stop or (data[pos] != 0xA3 and data[pos] != 0xA1):  # sym8 / str8
            return None
        length = data[pos + 1]
        value = pos + 2 + length
        if length == size and data.startswith(key, pos + 2):
            found = value
        elif length == other_size and data.startswith(other, pos + 2):  # type: ignore[arg-type]
            found_other = value
        width = extents[data[value]] if value < stop else None
        # A fixed-width value is stepped over here (past the end: the next key is not
        # there, and the map is declined); any other through value_end.
        pos = value + 1 + width if width is not None and width >= 0 else value_end(
            data, value, stop)
    return (found, found_other) if pos == stop else None


def value_end(data: bytes, offset: int, end: int) -> int:
    """Where the value at ``offset`` ends, from its constructors and sizes alone, without
    decoding it (nor checking what is inside a compound): for a well-formed value, the
    offset :func:`~sbmgmt.amqp.decode.decode_value` returns after it.

    Raises :class:`~sbmgmt.errors.ProtocolError` for an unknown constructor, a described
    value whose descriptor is itself described (the decoder refuses it too), or a value
    that does not fit before ``end``.
    """
    width = _EXTENTS[data[offset]] if offset < end else None
    if width is None:  # described, or not a value
        return _described_end(data, offset, end)
    if width >= 0:
        after = offset + 1 + width
    elif width == -1:
        after = offset + 2 + data[offset + 1] if offset + 2 <= end else end + 1
    else:
        after = offset + 5 + _UINT32(data, offset + 1)[0] if offset + 5 <= end else end + 1
    if after > end:
        _fail("size past the end", offset)
    return after


def _described_end(data: bytes, offset: int, end: int) -> int:
    """:func:`value_end` of a described value (or of what is not a value: it raises)."""
    while offset < end and data[offset] == 0x00:
        if offset + 1 < end and data[offset + 1] == 0x00:
            _fail("descriptor is not a plain value", offset + 1)
        offset = value_end(data, offset + 1, end)  # past the descriptor, to the value
    if offset >= end:
        _fail("truncated value", offset)
    if _EXTENTS[data[offset]] is None:
        _fail(f"bad constructor 0x{data[offset]:02x}", offset)
    return value_end(data, offset, end)


# How far a value extends follows from its format code's upper four bits (part 1 §1.2,
# "subcategory formats"): "0x4 Fixed Width, Zero octets of data", 0x5 one, 0x6 two, 0x7
# four, 0x8 eight and "0x9 Fixed Width, Sixteen octets of data"; "0xa Variable Width,
# One octet of size", "0xb ... Four octets of size"; "0xc Compound, One octet each of size
# and count", 0xd four; "0xe Array, One octet each of size and count", 0xf four. A size
# counts the octets after itself. Here: the fixed width, or -1 / -4 for a one- / four-octet
# size, of each constructor the decoder reads (None: not a constructor).
_SUBCATEGORY_WIDTHS = {0x4: 0, 0x5: 1, 0x6: 2, 0x7: 4, 0x8: 8, 0x9: 16,
                       0xA: -1, 0xB: -4, 0xC: -1, 0xD: -4, 0xE: -1, 0xF: -4}
_EXTENTS: list[int | None] = [None] * 256
for _code in _CONSTRUCTORS:
    _EXTENTS[_code] = _SUBCATEGORY_WIDTHS[_code >> 4]


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
