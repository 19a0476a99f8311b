"""The fields of a message as its sections carry them: the Service Bus annotation keys,
:class:`MessageState`, the checks that make a decoded AMQP value a field's value, the
tables of the header, properties and annotation fields, (the field, its reader
and its wire name).

Shared by the two decoders of a message: the generic one (:mod:`sbmgmt._messages.section_decoder`,
every section decoded to AMQP values first) and the one-pass reader of the common
encodings (:mod:`sbmgmt._messages.common_decoder`).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from proton import ulong

from ..amqp.scan import ValueReader
from ..amqp.values import datetime_from_ms
from ..errors import ProtocolError

# Service Bus message annotations and application properties.
SEQUENCE_NUMBER = "x-opt-sequence-number"
ENQUEUED_TIME = "x-opt-enqueued-time"
LOCKED_UNTIL = "x-opt-locked-until"
SCHEDULED_ENQUEUE_TIME = "x-opt-scheduled-enqueue-time"
MESSAGE_STATE = "x-opt-message-state"
DEAD_LETTER_SOURCE = "x-opt-deadletter-source"
PARTITION_KEY = "x-opt-partition-key"
VIA_PARTITION_KEY = "x-opt-via-partition-key"
ENQUEUE_SEQUENCE_NUMBER = "x-opt-enqueue-sequence-number"
LOCK_TOKEN = "x-opt-lock-token"
DEAD_LETTER_REASON = "DeadLetterReason"
DEAD_LETTER_DESCRIPTION = "DeadLetterErrorDescription"
#: Why a received message is refused without a sequence number.
NO_SEQUENCE_NUMBER = f"a received message has no {SEQUENCE_NUMBER} annotation"
#: The ReceivedMessage fields that are views of application properties.
_DEAD_LETTER_VIEWS = (("dead_letter_reason", DEAD_LETTER_REASON),
                      ("dead_letter_description", DEAD_LETTER_DESCRIPTION))



class MessageState(enum.IntEnum):
    """A received message's state (``x-opt-message-state``): ``ACTIVE`` (0), ``DEFERRED``
    (1) or ``SCHEDULED`` (2)."""

    ACTIVE = 0
    DEFERRED = 1
    SCHEDULED = 2


def _at(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None


def _text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        raise ProtocolError(f"malformed AMQP message: {what} is binary")
    return str(value)


#: The four types of a message-id and a correlation-id (AMQP 1.0 part 3 §3.2.5:
#: message-id-ulong, message-id-uuid, message-id-binary, message-id-string), as decoded.
_ID_TYPES = (str, ulong, uuid.UUID, bytes)


def _identifier(value: Any, what: str) -> str | int | uuid.UUID | bytes | None:
    """A message-id or correlation-id of any of its four types, kept as it came (a ulong as
    proton's ``ulong``, a symbol as proton's ``symbol``, so that each encodes as it came);
    any other type is refused, as the service refuses it (``amqp:decode-error``,
    docs/fake.md)."""
    if value is None or isinstance(value, _ID_TYPES):
        return value
    raise ProtocolError(f"malformed AMQP message: {what} is {type(value).__name__}, not one "
                        "of ulong, uuid, binary or string")


def _time(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"malformed AMQP message: {what} is not a timestamp")
    try:
        return datetime_from_ms(int(value))
    except (OverflowError, ValueError):
        raise ProtocolError(f"malformed AMQP message: {what} is out of range") from None


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"malformed AMQP message: {what} is not an integer")
    return int(value)


def _mapping(value: Any, what: str, nullable: bool) -> dict[str, Any]:
    if value is None and nullable:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(f"malformed AMQP message: {what} is not a map")
    return {str(k): v for k, v in value.items()}


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError(f"malformed AMQP message: {what} is not a list")
    return value


def _state(value: Any, what: str) -> MessageState:
    state = _count(value, what)
    if state is None:
        return MessageState.ACTIVE
    found = _STATES.get(state)
    if found is None:
        raise ProtocolError(f"unknown {MESSAGE_STATE} {state}")
    return found


def _binary(value: Any, what: str) -> bytes | None:
    if value is not None and not isinstance(value, bytes):
        raise ProtocolError(f"malformed AMQP message: {what} is not binary")
    return value


_STATES = {int(state): state for state in MessageState}

_Reader = Callable[[Any, str], Any]

#: The properties list (message-id .. reply-to-group-id): (field, reader, wire name).
_PROPERTY_FIELDS: tuple[tuple[str, _Reader, str], ...] = (
    ("message_id", _identifier, "message-id"),
    ("user_id", _binary, "user-id"),
    ("to", _text, "to"),
    ("subject", _text, "subject"),
    ("reply_to", _text, "reply-to"),
    ("correlation_id", _identifier, "correlation-id"),
    ("content_type", _text, "content-type"),
    ("content_encoding", _text, "content-encoding"),
    ("absolute_expiry_time", _time, "absolute-expiry-time"),
    ("creation_time", _time, "creation-time"),
    ("session_id", _text, "group-id"),
    ("group_sequence", _count, "group-sequence"),
    ("reply_to_session_id", _text, "reply-to-group-id"),
)

#: The Service Bus annotations every message has as fields: key -> (field, reader).
_ANNOTATION_FIELDS: dict[str, tuple[str, _Reader]] = {
    PARTITION_KEY: ("partition_key", _text),
    VIA_PARTITION_KEY: ("via_partition_key", _text),
    SCHEDULED_ENQUEUE_TIME: ("scheduled_enqueue_time", _time),
}
#: ... and those a ReceivedMessage has as well.
_RECEIVED_ANNOTATION_FIELDS: dict[str, tuple[str, _Reader]] = {
    **_ANNOTATION_FIELDS,
    SEQUENCE_NUMBER: ("sequence_number", _count),
    ENQUEUED_TIME: ("enqueued_time", _time),
    LOCKED_UNTIL: ("locked_until", _time),
    DEAD_LETTER_SOURCE: ("dead_letter_source", _text),
    MESSAGE_STATE: ("state", _state),
}


@dataclass(frozen=True, slots=True)
class Decoding:
    """How to decode into one message class."""

    #: Every field as if its section were absent, in declaration order.
    defaults: dict[str, Any]
    #: The names of every field (a decoded message sets them all).
    names: set[str]
    #: The annotations that are typed fields of the class.
    annotations: dict[str, tuple[str, _Reader]]
    #: Their common encodings, read straight to the field's value by _decode_common.
    annotation_values: dict[str, dict[int, ValueReader]]
    #: Whether the dead-letter application properties are typed fields of the class.
    dead_letter: bool
