"""The ``<entity>/$management`` node: every operation, through the ``sbmgmt.ops`` codecs.

A request is parsed with :func:`sbmgmt._protocol.parse_request`, its body decoded by
the operation module's ``decode_request``, handled against the store, and answered
with the module's ``encode_response`` inside :func:`sbmgmt._protocol.build_reply`.
The wire format lives only in ``sbmgmt.ops``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from proton import Message

from sbmgmt import _protocol, ops
from sbmgmt._amqp import MAX_TIMESTAMP_MS, ms_from_datetime
from sbmgmt.errors import ProtocolError
from sbmgmt.ops import (
    add_rule,
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
from sbmgmt.rules import RuleDescription

from ._addresses import entity_key
from ._entity import Entity, SessionRecord
from ._errors import (
    ArgumentError,
    EntityAlreadyExists,
    EntityNotFound,
    FakeServiceError,
    InternalError,
)
from ._rules import check_rule
from ._store import Store
from .sql import SqlSyntaxError

__all__ = ["ManagementNode"]

_LOG = logging.getLogger("fakes.management")

_Handler = Callable[[Entity, Any, int, float], Any]


def _dt(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _held(entity: Entity, session_id: str, now: float) -> SessionRecord:
    """Session operations need the session to be locked.

    The fake checks that a receiver holds the session lock, not which connection
    holds it, so management-only tools (like sbmgmt's client) can be tested against
    sessions locked by a receiver elsewhere.
    """
    return entity.held_session(session_id, now)


def _peek(entity: Entity, request: peek_message.Request, _c: int,
          _now: float) -> peek_message.Response:
    found = entity.peek(request.from_sequence_number, request.message_count, request.session_id)
    return peek_message.Response(
        messages=tuple(m.render().model_copy(update={"lock_token": None}) for m in found))


def _renew_lock(entity: Entity, request: renew_lock.Request, _c: int,
                now: float) -> renew_lock.Response:
    return renew_lock.Response(
        expirations=tuple(_dt(entity.renew(t, now)) for t in request.lock_tokens))


def _schedule(entity: Entity, request: schedule_message.Request, _c: int,
              now: float) -> schedule_message.Response:
    for message in request.messages:
        if message.scheduled_enqueue_time is None:
            raise ArgumentError("each scheduled message needs x-opt-scheduled-enqueue-time")
    return schedule_message.Response(sequence_numbers=tuple(
        entity.accept(m, now).sequence_number for m in request.messages))


def _cancel(entity: Entity, request: cancel_scheduled_message.Request, _c: int,
            _now: float) -> cancel_scheduled_message.Response:
    entity.cancel_scheduled(list(request.sequence_numbers))
    return cancel_scheduled_message.Response()


def _renew_session(entity: Entity, request: renew_session_lock.Request, _c: int,
                   now: float) -> renew_session_lock.Response:
    _held(entity, request.session_id, now)
    return renew_session_lock.Response(
        expiration=_dt(entity.renew_session(request.session_id, now)))


def _get_state(entity: Entity, request: get_session_state.Request, _c: int,
               now: float) -> get_session_state.Response:
    record = _held(entity, request.session_id, now)
    return get_session_state.Response(session_state=record.state)


def _set_state(entity: Entity, request: set_session_state.Request, _c: int,
               now: float) -> set_session_state.Response:
    _held(entity, request.session_id, now)
    entity.set_session_state(request.session_id, request.session_state, now)
    return set_session_state.Response()


def _sessions(entity: Entity, request: get_message_sessions.Request, _c: int,
              _now: float) -> get_message_sessions.Response:
    since_ms = ms_from_datetime(request.last_updated_time)
    since = None if since_ms >= MAX_TIMESTAMP_MS else since_ms / 1000
    ids = entity.session_ids(since)[request.skip:request.skip + request.top]
    return get_message_sessions.Response(skip=request.skip + len(ids), session_ids=tuple(ids))


def _receive_deferred(entity: Entity, request: receive_by_sequence_number.Request, _c: int,
                      now: float) -> receive_by_sequence_number.Response:
    mode = receive_by_sequence_number.ReceiverSettleMode
    peek_lock = request.receiver_settle_mode is mode.PEEK_LOCK
    found = entity.receive_deferred(list(request.sequence_numbers), now, peek_lock=peek_lock,
                                    session_id=request.session_id)
    return receive_by_sequence_number.Response(messages=tuple(m.render() for m in found))


def _dispose(entity: Entity, request: update_disposition.Request, _c: int,
             now: float) -> update_disposition.Response:
    status = update_disposition.DispositionStatus
    props = request.properties_to_modify
    for token in request.lock_tokens:
        if request.disposition_status is status.COMPLETED:
            entity.complete(token, now)
        elif request.disposition_status is status.ABANDONED:
            entity.abandon(token, now, props)
        elif request.disposition_status is status.DEFERED:
            entity.defer(token, now, props)
        else:
            entity.dead_letter(token, now, request.dead_letter_reason,
                               request.dead_letter_description, props)
    return update_disposition.Response()


def _add_rule(entity: Entity, request: add_rule.Request, _c: int,
              now: float) -> add_rule.Response:
    if request.rule_name in entity.rules:
        raise EntityAlreadyExists(f"The rule {request.rule_name!r} already exists.")
    rule = RuleDescription(name=request.rule_name, filter=request.filter, action=request.action,
                           created_at=_dt(now))
    try:
        check_rule(rule)
    except SqlSyntaxError as exc:
        raise ArgumentError(f"The rule {request.rule_name!r} is not valid: {exc}") from None
    entity.rules[request.rule_name] = rule
    return add_rule.Response()


def _remove_rule(entity: Entity, request: remove_rule.Request, _c: int,
                 _now: float) -> remove_rule.Response:
    if entity.rules.pop(request.rule_name, None) is None:
        raise EntityNotFound(f"The rule {request.rule_name!r} does not exist.")
    return remove_rule.Response()


def _rules(entity: Entity, request: enumerate_rules.Request, _c: int,
           _now: float) -> enumerate_rules.Response:
    rules = list(entity.rules.values())[request.skip:request.skip + request.top]
    return enumerate_rules.Response(rules=tuple(rules))


_HANDLERS: dict[str, _Handler] = {
    peek_message.OPERATION: _peek,
    renew_lock.OPERATION: _renew_lock,
    schedule_message.OPERATION: _schedule,
    cancel_scheduled_message.OPERATION: _cancel,
    renew_session_lock.OPERATION: _renew_session,
    get_session_state.OPERATION: _get_state,
    set_session_state.OPERATION: _set_state,
    get_message_sessions.OPERATION: _sessions,
    receive_by_sequence_number.OPERATION: _receive_deferred,
    update_disposition.OPERATION: _dispose,
    add_rule.OPERATION: _add_rule,
    remove_rule.OPERATION: _remove_rule,
    enumerate_rules.OPERATION: _rules,
}


class ManagementNode:
    """Answers management requests for every entity of a store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        #: (entity key, operation) -> how many requests were applied (answered with success).
        self.applied: Counter[tuple[str, str]] = Counter()

    def handle(self, path: str, message: Message, connection: int, now: float) -> Message:
        """The reply to one request message sent to ``<path>/$management``."""
        message_id = message.id
        try:
            request = _protocol.parse_request(message)
            module = ops.OPERATIONS.get(request.operation)
            if module is None:
                raise ArgumentError(f"Unknown management operation {request.operation!r}.")
            decoded = module.decode_request(request.application_properties, request.body)
            response = _HANDLERS[request.operation](self._store.entity(path), decoded,
                                                     connection, now)
            status, body = module.encode_response(response)
            self.applied[(entity_key(path), request.operation)] += 1
            return _protocol.build_reply(message_id, status, body)
        except ProtocolError as exc:
            error: FakeServiceError = ArgumentError(str(exc))
        except FakeServiceError as exc:
            error = exc
        except Exception as exc:  # a bug here must answer 500, not stop the server
            _LOG.exception("management request to %s failed", path)
            error = InternalError(f"{type(exc).__name__} in the fake namespace")
        return _protocol.build_reply(message_id, error.status_code,
                                     description=error.description,
                                     error_condition=error.condition)
