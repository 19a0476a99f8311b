"""com.microsoft:batch-delete-messages sent by the official Python SDK's own machinery.

azure-servicebus 7.15 (installed) has no ``delete_messages``; 7.13.0b1 and later have. This
sends the request as the newer release publishes it, through 7.15's receiver and its
management link (``ServiceBusReceiver._mgmt_request_response``: the SDK's envelope, its
``associated-link-name``, its ``com.microsoft:server-timeout``, its pyamqp encoder), so a
test proves the fake against the SDK's encoding, not sbmgmt's. The request map is the one
the SDK's unit tests pin (``test_batch_delete_request_keys_encode_as_amqp_strings``,
``test_returns_actual_count_and_uses_one_shot_dispatch``): string keys, ``message-count``
as ``AMQP_INT_VALUE``, ``enqueued-time-utc`` as ``AMQP_TIMESTAMP_VALUE`` of milliseconds,
``session-id`` from a session receiver; the reply read as its ``batch_delete_op`` reads
it (200: the reply's ``message-count``, 204: 0, anything else: the SDK's error).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from azure.servicebus import ServiceBusReceiver
from azure.servicebus._common import mgmt_handlers
from azure.servicebus._common.constants import MGMT_REQUEST_SESSION_ID

OPERATION = b"com.microsoft:batch-delete-messages"


def _batch_delete_op(status_code: int, message: Any, description: Any,
                     amqp_transport: Any) -> int:
    if status_code == 204:
        return 0
    if status_code == 200:
        count = message.value[b"message-count"]
        assert isinstance(count, int)
        return count
    # Raises the SDK's own error for the status and condition.
    mgmt_handlers.default(status_code, message, description, amqp_transport)
    raise AssertionError("unreachable: the SDK raises for a failed status")


def sdk_delete_messages(receiver: ServiceBusReceiver, max_message_count: int,
                        before: datetime | None = None) -> int:
    """``receiver.delete_messages(max_message_count, before_enqueued_time=before)`` as
    7.13.0b1+ sends it: one request, never retried; how many were deleted."""
    transport = receiver._amqp_transport
    cutoff = datetime.now(timezone.utc) if before is None else before
    message: dict[Any, Any] = {
        "message-count": transport.AMQP_INT_VALUE(max_message_count),
        "enqueued-time-utc": transport.AMQP_TIMESTAMP_VALUE(int(cutoff.timestamp() * 1000)),
    }
    session_id = receiver.session.session_id if receiver.session is not None else None
    if session_id is not None:
        message[MGMT_REQUEST_SESSION_ID] = session_id
    count: int = receiver._mgmt_request_response(
        OPERATION, message, _batch_delete_op, timeout=10)
    return count
