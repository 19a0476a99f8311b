"""The sections of an AMQP 1.0 message (part 3 §3.2): one code table, one walker.

A bare message is a sequence of described sections: header, delivery-annotations,
message-annotations, properties, application-properties, the body (data sections, one
amqp-sequence or one amqp-value) and footer. Each is named by its descriptor, a ulong
code ``0x70``-``0x78`` or the symbol ``amqp:<name>:<type>``.

:func:`section_spans` is the only walker over them: where each section is and which it
is, from the descriptors and sizes alone (:func:`sbmgmt.amqp.scan.value_end`), without
decoding a value. :func:`sections` decodes each value it finds, for
:mod:`sbmgmt._messages.section_decoder` (the generic decoding of a message), the reply envelope
of the client and the request envelope of the fake (:mod:`sbmgmt.amqp.envelope`); a
lazily decoded message (:mod:`sbmgmt._messages.lazy_decoder`) checks its structure with the
walker alone. One rule for what is not a section: anything that is not a described
value, or a descriptor that names no section, makes the bytes "not an AMQP message"
(:class:`~sbmgmt.errors.ProtocolError`).

The fast path that reads the common encodings of a message straight to its fields
(``sbmgmt._messages.common_decoder._decode_common``) falls back to :func:`sections` for everything
else; tests hold the two to the same fields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from proton import symbol

from ..errors import ProtocolError
from .decode import decode_described, decode_descriptor
from .scan import _EXTENTS, value_end

__all__ = [
    "AMQP_SEQUENCE",
    "AMQP_VALUE",
    "AMQP_VALUE_PREFIX",
    "APPLICATION_PROPERTIES",
    "BODIES",
    "DATA",
    "DELIVERY_ANNOTATIONS",
    "FOOTER",
    "HEADER",
    "MESSAGE_ANNOTATIONS",
    "PROPERTIES",
    "SECTION_CODES",
    "BodyReader",
    "prefix",
    "section_spans",
    "sections",
]

HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA = 0x75
AMQP_SEQUENCE = 0x76
AMQP_VALUE = 0x77
FOOTER = 0x78
#: The body sections.
BODIES = frozenset({DATA, AMQP_SEQUENCE, AMQP_VALUE})


def prefix(code: int) -> bytes:
    """The bytes that open a section described by a smallulong code (``0x00 0x53 <code>``),
    as proton and :mod:`sbmgmt.amqp.encode` write every section."""
    return bytes((0x00, 0x53, code))


#: An amqp-value section's opening bytes.
AMQP_VALUE_PREFIX = prefix(AMQP_VALUE)

#: Every descriptor that names a section: the code and the symbol.
SECTION_CODES: dict[Any, int] = {
    **{code: code for code in range(HEADER, FOOTER + 1)},
    "amqp:header:list": HEADER,
    "amqp:delivery-annotations:map": DELIVERY_ANNOTATIONS,
    "amqp:message-annotations:map": MESSAGE_ANNOTATIONS,
    "amqp:properties:list": PROPERTIES,
    "amqp:application-properties:map": APPLICATION_PROPERTIES,
    "amqp:data:binary": DATA,
    "amqp:amqp-sequence:list": AMQP_SEQUENCE,
    "amqp:amqp-value:*": AMQP_VALUE,
    "amqp:footer:map": FOOTER,
}

#: Reads the value of an amqp-value section at an offset: ``(value, after)``, or
#: ``(None, offset)`` to leave it to the generic decoder.
BodyReader = Callable[[bytes, int], tuple[Any, int]]


def section_spans(raw: bytes) -> list[tuple[int, int, int]]:
    """Every section of a message's bytes, in order, as ``(code, start, end)``: which
    section it is and where its encoding (descriptor and value) starts and ends.

    Reads the descriptors and the sizes of the values, nothing inside them: a section
    whose value is malformed inside is found all the same (decoding it raises).
    ProtocolError if the bytes are not a sequence of sections whose sizes fit.
    """
    spans: list[tuple[int, int, int]] = []
    append = spans.append
    heads = _COMMON_HEADS
    offset = 0
    end = len(raw)
    while offset < end:
        if offset + 8 <= end:  # one lookup for the common head, then the value's size
            word, size = _HEAD_AND_SIZE(raw, offset)
            head = heads.get(word)
            if head is not None:
                code, width = head
                after = (offset + 4 + width if width >= 0 else
                         offset + 5 + (size >> 24) if width == -1 else offset + 8 + size)
                if after <= end:
                    append((code, offset, after))
                    offset = after
                    continue
        known = _SMALLULONG_SECTIONS.get(raw[offset:offset + 3])
        if known is None:
            code, value = _described_section(raw, offset)
        else:
            code, value = known, offset + 3
        try:
            after = value_end(raw, value, end)
        except ProtocolError as exc:
            raise ProtocolError(f"malformed AMQP message at byte {offset}: {exc}") from None
        append((code, offset, after))
        offset = after
    if not spans:
        raise ProtocolError("malformed AMQP message: no sections")
    return spans


def _described_section(raw: bytes, offset: int) -> tuple[int, int]:
    """The section whose descriptor is at ``offset`` (any encoding of it) and the offset
    of its value."""
    if raw[offset] != 0x00:
        raise ProtocolError(f"malformed AMQP message: no section at byte {offset}")
    try:
        code, value = decode_descriptor(raw, offset)
    except ProtocolError as exc:
        raise ProtocolError(f"malformed AMQP message at byte {offset}: {exc}") from None
    # Any integer type, or a symbol, names a section: a plain string does not.
    section = (SECTION_CODES.get(code) if isinstance(code, int) or type(code) is symbol
               else None)
    if section is None:
        raise ProtocolError(f"malformed AMQP message: unknown section {code!r}")
    return section, value


#: The opening bytes of each section described by a smallulong -> its code.
_SMALLULONG_SECTIONS = {prefix(code): code for code in range(HEADER, FOOTER + 1)}
#: Those bytes and a constructor, as a big-endian int -> the section's code and the width
#: of its value as :func:`~sbmgmt.amqp.scan.value_end` reads it (fixed, or -1 / -4 for a
#: one- / four-octet size), for :func:`section_spans`'s one lookup per common section;
#: ``_HEAD_AND_SIZE`` reads the four bytes and the four after them (the size, or its
#: first byte).
_COMMON_HEADS: dict[int, tuple[int, int]] = {
    int.from_bytes(opening + bytes((constructor,)), "big"): (code, width)
    for opening, code in _SMALLULONG_SECTIONS.items()
    for constructor, width in enumerate(_EXTENTS) if width is not None
}
_HEAD_AND_SIZE = struct.Struct(">II").unpack_from

def sections(raw: bytes | bytearray | memoryview, *,
             amqp_value: BodyReader | None = None) -> list[tuple[int, Any]]:
    """Every section of a message's bytes, in order, as ``(code, value)``: the sections
    :func:`section_spans` finds, each value decoded.

    ``amqp_value`` reads an amqp-value body in one pass where it can (a peek reply's
    message list); anything it declines is decoded generically. ProtocolError if the
    bytes are not a sequence of sections.
    """
    if type(raw) is not bytes:
        if not isinstance(raw, (bytearray, memoryview)):
            raise ProtocolError(
                f"a wire-encoded message must be binary, got {type(raw).__name__}")
        raw = bytes(raw)
    out: list[tuple[int, Any]] = []
    for section, start, _ in section_spans(raw):
        if amqp_value is not None and raw.startswith(AMQP_VALUE_PREFIX, start):
            value, _ = amqp_value(raw, start + 3)
            if value is not None:
                out.append((AMQP_VALUE, value))
                continue
        try:
            _, value, _ = decode_described(raw, start)
        except ProtocolError as exc:
            raise ProtocolError(f"malformed AMQP message at byte {start}: {exc}") from None
        out.append((section, value))
    return out
