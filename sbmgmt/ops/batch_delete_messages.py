"""com.microsoft:batch-delete-messages — delete up to N of an entity's oldest messages.

Not on the reference page of the management operations: the service added it later (a
preview, "Batch delete messages in Azure Service Bus"), and the SDKs that speak it are
the sources of its wire format (docs/protocol.md, "batch-delete-messages", cites each):
.NET ``ServiceBusReceiver.DeleteMessagesAsync`` (7.18.0-beta.1), Python
``ServiceBusReceiver.delete_messages`` (7.13.0b1; its unit tests pin the map's keys as
AMQP strings, ``message-count`` as int and ``enqueued-time-utc`` as timestamp), Go
``BatchDeleteMessages`` and the JavaScript ``ManagementClient.deleteMessages``.

Not idempotent: a request whose reply was lost may have deleted messages, and a second
one would delete others, so it is never replayed (``IDEMPOTENT = False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import Field

from ..amqp.envelope import ERROR_CONDITION
from ..amqp.values import Fields, int32_value, timestamp_value
from ._base import Int32Count, OpModel, OpRequest, SessionId, check_reply, mismatch, validated

OPERATION = "com.microsoft:batch-delete-messages"
IDEMPOTENT = False

#: The most one request may ask for on a Premium namespace: "Premium | 4,000 messages"
#: (the batch-delete page's quotas; "Standard | 500 messages"). The service refuses a
#: larger count (400, ``com.microsoft:argument-out-of-range``, "Invalid Message Count :
#: requested 4000. Message count should be between 1 and 500." on a Standard namespace, as
#: the JavaScript SDK's issue 34274 quotes it); the models leave that check to the service,
#: as the SDKs do, so a raised quota needs no new release.
PREMIUM_MAX_COUNT = 4000

_MESSAGE_NOT_FOUND = "com.microsoft:message-not-found"
_ONE_MILLISECOND = timedelta(milliseconds=1)


def cutoff(before: datetime | None) -> datetime:
    """The cutoff a purge sends as ``enqueued-time-utc``: the one rule of the library (the
    clients' ``delete_messages`` / ``purge_messages`` and ``sbmgmt.actions.purge`` call it).

    "Only messages that were enqueued before this time will be deleted" (.NET
    ``DeleteMessagesAsync``'s ``beforeEnqueueTime``): the cutoff is exclusive, and it
    travels as an AMQP timestamp, whole milliseconds (:func:`~sbmgmt.amqp.values.ms_from_datetime`
    drops the rest). So the cutoff is given to the millisecond it travels as (a count made
    with it, ``enqueued_time < cutoff``, is the set the service deletes), and "now" (None) is
    the start of the next millisecond: a message enqueued in the current millisecond is
    included, one enqueued after it is not.

    Args:
        before: The caller's cutoff (naive: UTC), or None for now.

    Returns:
        The cutoff, timezone-aware (a naive ``before`` as UTC), to the millisecond.

    Raises:
        TypeError: ``before`` is not a datetime.
    """
    if before is None:
        return _to_millisecond(datetime.now(timezone.utc)) + _ONE_MILLISECOND
    if not isinstance(before, datetime):
        raise TypeError(f"before must be a datetime, got {type(before).__name__}")
    if before.tzinfo is None:
        before = before.replace(tzinfo=timezone.utc)
    return _to_millisecond(before)


def _to_millisecond(when: datetime) -> datetime:
    return when.replace(microsecond=when.microsecond - when.microsecond % 1000)


class Request(OpRequest["Response"]):
    """Delete up to ``message_count`` of the oldest messages enqueued before
    ``enqueued_time_utc`` (of one session with ``session_id``)."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    message_count: Int32Count
    enqueued_time_utc: datetime
    session_id: SessionId | None = None


class Response(OpModel):
    """How many messages the request deleted (0: none was eligible)."""

    message_count: int = Field(default=0, ge=0)


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    body: dict[str, Any] = {
        # "message-count": "The desired number of messages to delete" (DeleteMessagesAsync),
        # an AMQP int in every SDK (Python: AMQP_INT_VALUE; Go: int32; JS: Int).
        "message-count": int32_value(request.message_count),
        # "enqueued-time-utc": "Only messages that were enqueued before this time will be
        # deleted" (DeleteMessagesAsync's beforeEnqueueTime), an AMQP timestamp.
        "enqueued-time-utc": timestamp_value(request.enqueued_time_utc),
    }
    if request.session_id is not None:
        # "session-id": the session receiver's session (Python, Go and JS send it only then).
        body["session-id"] = request.session_id
    return {}, body


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        message_count=fields.int("message-count"),
        enqueued_time_utc=fields.timestamp("enqueued-time-utc"),
        session_id=fields.optional_str("session-id"),
    )


def encode_response(response: Response) -> tuple[int, dict[str, Any] | None]:
    # 200 with "message-count" (how many were deleted); 204 when none was (every SDK maps
    # 204 to zero: Python's batch_delete_op, Go's BatchDeleteMessages, JS's deleteMessages).
    if response.message_count == 0:
        return 204, None
    return 200, {"message-count": int32_value(response.message_count)}


def check_response(request: Request, response: Response) -> None:
    # The SDKs refuse a count above the one asked for (Python: "valid message-count"; Go
    # and JS the same): the service deletes at most "messageCount".
    if response.message_count > request.message_count:
        raise mismatch(OPERATION, f"{response.message_count} messages deleted for at most "
                                  f"{request.message_count} asked for")


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    props = application_properties or {}
    condition = props.get(ERROR_CONDITION, props.get("error-condition"))
    if status_code == 404 and condition == _MESSAGE_NOT_FOUND and isinstance(body, Mapping) \
            and "message-count" in body:
        # A 404 com.microsoft:message-not-found that carries a count is a result, not a
        # failure: the Python SDK's batch_delete_op and Go's BatchDeleteMessages read it so
        # (their tests: "maps message not found to aggregate").
        return validated(Response, OPERATION, message_count=Fields(body, OPERATION).int(
            "message-count"))
    if check_reply(OPERATION, status_code, application_properties, no_content=True):
        return Response()
    return validated(Response, OPERATION,
                     message_count=Fields(body, OPERATION).int("message-count"))
