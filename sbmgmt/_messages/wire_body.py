"""A data body read straight from a lazily decoded message's wire bytes
(:func:`wire_data_body`), the rest of the message left undecoded.

A reader that looks only at the body (a search of the bodies of an entity: every message
read, nearly every one ruled out by its body alone) would otherwise pay for the whole
message's decoding at its first read of ``body`` (:mod:`.lazy_decoder`: one pass for
every field, several times the cost of what the reply's checks read). Here the body's
data sections are found by the one walker over sections
(:func:`~sbmgmt.amqp.sections.section_spans`, descriptors and sizes only) and their
binary values sliced out: the bytes ``Message.body_bytes()`` gives once decoded (each
data section's binary value, in order, joined; AMQP 1.0 part 3 §3.2.6: "data: binary").

Anything else answers None, and the caller reads the decoded fields: a message decoded
already (the decoded body is there), a body of another kind (amqp-value,
amqp-sequence), no body, or a data section written in a form this reader does not
take (a descriptor other than smallulong ``0x75``, a value other than vbin8 / vbin32,
which the whole decoding then judges).
"""

from __future__ import annotations

from ..amqp.sections import BODIES, DATA, prefix, section_spans
from .lazy_decoder import pending_bytes

__all__ = ["wire_data_body"]

_DATA_PREFIX = prefix(DATA)
#: The binary constructors of a data section's value and the width of their size:
#: vbin8 (``0xa0``, one byte) and vbin32 (``0xb0``, four bytes).
_BINARY_SIZE_WIDTH = {0xA0: 1, 0xB0: 4}


def wire_data_body(message: object) -> bytes | None:
    """The data body of a lazily decoded message not yet decoded, from its wire bytes:
    the bytes its ``body_bytes()`` gives once decoded; None for any other message (see
    the module's docstring), which the caller reads decoded. Decodes nothing else and
    raises nothing (bytes that do not walk are left to the whole decoding)."""
    raw = pending_bytes(message)
    if raw is None:
        return None
    parts: list[bytes] = []
    for code, start, end in section_spans(raw):  # walked when decoded: it walks again
        if code == DATA and raw.startswith(_DATA_PREFIX, start):
            width = _BINARY_SIZE_WIDTH.get(raw[start + 3])
            if width is None:
                return None
            parts.append(raw[start + 4 + width:end])
        elif code in BODIES:  # an amqp-value or amqp-sequence, or a data section named
            return None       # otherwise: the decoded fields say what it is
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else b"".join(parts)
