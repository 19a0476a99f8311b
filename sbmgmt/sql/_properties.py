"""Where ``sys.`` and user properties live on a :class:`~sbmgmt.message.Message`.

System property names are the .NET message's (``sys.Label`` and ``sys.Subject`` are
the same), matched case-insensitively. User properties are the message's
application properties; their names are matched exactly first and then
case-insensitively, as the service treats property names.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sbmgmt.message import Message

__all__ = [
    "SETTABLE_SYSTEM_PROPERTIES",
    "SYSTEM_PROPERTIES",
    "find_user_key",
    "read_system",
    "read_user",
    "resolve_dynamic",
    "system_field",
]

# .NET property name (lower case) -> Message / ReceivedMessage field.
SYSTEM_PROPERTIES: Mapping[str, str] = {
    "messageid": "message_id",
    "correlationid": "correlation_id",
    "to": "to",
    "replyto": "reply_to",
    "label": "subject",
    "subject": "subject",
    "sessionid": "session_id",
    "replytosessionid": "reply_to_session_id",
    "contenttype": "content_type",
    "partitionkey": "partition_key",
    "viapartitionkey": "via_partition_key",
    "timetolive": "time_to_live",
    "scheduledenqueuetimeutc": "scheduled_enqueue_time",
    "deliverycount": "delivery_count",
    "sequencenumber": "sequence_number",
    "enqueuedtimeutc": "enqueued_time",
    "lockeduntilutc": "locked_until",
    "deadlettersource": "dead_letter_source",
    "expiresatutc": "expires_at",
}

#: The system properties a rule action may SET or REMOVE (all of them strings).
SETTABLE_SYSTEM_PROPERTIES: frozenset[str] = frozenset({
    "messageid", "correlationid", "to", "replyto", "label", "subject", "sessionid",
    "replytosessionid", "contenttype",
})


def system_field(name: str) -> str | None:
    """The message field behind ``sys.<name>``, or ``None`` if there is no such property."""
    return SYSTEM_PROPERTIES.get(name.lower())


def read_system(message: Message, field: str) -> Any:
    """The value of a system property (``None`` when the message does not carry it)."""
    if field == "expires_at":
        enqueued: datetime | None = getattr(message, "enqueued_time", None)
        ttl: timedelta | None = message.time_to_live
        if enqueued is None or ttl is None:
            return None
        try:
            return enqueued + ttl
        except OverflowError:
            return None
    return getattr(message, field, None)


def find_user_key(properties: Mapping[str, Any], name: str) -> str | None:
    """The key of ``properties`` that ``name`` refers to, or ``None`` if there is none."""
    if name in properties:
        return name
    folded = name.casefold()
    for key in properties:
        if key.casefold() == folded:
            return key
    return None


def read_user(properties: Mapping[str, Any], name: str) -> Any:
    """The value of a user property (``None`` when missing or null)."""
    value = properties.get(name)
    if value is not None:
        return value
    key = find_user_key(properties, name)
    return None if key is None else properties[key]


def resolve_dynamic(message: Message, reference: Any) -> Any:
    """``property(name)``: ``name`` as written in an expression (``sys.X``, ``user.X``, ``X``)."""
    if not isinstance(reference, str):
        return None
    scope, dot, rest = reference.partition(".")
    if dot and scope.lower() == "sys":
        field = system_field(rest)
        return None if field is None else read_system(message, field)
    if dot and scope.lower() == "user":
        reference = rest
    return read_user(message.application_properties, reference)
