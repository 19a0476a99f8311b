"""One-pass readers of the AMQP values whose shape is known: a map with text keys (the
map sections of a message) and the message list of a peek or receive-by-sequence-number
reply. Each reads what it knows in one pass over the bytes, with no intermediate AMQP
values, and says ``None`` for anything else; :func:`sbmgmt.amqp.decode.decode_value`
stays the reference they are tested against.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from ._scalars import _fail
from .decode import _READERS

__all__ = [
    "ValueReader",
    "compound_at",
    "decode_message_list_map",
    "decode_text_map",
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
