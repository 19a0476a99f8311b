"""Each method's arguments made a validated ``Request``, and its ``Response`` made the
method's result: one place, for the sync client (:mod:`sbmgmt.client`) and the asyncio
client (:mod:`sbmgmt.aio`), so the two cannot drift apart.

A builder (``peek_call(...)``) checks what the models cannot
(:mod:`sbmgmt._client.argument_checks`), builds the operation's ``Request``
(:func:`~sbmgmt._client.argument_checks.model_request`: a field pydantic refuses is reported by the
method's argument it came from) and pairs it with the function that turns the ``Response`` into what
the method returns, as a :class:`Call`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from .._protocol.transaction import TransactionBase
from ..message import Message, ReceivedMessage
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
from ..ops._base import OpModel, OpRequest
from ..ops.get_message_sessions import ALL_SESSIONS
from ..ops.receive_by_sequence_number import ReceiverSettleMode
from ..ops.update_disposition import DispositionStatus
from ..rules import RuleDescription, RuleFilter, SqlRuleAction
from .argument_checks import (
    datetime_argument,
    encodable_properties,
    iterable_argument,
    message_list,
    model_request,
)

__all__ = [
    "Call",
    "DispositionStatus",
    "Resp",
    "SettleMode",
    "add_rule_call",
    "cancel_scheduled_call",
    "delete_messages_call",
    "delete_request",
    "get_session_state_call",
    "list_rules_call",
    "list_sessions_call",
    "peek_call",
    "receive_deferred_call",
    "remove_rule_call",
    "renew_locks_call",
    "renew_session_lock_call",
    "schedule_call",
    "set_session_state_call",
    "update_disposition_call",
]

R = TypeVar("R")
#: The Response type of a request.
Resp = TypeVar("Resp", bound=OpModel)

#: How ``receive_deferred_messages`` takes messages: ``"peek_lock"`` (locked, with lock
#: tokens, to settle later) or ``"receive_and_delete"`` (removed as they are returned).
SettleMode = Literal["peek_lock", "receive_and_delete"]


@dataclass(frozen=True, slots=True)
class Call(Generic[Resp, R]):
    """A validated request and how to turn its Response into the method's result."""

    request: OpRequest[Resp]
    result: Callable[[Resp], R]


def _none(response: OpModel) -> None:
    return None


def peek_call(
    from_sequence_number: int, max_count: int, session_id: str | None
) -> Call[peek_message.Response, list[ReceivedMessage]]:
    return Call(
        model_request(peek_message.Request, {"message_count": "max_count"}, {
            "from_sequence_number": from_sequence_number,
            "message_count": max_count,
            "session_id": session_id,
        }),
        _messages,
    )


def _messages(response: peek_message.Response) -> list[ReceivedMessage]:
    return list(response.messages)


def renew_locks_call(
    lock_tokens: Iterable[uuid.UUID | str],
) -> Call[renew_lock.Response, list[datetime]]:
    return Call(
        # pydantic turns str tokens into UUIDs; a bad one is named (lock_tokens[3])
        model_request(renew_lock.Request, {}, {
            "lock_tokens": iterable_argument(lock_tokens, "lock_tokens", "lock tokens")}),
        lambda r: list(r.expirations),
    )


def schedule_call(
    messages: Iterable[Message],
    scheduled_enqueue_time: datetime,
    transaction: TransactionBase | None = None,
) -> Call[schedule_message.Response, list[int]]:
    when = datetime_argument(scheduled_enqueue_time, "scheduled_enqueue_time")
    prepared = tuple(
        message.model_copy(update={
            "message_id": (str(uuid.uuid4()) if message.message_id in (None, "")
                           else message.message_id),
            "scheduled_enqueue_time": when,
        })
        for message in message_list(messages)
    )
    return Call(
        model_request(schedule_message.Request, {},
                      {"messages": prepared, "transaction": transaction}),
        lambda r: list(r.sequence_numbers),
    )


def cancel_scheduled_call(
    sequence_numbers: Iterable[int],
) -> Call[cancel_scheduled_message.Response, None]:
    return Call(
        model_request(cancel_scheduled_message.Request, {}, {
            "sequence_numbers": iterable_argument(sequence_numbers, "sequence_numbers",
                                                  "sequence numbers")}),
        _none,
    )


_SETTLE_MODES: Mapping[str, ReceiverSettleMode] = {
    "peek_lock": ReceiverSettleMode.PEEK_LOCK,
    "receive_and_delete": ReceiverSettleMode.RECEIVE_AND_DELETE,
}


def receive_deferred_call(
    sequence_numbers: Iterable[int], settle_mode: str, session_id: str | None
) -> Call[receive_by_sequence_number.Response, list[ReceivedMessage]]:
    mode = _SETTLE_MODES.get(settle_mode) if isinstance(settle_mode, str) else None
    if mode is None:
        raise ValueError(
            f"settle_mode must be 'peek_lock' or 'receive_and_delete', got {settle_mode!r}"
        )
    return Call(
        model_request(receive_by_sequence_number.Request, {}, {
            "sequence_numbers": iterable_argument(sequence_numbers, "sequence_numbers",
                                                  "sequence numbers"),
            "receiver_settle_mode": mode,
            "session_id": session_id,
        }),
        lambda r: list(r.messages),
    )


def update_disposition_call(
    lock_tokens: Iterable[uuid.UUID | str],
    status: DispositionStatus | str,
    dead_letter_reason: str | None,
    dead_letter_description: str | None,
    properties_to_modify: Mapping[str, Any] | None,
    session_id: str | None,
    transaction: TransactionBase | None = None,
) -> Call[update_disposition.Response, None]:
    encodable_properties(properties_to_modify, "properties_to_modify")
    return Call(
        # pydantic converts a str status and str tokens; a bad one is named
        model_request(update_disposition.Request, {"disposition_status": "status"}, {
            "disposition_status": status,
            "lock_tokens": iterable_argument(lock_tokens, "lock_tokens", "lock tokens"),
            "dead_letter_reason": dead_letter_reason,
            "dead_letter_description": dead_letter_description,
            "properties_to_modify": properties_to_modify,
            "session_id": session_id,
            "transaction": transaction,
        }),
        _none,
    )


def renew_session_lock_call(session_id: str) -> Call[renew_session_lock.Response, datetime]:
    return Call(
        model_request(renew_session_lock.Request, {}, {"session_id": session_id}),
        lambda r: r.expiration,
    )


def get_session_state_call(session_id: str) -> Call[get_session_state.Response, bytes | None]:
    return Call(
        model_request(get_session_state.Request, {}, {"session_id": session_id}),
        lambda r: r.session_state,
    )


def set_session_state_call(
    session_id: str, state: bytes | None
) -> Call[set_session_state.Response, None]:
    return Call(
        model_request(set_session_state.Request, {"session_state": "state"},
                      {"session_id": session_id, "session_state": state}),
        _none,
    )


def list_sessions_call(
    last_updated_time: datetime | None, skip: int, top: int
) -> Call[get_message_sessions.Response, list[str]]:
    return Call(
        model_request(get_message_sessions.Request, {}, {
            "last_updated_time": ALL_SESSIONS if last_updated_time is None
            else datetime_argument(last_updated_time, "last_updated_time"),
            "skip": skip,
            "top": top,
        }),
        lambda r: list(r.session_ids),
    )


def add_rule_call(
    name: str, rule_filter: RuleFilter, action: SqlRuleAction | None
) -> Call[add_rule.Response, None]:
    return Call(
        model_request(add_rule.Request, {"rule_name": "name"},
                      {"rule_name": name, "filter": rule_filter, "action": action}),
        _none,
    )


def remove_rule_call(name: str) -> Call[remove_rule.Response, None]:
    return Call(model_request(remove_rule.Request, {"rule_name": "name"}, {"rule_name": name}),
                _none)


def list_rules_call(skip: int, top: int) -> Call[enumerate_rules.Response, list[RuleDescription]]:
    return Call(model_request(enumerate_rules.Request, {}, {"skip": skip, "top": top}),
                lambda r: list(r.rules))


def delete_request(count: int, before: datetime | None, session_id: str | None,
                   argument: str = "max_count") -> batch_delete_messages.Request:
    """A validated batch-delete request (``before``, or None for now: the one rule,
    :func:`sbmgmt.ops.batch_delete_messages.cutoff`)."""
    return model_request(batch_delete_messages.Request, {"message_count": argument,
                                                         "enqueued_time_utc": "before"}, {
        "message_count": count,
        "enqueued_time_utc": batch_delete_messages.cutoff(before),
        "session_id": session_id,
    })


def delete_messages_call(
    max_count: int, before: datetime | None, session_id: str | None
) -> Call[batch_delete_messages.Response, int]:
    return Call(delete_request(max_count, before, session_id), _deleted)


def _deleted(response: batch_delete_messages.Response) -> int:
    return response.message_count
