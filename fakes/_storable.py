"""What the fake checks of a message before it keeps it.

A message the fake stores is encoded again each time it is delivered or peeked
(its header and annotations with what the fake adds; the sections it does not change
are written as the bytes they came as: ``sbmgmt.message.same_encoding``). A message whose own
fields do not encode — a negative TTL where the header's ttl is a uint, a priority
over 255, a symbol that is not ASCII — would fail every later delivery and peek of
the entity. :func:`check_storable` encodes those sections once on arrival and refuses
the message (``com.microsoft:argument-error``) if that fails.
"""

from __future__ import annotations

from sbmgmt.amqp.sections import PROPERTIES
from sbmgmt.message import BrokerHead, Message, encode_sections

from ._errors import ArgumentError

__all__ = ["check_storable"]


def check_storable(message: Message) -> None:
    """Raise ArgumentError unless the message encodes as the fake will send it.

    ``message`` is decoded from what was sent (a transfer, a schedule request): the
    sections the fake never changes go out as the bytes they came as, so only those it
    writes anew are encoded here: the header and the annotations (the message's
    ``BrokerHead``: what each delivery changes is the broker's, always encodable), and the
    properties of a message without a MessageId (the broker gives it one).
    """
    try:
        BrokerHead(message)
        if message.message_id is None:
            encode_sections(message.model_copy(update={"message_id": "0" * 32}), [PROPERTIES])
    except Exception as exc:
        raise ArgumentError(f"The message cannot be kept: its fields do not encode as AMQP "
                            f"({type(exc).__name__}).") from None
