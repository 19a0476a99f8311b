"""Every management operation is a CLIENT span with the messaging conventions' attributes
for Azure Service Bus, under the caller's span; failures and retries show on it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from fakes import FakeNamespace
from sbmgmt import RetryPolicy
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import ManagementClient
from sbmgmt.errors import MessageLockLostError, ServerBusyError
from sbmgmt.message import Message
from sbmgmt.ops import peek_message, renew_lock
from tests._waiting import wait_until

from .conftest import Recorded

LATER = datetime.now(timezone.utc) + timedelta(hours=1)


def test_operation_span_attributes(recorded: Recorded, fake: FakeNamespace,
                                   client: ManagementClient) -> None:
    q = client.entity("q")
    q.schedule_messages([Message(body=b"a"), Message(body=b"b")], LATER)
    q.peek_messages(1, 5)
    schedule, peek = recorded.spans("schedule q")[0], recorded.spans("peek q")[0]
    assert schedule.kind is SpanKind.CLIENT and peek.kind is SpanKind.CLIENT
    common = {
        "messaging.system": "servicebus",
        "messaging.destination.name": "q",
        "server.address": "127.0.0.1",
        "server.port": fake.port,
    }
    assert dict(schedule.attributes or {}) == {
        **common, "messaging.operation.name": "schedule", "messaging.operation.type": "send",
        "messaging.batch.message_count": 2}
    assert dict(peek.attributes or {}) == {
        **common, "messaging.operation.name": "peek", "messaging.operation.type": "receive"}
    assert schedule.status.status_code is StatusCode.UNSET


def test_settlement_names_the_disposition_and_the_subscription(
        recorded: Recorded, fake: FakeNamespace, client: ManagementClient) -> None:
    fake.send("t", Message(body=b"x"), Message(body=b"y"))
    path = "t/Subscriptions/s"
    locked = fake.receive_and_lock(path, 2)
    sub = client.entity(path)
    sub.renew_message_locks([m.lock_token for m in locked if m.lock_token])
    sub.update_disposition([locked[0].lock_token], "suspended", dead_letter_reason="bad")
    sub.update_disposition([locked[1].lock_token], "completed")
    renew = recorded.spans(f"renew_message_lock {path}")[0]
    assert renew.attributes is not None
    assert renew.attributes["messaging.batch.message_count"] == 2
    assert renew.attributes["messaging.destination.subscription.name"] == "s"
    dead, complete = recorded.spans(f"dead_letter {path}")[0], recorded.spans(f"complete {path}")[0]
    for span, status in ((dead, "dead_letter"), (complete, "complete")):
        assert span.attributes is not None
        assert span.attributes["messaging.operation.name"] == status
        assert span.attributes["messaging.operation.type"] == "settle"
        assert span.attributes["messaging.servicebus.disposition_status"] == status
        assert span.attributes["messaging.batch.message_count"] == 1


def test_operation_is_a_child_of_the_callers_span(recorded: Recorded,
                                                  client: ManagementClient) -> None:
    with recorded.tracer.start_as_current_span("handle order") as parent:
        client.entity("q").peek_messages()
        client.entity("q").list_sessions()
    context = parent.get_span_context()
    for name in ("peek q", "list_sessions q"):
        (span,) = recorded.spans(name)
        assert span.parent is not None
        assert span.parent.span_id == context.span_id
        assert span.context is not None and span.context.trace_id == context.trace_id


def test_failure_sets_error_type_status_and_exception(recorded: Recorded,
                                                     client: ManagementClient) -> None:
    with pytest.raises(MessageLockLostError):
        client.entity("q").renew_message_locks([uuid.uuid4()])
    (span,) = recorded.spans("renew_message_lock q")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == "com.microsoft:message-lock-lost"
    assert [e.name for e in span.events] == ["exception"]
    (point,) = [p for p in recorded.points("messaging.client.operation.duration")
                if p.attributes.get("error.type")]
    assert point.attributes["error.type"] == "com.microsoft:message-lock-lost"
    assert point.attributes["messaging.operation.name"] == "renew_message_lock"
    assert point.count == 1


def test_retries_are_events_on_the_calls_span(recorded: Recorded, fake: FakeNamespace) -> None:
    retry = RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.02, jitter=0.0)
    fake.faults.server_busy(2, operation=peek_message.OPERATION)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10,
                                                 retry=retry) as client:
        client.entity("q").peek_messages()
    (span,) = recorded.spans("peek q")
    retries = [e for e in span.events if e.name == "sbmgmt.retry"]
    assert [e.attributes["sbmgmt.attempt"] for e in retries if e.attributes] == [1, 2]
    for event in retries:
        assert event.attributes is not None
        assert event.attributes["error.type"] == "com.microsoft:server-busy"
        assert 0 <= float(event.attributes["sbmgmt.retry.delay"]) <= 0.02
    assert span.attributes is not None and span.attributes["sbmgmt.attempts"] == 3
    assert span.status.status_code is StatusCode.UNSET


def test_retries_that_give_up_end_in_error(recorded: Recorded, fake: FakeNamespace) -> None:
    retry = RetryPolicy(max_attempts=2, initial_backoff=0.01, max_backoff=0.02, jitter=0.0)
    fake.faults.server_busy(None, operation=peek_message.OPERATION)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10,
                                                 retry=retry) as client, \
            pytest.raises(ServerBusyError):
        client.entity("q").peek_messages()
    (span,) = recorded.spans("peek q")
    assert len([e for e in span.events if e.name == "sbmgmt.retry"]) == 1
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == "com.microsoft:server-busy"


def test_async_client_spans(recorded: Recorded, fake: FakeNamespace) -> None:
    async def run() -> None:
        async with AsyncManagementClient.from_connection_string(
                fake.connection_string, timeout=10) as client:
            with recorded.tracer.start_as_current_span("async work"):
                await client.entity("q").peek_messages()
                with pytest.raises(MessageLockLostError):
                    await client.entity("q").renew_message_locks([uuid.uuid4()])

    asyncio.run(run())
    (parent,) = recorded.spans("async work")
    peek, renew = recorded.spans("peek q")[0], recorded.spans("renew_message_lock q")[0]
    for span in (peek, renew):
        assert span.parent is not None and span.parent.span_id == parent.context.span_id
    assert renew.status.status_code is StatusCode.ERROR


def test_submit_span_ends_with_its_future(recorded: Recorded, client: ManagementClient) -> None:
    futures = [client.entity("q").submit(renew_lock.Request(lock_tokens=(uuid.uuid4(),)))
               for _ in range(3)]
    for future in futures:
        assert isinstance(future.exception(10), MessageLockLostError)
    # a span ends in its future's done callback, which runs just after waiters wake
    assert wait_until(lambda: len(recorded.spans("renew_message_lock q")) == 3)
    spans = recorded.spans("renew_message_lock q")
    assert all(s.status.status_code is StatusCode.ERROR for s in spans)
    active = recorded.points("sbmgmt.client.active_requests")
    assert [p.value for p in active] == [0]


def test_no_span_without_providers(recorded: Recorded, client: ManagementClient) -> None:
    from sbmgmt import telemetry
    from sbmgmt.telemetry import _switch

    telemetry.instrument(None, None)
    assert _switch.current() is None
    client.entity("q").peek_messages()
    assert recorded.spans() == []
    assert recorded.points("messaging.client.operation.duration") == []
