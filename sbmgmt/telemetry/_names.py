"""What a span and a measurement say about an operation: the attribute names and values.

Names follow OpenTelemetry's messaging semantic conventions for Azure Service Bus
("Semantic conventions for Azure messaging systems"): ``messaging.system`` is
``"servicebus"``; ``messaging.operation.name`` is the convention's name of the
operation where it lists one ("sender operations: send, schedule, cancel_scheduled;
receiver operation: receive, peek, receive_deferred, renew_message_lock; settlement
operations: abandon, complete, defer, dead_letter, delete; session operations:
accept_session, get_session_state, set_session_state, renew_session_lock"), else "the
name of the client method in snake_case". Plain values only: no opentelemetry import.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ServiceBusManagementError
from ..ops import (
    add_rule,
    batch_delete_messages,
    cancel_scheduled_message,
    enumerate_rules,
    get_message_sessions,
    get_session_state,
    peek_message,
    receive_by_sequence_number,
    remove_rule,
    renew_lock,
    renew_session_lock,
    schedule_message,
    set_session_state,
    update_disposition,
)
from ..ops._base import OpModel

__all__ = [
    "ATTEMPT",
    "ATTEMPTS",
    "BATCH_COUNT",
    "DELETED_COUNT",
    "DESTINATION",
    "DISPOSITION_STATUS",
    "ERROR_TYPE",
    "EXCEPTION_MESSAGE",
    "LOCK_KIND",
    "LOSS_REASON",
    "OPERATION_NAME",
    "OPERATION_TYPE",
    "RETRY_DELAY",
    "RETRY_EVENT",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "SUBSCRIPTION",
    "SYSTEM",
    "SYSTEM_VALUE",
    "batch_count",
    "deleted_count",
    "error_type",
    "operation_names",
    "subscription_of",
]

SYSTEM = "messaging.system"
SYSTEM_VALUE = "servicebus"
OPERATION_NAME = "messaging.operation.name"
OPERATION_TYPE = "messaging.operation.type"
DESTINATION = "messaging.destination.name"
SUBSCRIPTION = "messaging.destination.subscription.name"
BATCH_COUNT = "messaging.batch.message_count"
DISPOSITION_STATUS = "messaging.servicebus.disposition_status"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
#: How many messages a batch delete deleted (the reply's message-count): sbmgmt's own name,
#: as the messaging conventions have none for it.
DELETED_COUNT = "sbmgmt.deleted_message_count"
#: sbmgmt's own: the renewer's lock kind ("message", "session") and why a lock was lost.
LOCK_KIND = "sbmgmt.lock.kind"
LOSS_REASON = "sbmgmt.lock.loss_reason"
#: A retried call: the span's event per failed attempt (with the attempt's number, from 1,
#: ``error.type``, the convention's ``exception.message`` and the backoff in seconds), and
#: on the span at its end how many attempts it took (when more than one).
RETRY_EVENT = "sbmgmt.retry"
ATTEMPT = "sbmgmt.attempt"
EXCEPTION_MESSAGE = "exception.message"
RETRY_DELAY = "sbmgmt.retry.delay"
ATTEMPTS = "sbmgmt.attempts"

#: The wire operation -> (messaging.operation.name, messaging.operation.type or None).
_NAMES: Mapping[str, tuple[str, str | None]] = {
    peek_message.OPERATION: ("peek", "receive"),
    receive_by_sequence_number.OPERATION: ("receive_deferred", "receive"),
    renew_lock.OPERATION: ("renew_message_lock", None),
    schedule_message.OPERATION: ("schedule", "send"),
    cancel_scheduled_message.OPERATION: ("cancel_scheduled", None),
    renew_session_lock.OPERATION: ("renew_session_lock", None),
    get_session_state.OPERATION: ("get_session_state", None),
    set_session_state.OPERATION: ("set_session_state", None),
    get_message_sessions.OPERATION: ("list_sessions", None),
    add_rule.OPERATION: ("add_rule", None),
    remove_rule.OPERATION: ("remove_rule", None),
    enumerate_rules.OPERATION: ("list_rules", None),
    batch_delete_messages.OPERATION: ("delete_messages", None),
}

#: update-disposition's status -> the convention's settlement operation (which is also
#: its ``messaging.servicebus.disposition_status``).
_SETTLEMENTS: Mapping[update_disposition.DispositionStatus, str] = {
    update_disposition.DispositionStatus.COMPLETED: "complete",
    update_disposition.DispositionStatus.ABANDONED: "abandon",
    update_disposition.DispositionStatus.SUSPENDED: "dead_letter",
    update_disposition.DispositionStatus.DEFERED: "defer",
}

_SUBSCRIPTIONS = "/subscriptions/"


def operation_names(request: OpModel) -> tuple[str, str | None, str | None]:
    """(operation name, operation type, disposition status) of a request."""
    if isinstance(request, update_disposition.Request):
        settlement = _SETTLEMENTS[request.disposition_status]
        return settlement, "settle", settlement
    wire: str = getattr(request, "OPERATION", "")
    named = _NAMES.get(wire)
    if named is None:  # an operation added later: its wire name in snake_case
        return wire.rpartition(":")[2].replace("-", "_"), None, None
    return named[0], named[1], None


def batch_count(request: OpModel) -> int | None:
    """How many messages (or lock tokens) a batching request carries; None for others."""
    if isinstance(request, renew_lock.Request | update_disposition.Request):
        return len(request.lock_tokens)
    if isinstance(request, schedule_message.Request):
        return len(request.messages)
    if isinstance(request, cancel_scheduled_message.Request
                  | receive_by_sequence_number.Request):
        return len(request.sequence_numbers)
    if isinstance(request, batch_delete_messages.Request):  # the most it may delete
        return request.message_count
    return None


def deleted_count(result: object) -> int | None:
    """How many messages an operation's result says it deleted; None for the others."""
    if isinstance(result, batch_delete_messages.Response):
        return result.message_count
    return None


def subscription_of(entity: str) -> str | None:
    """The subscription named by an entity path ``topic/Subscriptions/name[/...]``."""
    index = entity.lower().find(_SUBSCRIPTIONS)
    if index < 0:
        return None
    return entity[index + len(_SUBSCRIPTIONS):].partition("/")[0] or None


def error_type(error: BaseException) -> str:
    """The low-cardinality ``error.type`` of a failure: the AMQP error condition the
    service answered with (``com.microsoft:server-busy``), else the exception's class
    (``OperationTimeoutError``, ``TypeError``)."""
    if isinstance(error, ServiceBusManagementError) and error.error_condition:
        return error.error_condition
    return type(error).__qualname__
