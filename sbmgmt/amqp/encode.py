"""A fast pure-Python encoder of AMQP 1.0 values and messages (part 1 §1.6, part 3 §3.2).

It writes what proton's ``Data.put_object()`` / ``Message.encode()`` write for the same
Python values, byte for byte, choosing the same encodings: the compact ones proton
picks for a lone value (``smalllong``, ``smalluint``, ``uint0``, ``str8`` ...), the
32-bit ``list32`` / ``map32`` / ``array32`` containers, the wide element encodings
inside arrays, and ``list8`` for a small properties section. Going through proton's
Python wrappers costs several times more per value than building the bytes here.

A value it has no fast path for (an unusual array, a described array, an
out-of-range number, a type proton maps that is rare on this wire) is encoded by
proton itself, so the bytes are never different from proton's; a value proton
cannot encode either raises :class:`~sbmgmt.errors.ProtocolError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from proton import (
    UNDESCRIBED,
    Array,
    Data,
    DataException,
    Described,
    Message,
    MessageException,
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

from ..errors import ProtocolError
from . import sections

__all__ = ["encode_amqp_value", "encode_message", "encode_value", "encoded_list", "encoded_map"]

_Encoder = Callable[[Any], bytes]

# --- proton as the fallback --------------------------------------------------


def _proton(value: Any) -> bytes:
    """proton's own encoding of ``value`` (a ProtocolError if proton cannot encode it)."""
    data = Data()
    try:
        data.put_object(value)
        return bytes(data.encode())
    except (KeyError, TypeError, ValueError, OverflowError, AssertionError,
            DataException) as exc:
        raise ProtocolError(
            f"cannot encode {type(value).__name__} as an AMQP value: {exc!r}"
        ) from None


def encode_value(value: Any) -> bytes:
    """The AMQP encoding of one Python value, as proton's ``Data.put_object`` gives it.

    The types are proton's: ``int`` is long, ``str`` string, ``bytes`` binary,
    ``list`` / ``tuple`` list, ``dict`` map, and proton's wrapper types (``uint``,
    ``int32``, ``symbol``, ``timestamp``, ``Array``, ``Described`` ...) their own.
    Raises :class:`~sbmgmt.errors.ProtocolError` for a value proton cannot encode.
    """
    return _ENCODERS.get(type(value), _proton)(value)


# --- fixed-width values ------------------------------------------------------

_B = struct.Struct(">B").pack
_BB = struct.Struct(">BB").pack
_BI = struct.Struct(">BI").pack
_BII = struct.Struct(">BII").pack


def _small_table(code: int, signed: bool) -> list[bytes]:
    """The 2-byte encodings of one-byte values, indexed by the value's byte."""
    return [_BB(code, b) for b in range(256)] if not signed else [
        _BB(code, (v + 256) % 256) for v in range(256)
    ]


_SMALLLONG = _small_table(0x55, signed=True)   # smalllong: 0x55 + 1 byte
_SMALLINT = _small_table(0x54, signed=True)    # smallint: 0x54 + 1 byte
_SMALLUINT = _small_table(0x52, signed=False)  # smalluint: 0x52 + 1 byte
_SMALLULONG = _small_table(0x53, signed=False)  # smallulong: 0x53 + 1 byte


def _fixed(fmt: str, code: int) -> _Encoder:
    """``code`` then the value packed as ``fmt``; out of range: proton decides."""
    pack = struct.Struct(">B" + fmt).pack

    def encode(value: Any) -> bytes:
        try:
            return pack(code, value)
        except struct.error:
            return _proton(value)

    return encode


_wide_long = _fixed("q", 0x81)   # long: 0x81 + 8 bytes
_wide_int = _fixed("i", 0x71)    # int: 0x71 + 4 bytes
_wide_uint = _fixed("I", 0x70)   # uint: 0x70 + 4 bytes
_wide_ulong = _fixed("Q", 0x80)  # ulong: 0x80 + 8 bytes


def _long(value: int) -> bytes:
    """long: smalllong (0x55) for -128..127, else 0x81."""
    if -128 <= value <= 127:
        return _SMALLLONG[value & 0xFF]
    return _wide_long(value)


def _int(value: int) -> bytes:
    """int: smallint (0x54) for -128..127, else 0x71."""
    if -128 <= value <= 127:
        return _SMALLINT[value & 0xFF]
    return _wide_int(value)


def _uint(value: int) -> bytes:
    """uint: uint0 (0x43), smalluint (0x52) up to 255, else 0x70."""
    if value == 0:
        return b"\x43"
    if 0 < value <= 255:
        return _SMALLUINT[value]
    return _wide_uint(value)


def _ulong(value: int) -> bytes:
    """ulong: ulong0 (0x44), smallulong (0x53) up to 255, else 0x80."""
    if value == 0:
        return b"\x44"
    if 0 < value <= 255:
        return _SMALLULONG[value]
    return _wide_ulong(value)


def _bool(value: bool) -> bytes:
    """boolean: true (0x41) / false (0x42)."""
    return b"\x41" if value else b"\x42"


def _uuid(value: uuid.UUID) -> bytes:
    """uuid: 0x98 + 16 bytes."""
    return b"\x98" + value.bytes


# --- variable-width values ---------------------------------------------------


def _prefixes(code8: int) -> list[bytes]:
    """``code8`` and a 1-byte length, for each length below 256."""
    return [_BB(code8, size) for size in range(256)]


_VBIN8 = _prefixes(0xA0)


def _binary(value: bytes) -> bytes:
    """binary: vbin8 (0xa0) below 256 bytes, else vbin32 (0xb0)."""
    data = bytes(value)
    size = len(data)
    return (_VBIN8[size] if size < 256 else _BI(0xB0, size)) + data


def _text(code8: int, code32: int, encoding: str) -> _Encoder:
    """A ``code8`` encoding (1-byte length) below 256 bytes, else ``code32`` (4-byte length);
    text the codec cannot encode is proton's to encode (or refuse)."""
    prefixes = _prefixes(code8)

    def encode(value: str) -> bytes:
        try:
            data = value.encode(encoding)
        except UnicodeEncodeError:
            return _proton(value)
        size = len(data)
        return (prefixes[size] if size < 256 else _BI(code32, size)) + data

    return encode


_string = _text(0xA1, 0xB1, "utf-8")  # string: str8-utf8 (0xa1) / str32-utf8 (0xb1)
_symbol = _text(0xA3, 0xB3, "ascii")  # symbol: sym8 (0xa3) / sym32 (0xb3)


# --- compound values ---------------------------------------------------------


def encoded_list(items: Sequence[bytes]) -> bytes:
    """A list of values encoded already: list0 (0x45) when empty, else list32 (0xd0), as
    proton writes lists."""
    if not items:
        return b"\x45"
    body = b"".join(items)
    return _BII(0xD0, len(body) + 4, len(items)) + body


def encoded_map(entries: Sequence[bytes], pairs: int) -> bytes:
    """A map of key-value pairs encoded already (``entries`` hold ``pairs`` of them, each
    key's bytes then its value's): map32 (0xd1), as proton writes maps."""
    body = b"".join(entries)
    return _BII(0xD1, len(body) + 4, 2 * pairs) + body


def _list(value: Sequence[Any]) -> bytes:
    """list: list0 (0x45) when empty, else list32 (0xd0) as proton writes lists."""
    get = _ENCODERS.get
    return encoded_list([get(type(v), _proton)(v) for v in value])


def _map(value: Mapping[Any, Any]) -> bytes:
    """map: map32 (0xd1), keys and values alternating."""
    get = _ENCODERS.get
    return encoded_map([get(type(k), _proton)(k) + get(type(v), _proton)(v)
                        for k, v in value.items()], len(value))


def _described(value: Described) -> bytes:
    """A described value: 0x00, the descriptor (ulong or symbol), the value."""
    descriptor = value.descriptor
    if type(descriptor) not in (ulong, symbol):
        return _proton(value)
    return b"\x00" + encode_value(descriptor) + encode_value(value.value)


def _packed(fmt: str) -> Callable[[Sequence[Any]], bytes]:
    """Fixed-width array elements, packed in one call (struct caches the format)."""
    return lambda elements: struct.pack(f">{len(elements)}{fmt}", *elements)


def _prefixed(encoding: str | None) -> Callable[[Sequence[Any]], bytes]:
    """Variable-width array elements: each a 4-byte length and its bytes (the 32-bit
    encodings, as proton writes them in arrays); ``None``: already bytes."""
    def encode(elements: Sequence[Any]) -> bytes:
        parts = [v if encoding is None else v.encode(encoding) for v in elements]
        return b"".join([struct.pack(">I", len(part)) + part for part in parts])

    return encode


# proton array element type -> (element constructor, Python type, elements encoder)
_ARRAY_ELEMENTS: dict[int, tuple[int, type, Callable[[Sequence[Any]], bytes]]] = {
    Data.BOOL: (0x56, bool, bytes),  # boolean: 0x56 + 1 byte (0x00 / 0x01)
    Data.INT: (0x71, int32, _packed("i")),
    Data.UINT: (0x70, uint, _packed("I")),
    Data.LONG: (0x81, int, _packed("q")),
    Data.ULONG: (0x80, ulong, _packed("Q")),
    Data.TIMESTAMP: (0x83, timestamp, _packed("q")),
    Data.UUID: (0x98, uuid.UUID,
                lambda elements: b"".join([v.int.to_bytes(16, "big") for v in elements])),
    Data.BINARY: (0xB0, bytes, _prefixed(None)),
    Data.STRING: (0xB1, str, _prefixed("utf-8")),
    Data.SYMBOL: (0xB3, symbol, _prefixed("ascii")),
}


def _array(value: Array) -> bytes:
    """array: array32 (0xf0), one element constructor, then the elements without theirs.

    An array that is described or of another element type is proton's to encode. An
    element of another type than the array's is refused: proton-c 0.40 writes it from
    the wrong member of its value union, so an ``int32`` in an array of long carries
    four bytes of whatever its heap held (seen: different bytes on every call).
    """
    spec = _ARRAY_ELEMENTS.get(value.type)
    elements = value.elements
    descriptor: Any = value.descriptor
    if spec is None or descriptor is not UNDESCRIBED:
        return _proton(value)
    constructor, kind, encode = spec
    if elements and {*map(type, elements)} != {kind}:
        others = sorted({type(e).__name__ for e in elements if type(e) is not kind})
        raise ProtocolError(f"cannot encode an array of {kind.__name__} holding "
                            f"{', '.join(others)}: an array's elements are all of its type")
    try:
        body = encode(elements)
    except (struct.error, UnicodeEncodeError):
        return _proton(value)
    return _BII(0xF0, len(body) + 5, len(elements)) + _B(constructor) + body


# --- the type table ----------------------------------------------------------

# Keyed by exact type, as proton's ``Data.put_mappings`` is.
_ENCODERS: dict[type, _Encoder] = {
    type(None): lambda _: b"\x40",  # null: 0x40
    bool: _bool,
    int: _long,
    int32: _int,
    uint: _uint,
    ulong: _ulong,
    ubyte: _fixed("B", 0x50),       # ubyte: 0x50 + 1 byte
    byte: _fixed("b", 0x51),        # byte: 0x51 + 1 byte
    ushort: _fixed("H", 0x60),      # ushort: 0x60 + 2 bytes
    short: _fixed("h", 0x61),       # short: 0x61 + 2 bytes
    float32: _fixed("f", 0x72),     # float: 0x72 + IEEE 754 binary32
    float: _fixed("d", 0x82),       # double: 0x82 + IEEE 754 binary64
    timestamp: _fixed("q", 0x83),   # timestamp: 0x83 + ms since the epoch
    decimal32: _fixed("I", 0x74),   # decimal32: 0x74 + 4 bytes
    decimal64: _fixed("Q", 0x84),   # decimal64: 0x84 + 8 bytes
    uuid.UUID: _uuid,
    bytes: _binary,
    bytearray: _binary,
    str: _string,
    symbol: _symbol,
    list: _list,
    tuple: _list,
    dict: _map,
    Described: _described,
    Array: _array,
}


# --- messages ----------------------------------------------------------------

_HEADER = sections.prefix(sections.HEADER) + b"\x45"  # all defaults: list0, as proton writes it
_PROPERTIES = sections.prefix(sections.PROPERTIES)
_APPLICATION_PROPERTIES = sections.prefix(sections.APPLICATION_PROPERTIES)
_AMQP_VALUE = sections.AMQP_VALUE_PREFIX
_NULL = b"\x40"


def encode_amqp_value(body: Any) -> bytes:
    """The amqp-value body section (0x77) holding ``body``: the bytes of proton's
    ``Data.put_object(Described(ulong(0x77), body))``.

    Raises :class:`~sbmgmt.errors.ProtocolError` for a value proton cannot encode.
    """
    return _AMQP_VALUE + encode_value(body)


def _message_id(value: Any) -> bytes | None:
    """A message-id / correlation-id as proton's ``Message`` writes it (an ``int`` is
    ulong, a ``symbol`` a string); ``None`` for what proton alone decides."""
    kind = type(value)
    if kind is uuid.UUID:
        return _uuid(value)
    if kind is str or kind is symbol:
        return _string(value)
    if kind is bytes:
        return _binary(value)
    if value is None:
        return _NULL
    if isinstance(value, int) and 0 <= value < 2**64:
        return _ulong(value)
    return None


def _properties(fields: list[bytes]) -> bytes:
    """The properties section (0x73): its list trimmed of trailing nulls, list0 when
    empty, list8 (0xc0) when it fits, else list32 (0xd0), as proton's message encoder
    writes it."""
    while fields and fields[-1] == _NULL:
        fields.pop()
    if not fields:
        return _PROPERTIES + b"\x45"
    body = b"".join(fields)
    if len(body) < 255 and len(fields) < 256:
        return _PROPERTIES + _BB(0xC0, len(body) + 1) + _B(len(fields)) + body
    return _PROPERTIES + _BII(0xD0, len(body) + 4, len(fields)) + body


def encode_message(
    *,
    message_id: Any = None,
    reply_to: str | None = None,
    correlation_id: Any = None,
    application_properties: Mapping[str, Any] | None = None,
    body: Any = None,
) -> bytes:
    """A complete message: the bytes of proton's ``Message(id=message_id,
    reply_to=reply_to, correlation_id=correlation_id, properties=application_properties,
    body=body).encode()``.

    The sections are header (0x70), properties (0x73), application-properties (0x74)
    when given, and the body as amqp-value (0x77) unless it is ``None``. Raises
    :class:`~sbmgmt.errors.ProtocolError` for what proton cannot encode.
    """
    message_field = _message_id(message_id)
    correlation_field = _message_id(correlation_id)
    keys_are_str = application_properties is None or all(
        type(key) is str for key in application_properties)
    # proton's Message keeps reply-to as a C string: cut at a NUL; proton does the cutting.
    plain_reply_to = reply_to is None or (type(reply_to) is str and "\x00" not in reply_to)
    if (message_field is None or correlation_field is None or not keys_are_str
            or not plain_reply_to):
        return _proton_message(message_id, reply_to, correlation_id, application_properties,
                               body)
    parts = [_HEADER, _properties([
        message_field, _NULL, _NULL, _NULL,
        _NULL if reply_to is None else _string(reply_to),
        correlation_field,
    ])]
    if application_properties is not None:
        parts.append(_APPLICATION_PROPERTIES + _map(application_properties))
    if body is not None:
        parts.append(_AMQP_VALUE + encode_value(body))
    return b"".join(parts)


def _proton_message(
    message_id: Any,
    reply_to: str | None,
    correlation_id: Any,
    application_properties: Mapping[str, Any] | None,
    body: Any,
) -> bytes:
    """proton's encoding of the message (a ProtocolError if proton cannot encode it)."""
    try:
        message = Message(id=message_id, reply_to=reply_to, correlation_id=correlation_id,
                          properties=application_properties, body=body)
        return bytes(message.encode())
    except (KeyError, TypeError, ValueError, OverflowError, AssertionError,
            DataException, MessageException) as exc:
        raise ProtocolError(f"cannot encode the message: {exc!r}") from None
