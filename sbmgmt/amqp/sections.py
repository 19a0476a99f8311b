"""The sections of an AMQP 1.0 message (part 3 §3.2): one code table, one walker.

A bare message is a sequence of described sections: header, delivery-annotations,
message-annotations, properties, application-properties, the body (data sections, one
amqp-sequence or one amqp-value) and footer. Each is named by its descriptor, a ulong
code ``0x70``-``0x78`` or the symbol ``amqp:<name>:<type>``.

:func:`sections` is the only walker over them, used by :mod:`sbmgmt._message_sections` (the
generic decoding of a message), the reply envelope of the client and the request
envelope of the fake (:mod:`sbmgmt.amqp.envelope`). One rule for what is not a section:
anything that is not a described value, or a descriptor that names no section, makes
the bytes "not an AMQP message" (:class:`~sbmgmt.errors.ProtocolError`).

The fast path that reads the common encodings of a message straight to its fields
(``sbmgmt._message_common._decode_common``) falls back to this walker for everything else;
tests hold the two to the same fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proton import symbol

from ..errors import ProtocolError
from .decode import decode_described

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


def sections(raw: bytes | bytearray | memoryview, *,
             amqp_value: BodyReader | None = None) -> list[tuple[int, Any]]:
    """Every section of a message's bytes, in order, as ``(code, value)``.

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
    offset = 0
    end = len(raw)
    while offset < end:
        if amqp_value is not None and raw.startswith(AMQP_VALUE_PREFIX, offset):
            value, after = amqp_value(raw, offset + 3)
            if value is not None:
                out.append((AMQP_VALUE, value))
                offset = after
                continue
        if raw[offset] != 0x00:
            raise ProtocolError(f"malformed AMQP message: no section at byte {offset}")
        try:
            code, value, after = decode_described(raw, offset)
        except ProtocolError as exc:
            raise ProtocolError(f"malformed AMQP message at byte {offset}: {exc}") from None
        # Any integer type, or a symbol, names a section: a plain string does not.
        section = (SECTION_CODES.get(code) if isinstance(code, int) or type(code) is symbol
                   else None)
        if section is None:
            raise ProtocolError(f"malformed AMQP message: unknown section {code!r}")
        out.append((section, value))
        offset = after
    if not out:
        raise ProtocolError("malformed AMQP message: no sections")
    return out
