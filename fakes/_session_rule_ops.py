"""The management operations on an entity's sessions and rules: renew a session lock,
get and set a session's state, list sessions, and add, remove and list rules.

Each handler takes the entity, the decoded request and ``now`` and returns the typed
response (:mod:`fakes._management` dispatches to them and encodes the reply; it also
checks, before a session operation, that the requesting link holds the session). The rule
operations change the subscription only through its rule methods
(:mod:`fakes._entity_rules`), as the administration API does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sbmgmt.amqp.values import MAX_TIMESTAMP_MS, ms_from_datetime
from sbmgmt.ops import (
    add_rule,
    enumerate_rules,
    get_message_sessions,
    get_session_state,
    remove_rule,
    renew_session_lock,
    set_session_state,
)
from sbmgmt.rules import RuleDescription

from ._entity import Entity
from ._entity_rules import StoredRule
from ._entity_state import SessionRecord, as_datetime

__all__ = ["RULE_HANDLERS", "SESSION_HANDLERS"]


def _held(entity: Entity, session_id: str, now: float) -> SessionRecord:
    """Session operations need the session to be locked (by whom: see
    :meth:`fakes._management.ManagementNode.handle`)."""
    return entity.held_session(session_id, now)


def _renew_session(entity: Entity, request: renew_session_lock.Request,
                   now: float) -> renew_session_lock.Response:
    _held(entity, request.session_id, now)
    return renew_session_lock.Response(
        expiration=as_datetime(entity.renew_session(request.session_id, now)))


def _get_state(entity: Entity, request: get_session_state.Request,
               now: float) -> get_session_state.Response:
    record = _held(entity, request.session_id, now)
    return get_session_state.Response(session_state=record.state)


def _set_state(entity: Entity, request: set_session_state.Request,
               now: float) -> set_session_state.Response:
    _held(entity, request.session_id, now)
    entity.set_session_state(request.session_id, request.session_state, now)
    return set_session_state.Response()


def _sessions(entity: Entity, request: get_message_sessions.Request,
              _now: float) -> get_message_sessions.Response:
    since_ms = ms_from_datetime(request.last_updated_time)
    since = None if since_ms >= MAX_TIMESTAMP_MS else since_ms / 1000
    ids = entity.session_ids(since)[request.skip:request.skip + request.top]
    return get_message_sessions.Response(skip=request.skip + len(ids), session_ids=tuple(ids))


def _add_rule(entity: Entity, request: add_rule.Request, now: float) -> add_rule.Response:
    entity.add_rule(StoredRule(RuleDescription(name=request.rule_name, filter=request.filter,
                                               action=request.action)), now)
    return add_rule.Response()


def _remove_rule(entity: Entity, request: remove_rule.Request, now: float) -> remove_rule.Response:
    entity.remove_rule(request.rule_name, now)
    return remove_rule.Response()


def _rules(entity: Entity, request: enumerate_rules.Request,
           _now: float) -> enumerate_rules.Response:
    rules = entity.rules()[request.skip:request.skip + request.top]
    return enumerate_rules.Response(rules=tuple(rules))


#: The session operations, by operation name.
SESSION_HANDLERS: dict[str, Callable[[Entity, Any, float], Any]] = {
    renew_session_lock.OPERATION: _renew_session,
    get_session_state.OPERATION: _get_state,
    set_session_state.OPERATION: _set_state,
    get_message_sessions.OPERATION: _sessions,
}

#: The rule operations (on a subscription), by operation name.
RULE_HANDLERS: dict[str, Callable[[Entity, Any, float], Any]] = {
    add_rule.OPERATION: _add_rule,
    remove_rule.OPERATION: _remove_rule,
    enumerate_rules.OPERATION: _rules,
}
