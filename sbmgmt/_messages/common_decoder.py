"""The one-pass decoder of a message encoded the common way, and :func:`_decode`, the
entry point of decoding that tries it first.

Every section described by a smallulong (0x00 0x53 <code>) and each value in one of the
encodings proton and the service write is read straight to its field's value, with no
AMQP value built on the way; anything else (malformed bytes included) is left to the
generic decoder (:mod:`sbmgmt._messages.section_decoder`), which decodes it or raises.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from proton import symbol, ulong
from pydantic import BaseModel

from ..amqp.decode import decode_value
from ..amqp.scan import ValueReader, compound_at, decode_text_map
from ..amqp.sections import DATA as _DATA
from ..amqp.sections import HEADER as _HEADER
from ..amqp.sections import MESSAGE_ANNOTATIONS as _MESSAGE_ANNOTATIONS
from ..amqp.sections import PROPERTIES as _PROPERTIES
from ..amqp.values import datetime_from_ms
from ..errors import ProtocolError
from .fields import (
    _ANNOTATION_FIELDS,
    _PROPERTY_FIELDS,
    _RECEIVED_ANNOTATION_FIELDS,
    _STATES,
    MESSAGE_STATE,
    Decoding,
    MessageState,
    _binary,
    _count,
    _identifier,
    _Reader,
    _state,
    _text,
    _time,
)
from .section_decoder import (
    _MAP_SECTIONS,
    _SECTION_READERS,
    _decode_sections,
    _SectionReader,
    split_annotations,
    with_data,
)

# --- the common encodings, read straight to field values ----------------------
#
# An item reader takes the bytes, the offset just after the item's constructor and the
# end of its list; it returns the field value and the offset after the item, or raises
# ProtocolError (ValueError for text that does not decode) if the item does not fit.

def _prefixed8(encoding: str | None) -> ValueReader:
    """A one-byte length, then that many bytes: as they are (``encoding`` None), or
    the text they encode."""
    def item(raw: bytes, pos: int, stop: int) -> tuple[Any, int]:
        if pos >= stop or pos + 1 + raw[pos] > stop:
            raise ProtocolError("malformed AMQP message: truncated item")
        after = pos + 1 + raw[pos]
        value = raw[pos + 1:after]
        return (value if encoding is None else value.decode(encoding)), after

    return item


def _fixed(fmt: str, convert: Callable[[int], Any] | None = None) -> ValueReader:
    """A fixed-width number (``struct`` format ``fmt``), made a field value by
    ``convert`` (``None``: the plain ``int``)."""
    unpack = struct.Struct(fmt).unpack_from
    width = struct.calcsize(fmt)

    def item(raw: bytes, pos: int, stop: int) -> tuple[Any, int]:
        after = pos + width
        if after > stop:
            raise ProtocolError("malformed AMQP message: truncated item")
        number = unpack(raw, pos)[0]
        return (number if convert is None else convert(number)), after

    return item


def _constant(value: Any) -> ValueReader:
    def item(raw: bytes, pos: int, stop: int) -> tuple[Any, int]:
        return value, pos

    return item


def _milliseconds(ms: int) -> timedelta:
    return timedelta(milliseconds=ms)


def _known_state(number: int) -> MessageState:
    state = _STATES.get(number)
    if state is None:
        raise ProtocolError(f"unknown {MESSAGE_STATE} {number}")
    return state


def _repeated_datetime() -> Callable[[int], datetime]:
    """``datetime_from_ms``, with the last result kept: the messages of a page, sent
    together, often carry the same enqueued time (datetimes are immutable)."""
    last = [(0, datetime_from_ms(0))]

    def convert(ms: int) -> datetime:
        known = last[0]  # one (ms, datetime) pair, replaced whole: safe across threads
        if known[0] == ms:
            return known[1]
        value = datetime_from_ms(ms)
        last[0] = (ms, value)
        return value

    return convert


_TEXT: dict[int, ValueReader] = {  # a symbol as its plain text, as str() of it gives
    0xA1: _prefixed8("utf-8"),  # str8-utf8
    0xA3: _prefixed8("ascii"),  # sym8
}
def _uuid_item(raw: bytes, pos: int, stop: int) -> tuple[Any, int]:
    after = pos + 16
    if after > stop:
        raise ProtocolError("malformed AMQP message: truncated item")
    return uuid.UUID(bytes=raw[pos:after]), after


def _symbol_text(raw: bytes, pos: int, stop: int) -> tuple[Any, int]:
    text, after = _SYM8(raw, pos, stop)
    return symbol(text), after


_SYM8 = _prefixed8("ascii")
#: A message-id / correlation-id of each of its four types, as _identifier keeps them.
_IDENTIFIER: dict[int, ValueReader] = {
    0xA1: _prefixed8("utf-8"),  # str8-utf8
    0xA3: _symbol_text,  # sym8: kept a symbol
    0x98: _uuid_item,  # uuid
    0xA0: _prefixed8(None),  # vbin8
    0x44: _constant(ulong(0)),  # ulong0
    0x53: _fixed(">B", ulong),  # smallulong
    0x80: _fixed(">Q", ulong),  # ulong
}
_UINT: dict[int, ValueReader] = {
    0x43: _constant(0),  # uint0
    0x52: _fixed(">B"),  # smalluint
    0x70: _fixed(">I"),  # uint
}
_MILLISECONDS: dict[int, ValueReader] = {  # a uint of milliseconds, as a timedelta
    0x43: _constant(timedelta()),  # uint0
    0x52: _fixed(">B", _milliseconds),  # smalluint
    0x70: _fixed(">I", _milliseconds),  # uint
}
_BOOLEAN: dict[int, ValueReader] = {
    0x41: _constant(True),  # true
    0x42: _constant(False),  # false
}
_TIMESTAMP: dict[int, ValueReader] = {
    # 0x83 timestamp; out of range: OverflowError here, ProtocolError in _decode_sections
    0x83: _fixed(">q", _repeated_datetime()),
}
_LONG: dict[int, ValueReader] = {
    0x81: _fixed(">q"),  # long
    0x55: _fixed(">b"),  # smalllong
}
_STATE: dict[int, ValueReader] = {
    0x81: _fixed(">q", _known_state),  # long
    0x55: _fixed(">b", _known_state),  # smalllong
    0x71: _fixed(">i", _known_state),  # int
    0x54: _fixed(">b", _known_state),  # smallint
}

#: The header list's items: (field, constructor -> reader), as _read_header reads them.
_HEADER_ITEMS: tuple[tuple[str, dict[int, ValueReader]], ...] = (
    ("durable", _BOOLEAN),
    ("priority", {0x50: _fixed(">B")}),  # 0x50 ubyte
    ("time_to_live", _MILLISECONDS),
    ("first_acquirer", _BOOLEAN),
    ("delivery_count", _UINT),
)
#: The common encodings of what each _Reader reads.
_COMMON_VALUES: dict[_Reader, dict[int, ValueReader]] = {
    _binary: {0xA0: _prefixed8(None)},  # 0xa0 vbin8
    _time: _TIMESTAMP, _count: {**_UINT, **_LONG}, _text: _TEXT, _state: _STATE,
    _identifier: _IDENTIFIER,
}
#: The properties list's items, as _read_properties reads them.
_PROPERTY_ITEMS: tuple[tuple[str, dict[int, ValueReader]], ...] = tuple(
    (name, _COMMON_VALUES[reader]) for name, reader, _ in _PROPERTY_FIELDS
)


def _scan_list(raw: bytes, pos: int, items: tuple[tuple[str, dict[int, ValueReader]], ...],
               fields: dict[str, Any]) -> int | None:
    """A list0 / list8 / list32 at ``pos`` into ``fields``, item ``i`` through
    ``items[i]``: the offset after it, or ``None`` if an item's constructor is not one
    ``items`` reads (nulls are absent fields). Raises ProtocolError if the list is
    malformed."""
    if raw[pos] == 0x45:  # list0
        return pos + 1
    listed = compound_at(raw, pos, 0xC0, 0xD0)  # list8 / list32
    if listed is None or listed[1] > len(items):
        return None
    at, count, stop = listed
    for name, readers in items[:count]:
        if at >= stop:
            raise ProtocolError("malformed AMQP message: truncated list")
        code = raw[at]
        if code != 0x40:  # null
            read = readers.get(code)
            if read is None:
                return None
            fields[name], at = read(raw, at + 1, stop)
        else:
            at += 1
    if at != stop:
        raise ProtocolError("malformed AMQP message: list size does not match its items")
    return stop


@functools.cache
def decoding(cls: type[BaseModel]) -> Decoding:
    """How to decode into ``cls`` (a message class), from its fields."""
    names = cls.model_fields
    defaults: dict[str, Any] = dict.fromkeys(names)
    defaults.update(
        body=b"", body_type="data", application_properties={}, annotations={},
        delivery_annotations={}, footer={},
    )
    if "state" in names:
        defaults["state"] = MessageState.ACTIVE
    annotations = (_RECEIVED_ANNOTATION_FIELDS if "sequence_number" in names
                   else _ANNOTATION_FIELDS)
    return Decoding(
        defaults=defaults,
        names=set(names),
        annotations=annotations,
        annotation_values={key: _COMMON_VALUES[read] for key, (_, read) in annotations.items()},
        dead_letter="dead_letter_reason" in names,
    )


_MAP_FIELDS = ("application_properties", "annotations", "delivery_annotations", "footer")


def _decode(raw: bytes, decoding: Decoding) -> dict[str, Any]:
    """Every field of a message from its bytes: :func:`_decode_common` if it can, else
    :func:`_decode_sections` (which raises what is wrong with the bytes)."""
    fields = _decode_common(raw, decoding) if type(raw) is bytes else None
    if fields is None:
        fields = _decode_sections(raw, decoding)
    for name in _MAP_FIELDS:
        if not fields[name]:
            fields[name] = {}  # its own: not the defaults' dict, shared by every message
    return fields


def _decode_common(raw: bytes, decoding: Decoding) -> dict[str, Any] | None:
    """The fields of a message encoded the common way, in one pass: every section
    described by a smallulong (0x00 0x53 <code>) and read by :data:`_COMMON_SECTIONS`.

    ``None`` for anything else, malformed bytes included: :func:`_decode_sections`
    decodes those (the same fields) or raises (its error)."""
    fields = decoding.defaults.copy()
    parts: list[bytes] = []
    offset = 0
    end = len(raw)
    if not end:
        return None  # no sections
    try:
        while offset < end:
            if offset + 3 >= end or not raw.startswith(b"\x00\x53", offset):
                return None
            read = _COMMON_SECTIONS.get(raw[offset + 2])
            after = None if read is None else read(raw, offset + 3, fields, decoding, parts)
            if after is None:
                return None
            offset = after
    except (ProtocolError, ValueError, OverflowError):
        return None
    return with_data(fields, parts)


# --- the sections of the common encodings ---------------------------------------
#
# A section reader of _decode_common takes the bytes, the offset of the section's value
# (just after 0x00 0x53 <code>), the fields, the decoding and the data parts; it returns
# the offset after the section, or None if the value is not one it reads.

_CommonReader = Callable[[bytes, int, dict[str, Any], Decoding, list[bytes]], int | None]

_HEADER_ABSENT = dict.fromkeys(name for name, _ in _HEADER_ITEMS)


def _common_header(raw: bytes, pos: int, fields: dict[str, Any], decoding: Decoding,
                   parts: list[bytes]) -> int | None:
    # Every header field is set, null or not, as _read_header sets them. Most messages
    # of a page have the same header (delivery count, ttl): each encoding is read once.
    listed = compound_at(raw, pos, 0xC0, 0xD0)
    if listed is None:
        fields.update(_HEADER_ABSENT)
        return _scan_list(raw, pos, _HEADER_ITEMS, fields)
    stop = listed[2]
    encoded = raw[pos:stop]
    known = _HEADERS.get(encoded)
    if known is None:
        known = _HEADER_ABSENT.copy()
        if _scan_list(raw, pos, _HEADER_ITEMS, known) is None:
            return None
        if len(_HEADERS) < _HEADERS_KEPT:
            _HEADERS[encoded] = known
    fields.update(known)
    return stop


#: Header encodings -> their fields (bool, int, timedelta: immutable, shared), at most
#: :data:`_HEADERS_KEPT` of them.
_HEADERS: dict[bytes, dict[str, Any]] = {}
_HEADERS_KEPT = 256


def _common_properties(raw: bytes, pos: int, fields: dict[str, Any], decoding: Decoding,
                       parts: list[bytes]) -> int | None:
    return _scan_list(raw, pos, _PROPERTY_ITEMS, fields)


def _common_data(raw: bytes, pos: int, fields: dict[str, Any], decoding: Decoding,
                 parts: list[bytes]) -> int | None:
    value, after = decode_value(raw, pos)  # binary: no nesting, so no depth to count
    if type(value) is not bytes:
        return None
    parts.append(value)
    return after


def _common_annotations(raw: bytes, pos: int, fields: dict[str, Any], decoding: Decoding,
                        parts: list[bytes]) -> int | None:
    """Message annotations, the typed ones read straight to their fields' values."""
    annotations, after = decode_text_map(raw, pos, decoding.annotation_values)
    if annotations is None:
        return None
    split_annotations(annotations, fields, decoding, read=False)
    return after


def _common_map(read: _SectionReader) -> _CommonReader:
    """A map section, its keys strings or symbols (:func:`decode_text_map`), then
    ``read`` as for the generic decoding."""
    def common(raw: bytes, pos: int, fields: dict[str, Any], decoding: Decoding,
               parts: list[bytes]) -> int | None:
        value, after = decode_text_map(raw, pos)
        if value is None:
            return None
        read(value, fields, decoding, parts)
        return after

    return common


#: Section code -> its reader in _decode_common (the body sections amqp-value and
#: amqp-sequence are left to the generic decoding).
_COMMON_SECTIONS: dict[int, _CommonReader] = {
    _HEADER: _common_header,
    _PROPERTIES: _common_properties,
    _DATA: _common_data,
    **{code: _common_map(_SECTION_READERS[code]) for code in _MAP_SECTIONS},
    _MESSAGE_ANNOTATIONS: _common_annotations,
}
