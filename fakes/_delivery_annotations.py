"""The delivery annotations the fake puts on each transfer to a receiver, as the service does.

The service sends a delivery-annotations section with every message it delivers: an empty
map to a receive-and-delete receiver, ``x-opt-lock-token`` (the lock token, a uuid; the
delivery tag holds the same token) to a peek-lock one. The official Python SDK's tests
against the service read it: ``test_message_backcompat_receive_and_delete_databody``
(``delivery_annotations == {}``), ``test_message_backcompat_peek_lock_databody`` and
``..._valuebody``, ``test_message_batch_backcompat`` and
``test_queue_by_queue_client_conn_str_receive_handler_peeklock``
(``delivery_annotations[b"x-opt-lock-token"]``). Peeks (a management reply) carry none
but what a sender sent.

A sender's own delivery annotations (the fake keeps them, "What it emulates" in
docs/fake.md) stay, with the lock token added; what the service does with a sender's
delivery annotations is not published.
"""

from __future__ import annotations

import uuid

from proton import symbol

from sbmgmt.amqp.encode import encode_value
from sbmgmt.amqp.sections import DELIVERY_ANNOTATIONS, HEADER, prefix, section_spans
from sbmgmt.message import BrokerHead, ReceivedMessage

__all__ = ["for_transfer"]

_LOCK_TOKEN = "x-opt-lock-token"
_HEADER = prefix(HEADER)
#: An empty map (map8: size 1, count 0) as the section's value.
_EMPTY = prefix(DELIVERY_ANNOTATIONS) + b"\xc1\x01\x00"
#: The one-entry map up to the token: map8, its size (the key, 0x98 and 16 bytes), count 2.
_KEY = encode_value(symbol(_LOCK_TOKEN))
_LOCKED = prefix(DELIVERY_ANNOTATIONS) + bytes((0xC1, 1 + len(_KEY) + 17, 2)) + _KEY + b"\x98"


def for_transfer(encoded: bytes, content: ReceivedMessage, token: uuid.UUID | None) -> bytes:
    """The message ``encoded`` (the stored message's rendering, header first when it has
    one) with the delivery annotations of a transfer: the lock ``token`` (None: a
    receive-and-delete delivery) and the sender's own."""
    if content.delivery_annotations:
        return _merged(encoded, content, token)
    section = _EMPTY if token is None else _LOCKED + token.bytes
    cut = _after_header(encoded)
    return b"".join((encoded[:cut], section, encoded[cut:]))


def _after_header(encoded: bytes) -> int:
    """Where the delivery annotations go: after the header, which is first if there is
    one (read from its list's size, as the fake writes it: list0, list8 or list32)."""
    if not encoded.startswith(_HEADER):
        return 0
    code = encoded[3]
    if code == 0x45:
        return 4
    if code == 0xC0:
        return 5 + encoded[4]
    if code == 0xD0:
        return 8 + int.from_bytes(encoded[4:8], "big")
    return section_spans(encoded)[0][2]


def _merged(encoded: bytes, content: ReceivedMessage, token: uuid.UUID | None) -> bytes:
    """A message that came with delivery annotations: its section encoded again with the
    token among them."""
    spans = section_spans(encoded)
    start, end = next((s, e) for code, s, e in spans if code == DELIVERY_ANNOTATIONS)
    if token is None:
        return encoded
    annotations = {**content.delivery_annotations, _LOCK_TOKEN: token}
    ((_, section),) = BrokerHead(
        content.model_copy(update={"delivery_annotations": annotations}),
        (DELIVERY_ANNOTATIONS,)).sections(None, None, content.state)
    return encoded[:start] + section + encoded[end:]
