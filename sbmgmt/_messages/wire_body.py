"""A data body read straight from a lazily decoded message's wire bytes
(:func:`wire_data_body`), the rest of the message left undecoded.

A reader that looks only at the body (a search of the bodies of an entity: every message
read, nearly every one ruled out by its body alone) would otherwise pay for the whole
message's decoding at its first read of ``body`` (:mod:`.lazy_decoder`: one pass for
every field, several times the cost of what the reply's checks read). The lazy decoder
has walked the sections once, when the reply came, and holds every message it keeps lazy
to one rule (:data:`~.lazy_decoder.DATA_PREFIX`): the body is found by one ``find`` of a
data section's opening, and its data sections are read one after the other from there,
their binary values sliced out: the bytes ``Message.body_bytes()`` gives once decoded
(each data section's binary value, in order, joined; AMQP 1.0 part 3 §3.2.6: "data:
binary").

Anything else answers None, and the caller reads the decoded fields: a message decoded
already (the decoded body is there), a body of another kind (amqp-value,
amqp-sequence), no body, or a data section written in a form this reader does not
take (a descriptor other than smallulong ``0x75``, a value other than vbin8 / vbin32,
which the whole decoding then judges).
"""

from __future__ import annotations

from .lazy_decoder import DATA_PREFIX, pending_bytes

__all__ = ["wire_data_body"]

#: The binary constructors of a data section's value and the width of their size:
#: vbin8 (``0xa0``, one byte) and vbin32 (``0xb0``, four bytes).
_BINARY_SIZE_WIDTH = {0xA0: 1, 0xB0: 4}


def wire_data_body(message: object) -> bytes | None:
    """The data body of a lazily decoded message not yet decoded, from its wire bytes:
    the bytes its ``body_bytes()`` gives once decoded; None for any other message (see
    the module's docstring), which the caller reads decoded. Decodes nothing else and
    raises nothing."""
    raw = pending_bytes(message)
    if raw is None:
        return None
    at = raw.find(DATA_PREFIX)
    if at < 0:
        return None
    parts: list[bytes] = []
    end = len(raw)
    while True:
        width = _BINARY_SIZE_WIDTH.get(raw[at + 3]) if at + 3 < end else None
        if width is None:
            return None
        start = at + 4 + width
        at = start + int.from_bytes(raw[at + 4:start], "big")
        if at > end:  # only in bytes that do not decode (see DATA_PREFIX)
            return None
        parts.append(raw[start:at])
        if not raw.startswith(DATA_PREFIX, at):
            return parts[0] if len(parts) == 1 else b"".join(parts)
