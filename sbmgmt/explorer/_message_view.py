"""A message as the page shows it: every field as text with its type; the body in the form
that fits, as :mod:`sbmgmt.message_view` decides (the search searches the same text).

Nothing here is markup: every value becomes a ``str`` that the templates escape
(Jinja2's autoescape), so a body or a property holding ``<script>`` is shown as those
characters.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ..message import ReceivedMessage
from ..message_view import (
    MAX_HEX,
    MAX_PRETTY,
    BodyKind,
    BodyView,
    body_view,
    utf8_text,
    value_text,
)

__all__ = ["MAX_HEX", "MAX_PRETTY", "BodyKind", "BodyView", "Field", "body_view", "fields_of",
           "system_fields", "type_name", "utf8_text", "value_text"]

# What a Python value decoded from AMQP is called on the wire (proton's typed values,
# int32, ulong, symbol..., keep their own class names).
_AMQP_NAMES = {bool: "boolean", int: "long", float: "double", str: "string", bytes: "binary",
               uuid.UUID: "uuid", datetime: "timestamp", list: "list", dict: "map",
               type(None): "null", timedelta: "duration"}


@dataclasses.dataclass(frozen=True)
class Field:
    """One named value, as text, with its AMQP type's name."""

    name: str
    value: str
    type: str


def type_name(value: Any) -> str:
    """The AMQP type's name of a decoded value (``string``, ``long``, ``int32``, ...)."""
    if isinstance(value, enum.Enum):
        return "enum"
    for kind, name in _AMQP_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


def fields_of(values: Mapping[str, Any]) -> list[Field]:
    """Named values as text with their types, in their order.

    Args:
        values: Application properties, annotations, or any map of decoded values.

    Returns:
        One [Field][sbmgmt.explorer._message_view.Field] each.
    """
    return [Field(str(name), value_text(value), type_name(value))
            for name, value in values.items()]


_SYSTEM = ("message_id", "session_id", "correlation_id", "subject", "content_type",
           "content_encoding", "to", "reply_to", "reply_to_session_id", "user_id",
           "partition_key", "via_partition_key", "time_to_live", "scheduled_enqueue_time",
           "absolute_expiry_time", "creation_time", "group_sequence", "durable", "priority",
           "first_acquirer", "delivery_count", "sequence_number", "enqueued_time",
           "locked_until", "state", "dead_letter_reason", "dead_letter_description",
           "dead_letter_source", "body_type")


def system_fields(message: ReceivedMessage) -> list[Field]:
    """Every property of the message that is set (the header, the properties section and
    what the service adds), as text with its type.

    Args:
        message: A peeked message.

    Returns:
        One [Field][sbmgmt.explorer._message_view.Field] per property that is not None.
    """
    values = {name: getattr(message, name) for name in _SYSTEM}
    return fields_of({name: value for name, value in values.items() if value is not None})
