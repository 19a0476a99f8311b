"""The copy a repair sends: every field the sender set, none that the service added
(:func:`outgoing`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sbmgmt.message import Message, ReceivedMessage

__all__ = ["outgoing"]

#: The application properties the service sets when it dead-letters a message.
_DEAD_LETTER_PROPERTIES = ("DeadLetterReason", "DeadLetterErrorDescription")
#: Annotations the service sets on a stored message; a new copy must not carry them.
_BROKER_ANNOTATIONS = frozenset({
    "x-opt-sequence-number", "x-opt-enqueued-time", "x-opt-locked-until",
    "x-opt-enqueue-sequence-number", "x-opt-message-state", "x-opt-deadletter-source",
    "x-opt-partition-id",
})


def outgoing(message: ReceivedMessage, *, set_properties: Mapping[str, Any] | None = None,
             keep_dead_letter_fields: bool = False, source: str = "") -> Message:
    """The copy of a received message to send on: every field the sender set, none that the
    service added (sequence number, enqueued time, lock, state, dead-letter source).

    Args:
        message: The received (or peeked) message.
        set_properties: Application properties to set (or replace) on the copy.
        keep_dead_letter_fields: Keep ``DeadLetterReason`` and ``DeadLetterErrorDescription``.
        source: The source entity, for a MessageId given to a message without one
            (``<source>:<sequence number>``, so that a copy sent twice has the same id).

    Returns:
        The message to send.
    """
    fields = {name: getattr(message, name) for name in Message.model_fields}
    properties = dict(message.application_properties)
    if not keep_dead_letter_fields:
        for name in _DEAD_LETTER_PROPERTIES:
            properties.pop(name, None)
    properties.update(set_properties or {})
    fields["application_properties"] = properties
    fields["annotations"] = {key: value for key, value in message.annotations.items()
                             if key not in _BROKER_ANNOTATIONS}
    fields["delivery_count"] = None
    fields["first_acquirer"] = None
    fields["scheduled_enqueue_time"] = None
    fields["delivery_annotations"] = {}
    if fields["message_id"] is None:
        fields["message_id"] = f"{source}:{message.sequence_number}"
    return Message.model_validate(fields)
