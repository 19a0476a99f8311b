"""Every EntityClient method, sync and asyncio, against the fake namespace."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import ops
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import DispositionStatus, ManagementClient
from sbmgmt.errors import (
    ConflictError,
    MessageLockLostError,
    NotFoundError,
    SessionLockLostError,
)
from sbmgmt.message import Message, MessageState
from sbmgmt.rules import CorrelationFilter, SqlFilter, SqlRuleAction

Runner = Callable[[Callable[[Any], Any]], Any]


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest, fake: FakeNamespace) -> Any:
    """Call ``fn(entity_factory)`` with the sync client, or await it with the async one."""
    if request.param == "sync":
        with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
            yield lambda fn: fn(c.entity)
        return

    def run_async(fn: Callable[[Any], Awaitable[Any]]) -> Any:
        async def main() -> Any:
            async with AsyncManagementClient.from_connection_string(
                fake.connection_string, timeout=10
            ) as c:
                result = fn(c.entity)
                return await result if asyncio.iscoroutine(result) else result

        return asyncio.run(main())

    yield run_async


def call(run: Runner, method: str, entity: str, *args: Any, **kwargs: Any) -> Any:
    def invoke(factory: Any) -> Any:
        return getattr(factory(entity), method)(*args, **kwargs)

    return run(invoke)


def test_peek_returns_messages_with_their_annotations(run: Runner, fake: FakeNamespace) -> None:
    fake.send("q", Message(body=b"one", message_id="m1", application_properties={"k": 7}),
              Message(body=b"two", message_id="m2"))
    messages = call(run, "peek_messages", "q", from_sequence_number=1, max_count=10)
    assert [m.body for m in messages] == [b"one", b"two"]
    assert [m.message_id for m in messages] == ["m1", "m2"]
    first = messages[0]
    assert isinstance(first.sequence_number, int) and first.sequence_number >= 1
    assert first.application_properties == {"k": 7}
    assert first.enqueued_time is not None and first.enqueued_time.tzinfo == timezone.utc
    assert first.state == MessageState.ACTIVE
    assert call(run, "peek_messages", "q", from_sequence_number=100) == []


def test_schedule_then_cancel(run: Runner, fake: FakeNamespace) -> None:
    when = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    numbers = call(run, "schedule_messages", "q",
                   [Message(body=b"later"), Message(body=b"also", message_id="mine")], when)
    assert len(numbers) == 2 and all(isinstance(n, int) for n in numbers)
    peeked = call(run, "peek_messages", "q", max_count=10)
    assert {m.state for m in peeked} == {MessageState.SCHEDULED}
    assert peeked[0].scheduled_enqueue_time == when
    assert peeked[1].message_id == "mine"
    uuid.UUID(peeked[0].message_id)  # filled in with a uuid4 string
    assert call(run, "cancel_scheduled_messages", "q", numbers) is None
    assert call(run, "peek_messages", "q") == []


def test_renew_locks_and_dispositions(run: Runner, fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=f"m{i}".encode()) for i in range(3)))
    locked = fake.receive_and_lock("q", 3)
    tokens = [m.lock_token for m in locked]
    expirations = call(run, "renew_message_locks", "q", tokens)
    assert len(expirations) == 3
    assert all(e.tzinfo == timezone.utc and e > datetime.now(timezone.utc) for e in expirations)
    call(run, "update_disposition", "q", [tokens[0]], DispositionStatus.COMPLETED)
    call(run, "update_disposition", "q", [tokens[1]], "defered")
    call(run, "update_disposition", "q", [str(tokens[2])], "suspended",
         dead_letter_reason="bad", dead_letter_description="very bad")
    dead = call(run, "peek_messages", "q/$DeadLetterQueue")
    assert [m.dead_letter_reason for m in dead] == ["bad"]
    assert dead[0].dead_letter_description == "very bad"
    deferred_seq = locked[1].sequence_number
    received = call(run, "receive_deferred_messages", "q", [deferred_seq])
    assert [m.sequence_number for m in received] == [deferred_seq]
    assert isinstance(received[0].lock_token, uuid.UUID)
    assert received[0].locked_until is not None
    call(run, "update_disposition", "q", [received[0].lock_token], "completed")
    with pytest.raises(NotFoundError):
        call(run, "receive_deferred_messages", "q", [deferred_seq],
             settle_mode="receive_and_delete")


def test_receive_and_delete_deferred(run: Runner, fake: FakeNamespace) -> None:
    fake.send("q", Message(body=b"d"))
    (locked,) = fake.receive_and_lock("q", 1)
    call(run, "update_disposition", "q", [locked.lock_token], DispositionStatus.DEFERED)
    (taken,) = call(run, "receive_deferred_messages", "q", [locked.sequence_number],
                    settle_mode="receive_and_delete")
    assert taken.body == b"d"
    assert call(run, "peek_messages", "q") == []


def test_lost_lock_is_typed(run: Runner) -> None:
    with pytest.raises(MessageLockLostError) as info:
        call(run, "renew_message_locks", "q", [uuid.uuid4()])
    assert info.value.status_code == 410


def test_session_operations(
    run: Runner, fake: FakeNamespace
) -> None:
    # The session requests by id need the session locked on the client's own connection
    # (tests/client/test_session_lock.py); here the fake's relaxed mode stands in.
    fake.relaxed_session_locks = True
    fake.send("sq", Message(body=b"s", session_id="s1"), Message(body=b"t", session_id="s2"))
    fake.receive_and_lock("sq", 1, session_id="s1")
    assert call(run, "get_session_state", "sq", "s1") is None
    assert call(run, "set_session_state", "sq", "s1", b"\x00state") is None
    assert call(run, "get_session_state", "sq", "s1") == b"\x00state"
    call(run, "set_session_state", "sq", "s1", None)
    assert call(run, "get_session_state", "sq", "s1") is None
    expiry = call(run, "renew_session_lock", "sq", "s1")
    assert expiry.tzinfo == timezone.utc and expiry > datetime.now(timezone.utc)
    fake.relaxed_session_locks = False
    with pytest.raises(SessionLockLostError, match="associated-link-name"):
        call(run, "get_session_state", "sq", "s1")
    assert sorted(call(run, "list_sessions", "sq")) == ["s1", "s2"]
    assert len(call(run, "list_sessions", "sq", skip=0, top=1)) == 1
    long_ago = datetime(2000, 1, 1, tzinfo=timezone.utc)
    assert "s1" in call(run, "list_sessions", "sq", last_updated_time=long_ago)


def test_session_not_held_is_session_lock_lost(run: Runner, fake: FakeNamespace) -> None:
    with pytest.raises(SessionLockLostError):
        call(run, "get_session_state", "sq", "nobody")


def test_rules(run: Runner) -> None:
    sub = "t/Subscriptions/s"
    call(run, "add_rule", sub, "sql", SqlFilter(expression="color = 'red'"),
         SqlRuleAction(expression="SET x = 1"))
    call(run, "add_rule", sub, "corr", CorrelationFilter(correlation_id="c1"))
    with pytest.raises(ConflictError):
        call(run, "add_rule", sub, "corr", CorrelationFilter(correlation_id="c2"))
    rules = {r.name: r for r in call(run, "list_rules", sub)}
    assert set(rules) == {"$Default", "sql", "corr"}
    assert rules["sql"].filter == SqlFilter(expression="color = 'red'")
    assert rules["corr"].filter == CorrelationFilter(correlation_id="c1")
    call(run, "remove_rule", sub, "sql")
    assert {r.name for r in call(run, "list_rules", sub, skip=0, top=10)} == {"$Default", "corr"}
    with pytest.raises(NotFoundError):
        call(run, "remove_rule", sub, "sql")


def test_send_request_low_level(run: Runner, fake: FakeNamespace) -> None:
    fake.send("q", Message(body=b"x"))
    response = call(run, "send_request", "q",
                    ops.peek_message.Request(from_sequence_number=1, message_count=5))
    assert isinstance(response, ops.peek_message.Response)
    assert [m.body for m in response.messages] == [b"x"]


def test_bad_arguments_fail_before_sending(client: ManagementClient) -> None:
    q = client.entity("q")
    with pytest.raises(ValueError, match="settle_mode"):
        q.receive_deferred_messages([1], settle_mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        q.renew_message_locks([])
    with pytest.raises(ValueError):
        q.update_disposition([uuid.uuid4()], "gone")
    assert client.stats.submitted == 0


def test_submit_returns_a_future(client: ManagementClient, fake: FakeNamespace) -> None:
    fake.send("q", Message(body=b"f"))
    future = client.entity("q").submit(
        ops.peek_message.Request(from_sequence_number=1, message_count=1)
    )
    assert [m.body for m in future.result(10).messages] == [b"f"]


def test_unknown_entity_is_not_found(client: ManagementClient) -> None:
    with pytest.raises(NotFoundError):
        client.entity("nope").peek_messages()
