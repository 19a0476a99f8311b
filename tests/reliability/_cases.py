"""Every management operation as a reliability case: prepare, run, check the result.

``prepare`` runs before any fault is injected (it may use the client); ``run`` is the
call under test; ``check`` asserts the result is right. ``OPERATION`` names let the
tests read the fake's ``applied`` counter to prove a request was applied at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.message import Message
from sbmgmt.ops import (
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
from sbmgmt.rules import SqlFilter

QUEUE = "q"
SESSION_QUEUE = "sq"
SUBSCRIPTION = "t/Subscriptions/s"
_LATER = timedelta(hours=1)


@dataclass(frozen=True)
class Case:
    """One operation under test."""

    operation: str
    entity: str
    idempotent: bool
    prepare: Callable[[FakeNamespace, ManagementClient], Any]
    run: Callable[[ManagementClient, Any], Any]
    check: Callable[[FakeNamespace, Any, Any], None]
    #: a replay of an already applied request may legitimately be refused with these
    replay_errors: tuple[str, ...] = ()


def new_namespace() -> FakeNamespace:
    """A started fake with the entities every case uses."""
    namespace = FakeNamespace().start()
    namespace.add_queue(QUEUE)
    namespace.add_queue(SESSION_QUEUE, requires_session=True)
    namespace.add_topic("t")
    namespace.add_subscription("t", "s")
    return namespace


def _messages(fake: FakeNamespace, _client: ManagementClient) -> None:
    fake.send(QUEUE, *(Message(body=f"m{i}".encode()) for i in range(3)))


def _locked(fake: FakeNamespace, _client: ManagementClient) -> list[Any]:
    fake.send(QUEUE, Message(body=b"a"), Message(body=b"b"))
    return [m.lock_token for m in fake.receive_and_lock(QUEUE, 2)]


def _scheduled(fake: FakeNamespace, _client: ManagementClient) -> int:
    when = datetime.now(timezone.utc) + _LATER
    fake.send(QUEUE, Message(body=b"s", scheduled_enqueue_time=when))
    return 1


def _deferred(fake: FakeNamespace, client: ManagementClient) -> int:
    fake.send(QUEUE, Message(body=b"d"))
    token = fake.receive_and_lock(QUEUE, 1)[0].lock_token
    assert token is not None
    client.entity(QUEUE).update_disposition([token], "defered")
    return 1


def _session(fake: FakeNamespace, _client: ManagementClient) -> str:
    # These cases test how requests survive faults (a lost connection included, which
    # would release a lock the client held itself): the session is locked by the fake's
    # direct receiver, and the fake is told explicitly to accept that.
    fake.relaxed_session_locks = True
    fake.send(SESSION_QUEUE, Message(body=b"x", session_id="s1"))
    fake.receive_and_lock(SESSION_QUEUE, 1, session_id="s1")
    return "s1"


def _rule(_fake: FakeNamespace, client: ManagementClient) -> None:
    client.entity(SUBSCRIPTION).add_rule("old", SqlFilter(expression="a = 1"))


def _counts(entity: str, **expected: int) -> Callable[[FakeNamespace, Any, Any], None]:
    def check(fake: FakeNamespace, _prepared: Any, _result: Any) -> None:
        counts = fake.accounting(entity)
        assert {key: counts[key] for key in expected} == expected

    return check


def _check_removed(fake: FakeNamespace, _prepared: Any, _result: Any) -> None:
    assert fake.applied(SUBSCRIPTION, remove_rule.OPERATION) == 1


def _check_peek(_fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert [m.body for m in result] == [b"m0", b"m1", b"m2"]


def _check_renew(_fake: FakeNamespace, prepared: Any, result: Any) -> None:
    assert len(result) == len(prepared)
    assert all(when > datetime.now(timezone.utc) for when in result)


def _check_schedule(fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert result == [1]
    assert fake.accounting(QUEUE)["scheduled"] == 1


def _check_deferred(fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert [m.body for m in result] == [b"d"]
    assert fake.accounting(QUEUE)["deferred"] == 0


def _check_session_time(_fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert result > datetime.now(timezone.utc)


def _check_state(_fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert result is None


def _check_sessions(_fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert result == ["s1"]


def _check_rules(_fake: FakeNamespace, _prepared: Any, result: Any) -> None:
    assert [r.name for r in result] == ["$Default"]


def _check_added(fake: FakeNamespace, _prepared: Any, _result: Any) -> None:
    assert fake.applied(SUBSCRIPTION, add_rule.OPERATION) == 1


CASES: tuple[Case, ...] = (
    Case(peek_message.OPERATION, QUEUE, True, _messages,
         lambda c, _p: c.entity(QUEUE).peek_messages(max_count=3), _check_peek),
    Case(renew_lock.OPERATION, QUEUE, True, _locked,
         lambda c, tokens: c.entity(QUEUE).renew_message_locks(tokens), _check_renew),
    Case(schedule_message.OPERATION, QUEUE, False, lambda _f, _c: None,
         lambda c, _p: c.entity(QUEUE).schedule_messages(
             [Message(body=b"s")], datetime.now(timezone.utc) + _LATER), _check_schedule),
    Case(cancel_scheduled_message.OPERATION, QUEUE, True, _scheduled,
         lambda c, seq: c.entity(QUEUE).cancel_scheduled_messages([seq]),
         _counts(QUEUE, scheduled=0, cancelled=1),
         replay_errors=("ScheduledMessagesNotFoundError",)),
    Case(receive_by_sequence_number.OPERATION, QUEUE, False, _deferred,
         lambda c, seq: c.entity(QUEUE).receive_deferred_messages([seq]), _check_deferred),
    Case(update_disposition.OPERATION, QUEUE, False, _locked,
         lambda c, tokens: c.entity(QUEUE).update_disposition(tokens, "completed"),
         _counts(QUEUE, completed=2, locked=0)),
    Case(renew_session_lock.OPERATION, SESSION_QUEUE, True, _session,
         lambda c, sid: c.entity(SESSION_QUEUE).renew_session_lock(sid), _check_session_time),
    Case(set_session_state.OPERATION, SESSION_QUEUE, True, _session,
         lambda c, sid: c.entity(SESSION_QUEUE).set_session_state(sid, b"state"),
         _check_state),
    Case(get_session_state.OPERATION, SESSION_QUEUE, True, _session,
         lambda c, sid: c.entity(SESSION_QUEUE).get_session_state(sid), _check_state),
    Case(get_message_sessions.OPERATION, SESSION_QUEUE, True, _session,
         lambda c, _p: c.entity(SESSION_QUEUE).list_sessions(), _check_sessions),
    Case(add_rule.OPERATION, SUBSCRIPTION, False, lambda _f, _c: None,
         lambda c, _p: c.entity(SUBSCRIPTION).add_rule("new", SqlFilter(expression="b = 2")),
         _check_added),
    Case(remove_rule.OPERATION, SUBSCRIPTION, True, _rule,
         lambda c, _p: c.entity(SUBSCRIPTION).remove_rule("old"), _check_removed,
         replay_errors=("NotFoundError",)),
    Case(enumerate_rules.OPERATION, SUBSCRIPTION, True, lambda _f, _c: None,
         lambda c, _p: c.entity(SUBSCRIPTION).list_rules(), _check_rules),
    Case(batch_delete_messages.OPERATION, QUEUE, False, _messages,
         lambda c, _p: c.entity(QUEUE).delete_messages(10), _counts(QUEUE, deleted=3, active=0)),
)
