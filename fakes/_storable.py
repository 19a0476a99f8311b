"""What the fake checks of a message before it keeps it.

A message the fake stores is encoded again each time it is delivered or peeked
(its header and annotations with what the fake adds; the sections it does not change
are written as the bytes they came as: ``sbmgmt.message.same_encoding``). A message whose own
fields do not encode — a negative TTL where the header's ttl is a uint, a priority
over 255, a symbol that is not ASCII — would fail every later delivery and peek of
the entity. :func:`check_storable` encodes it once on arrival and refuses it
(``com.microsoft:argument-error``) if that fails.
"""

from __future__ import annotations

from typing import Any

from sbmgmt.message import Message

from ._errors import ArgumentError

__all__ = ["check_storable"]


def check_storable(message: Message) -> None:
    """Raise ArgumentError unless the message encodes as the fake will send it."""
    # Encoded as it will be kept and delivered: the broker gives a message without an id
    # one (fakes/_entity.py), which writes its properties section anew, and every delivery
    # and peek writes the header (delivery count) and the message annotations (sequence
    # number...) anew; the other sections go out as the bytes they came as.
    update: dict[str, Any] = {"delivery_count": 0, "annotations": dict(message.annotations)}
    if message.message_id is None:
        update["message_id"] = "0" * 32
    kept = message.model_copy(update=update)
    try:
        kept.to_bytes()
    except Exception as exc:
        raise ArgumentError(f"The message cannot be kept: its fields do not encode as AMQP "
                            f"({type(exc).__name__}).") from None
