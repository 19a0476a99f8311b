"""What the fake checks of a message before it keeps it.

A message the fake stores is encoded again each time it is delivered or peeked
(with the annotations the fake adds, which always encode; the sections it does not change
are written as the bytes they came as: ``sbmgmt.message.same_encoding``). A message whose own
fields do not encode — a negative TTL where the header's ttl is a uint, a priority
over 255, a symbol that is not ASCII — would fail every later delivery and peek of
the entity. :func:`check_storable` encodes it once on arrival and refuses it
(``com.microsoft:argument-error``) if that fails.
"""

from __future__ import annotations

from sbmgmt.message import Message

from ._errors import ArgumentError

__all__ = ["check_storable"]


def check_storable(message: Message) -> None:
    """Raise ArgumentError unless the message encodes as the fake will send it."""
    # The broker gives a message without an id one (fakes/_entity.py), which writes its
    # properties section anew: encode it as it will be kept.
    kept = message if message.message_id is not None else message.model_copy(
        update={"message_id": "0" * 32})
    try:
        kept.to_bytes()
    except Exception as exc:
        raise ArgumentError(f"The message cannot be kept: its fields do not encode as AMQP "
                            f"({type(exc).__name__}).") from None
