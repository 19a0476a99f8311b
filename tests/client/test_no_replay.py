"""Never replay what may have been applied: after a 500 (or 408) reply only idempotent
operations are retried; a non-idempotent one surfaces the error with
``may_have_been_applied=True``. A 503 server-busy reply means "not applied": every
operation is retried after it. The fake answers a schedule time out of range 400,
without using up sequence numbers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from proton import Message as ProtonMessage

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.errors import BadRequestError, InternalServerError, ServerTimeoutError
from sbmgmt.message import Message
from tests._wire import build_reply

QUEUE = "q"
SCHEDULE = "com.microsoft:schedule-message"
PEEK = "com.microsoft:peek-message"
LATER = datetime.now(timezone.utc) + timedelta(hours=1)
RETRIES = RetryPolicy(max_attempts=5, initial_backoff=0.001, max_backoff=0.01)


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue(QUEUE)
        yield namespace


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10,
                                                 retry=RETRIES) as c:
        yield c


def _answer(status: int, condition: str) -> Any:
    def reply(correlation_id: Any) -> ProtonMessage:
        return build_reply(correlation_id, status, description="injected",
                           error_condition=condition)
    return reply


def _applied(fake: FakeNamespace, operation: str) -> int:
    server = fake._server
    assert server is not None
    return server.management.applied[(QUEUE, operation)]


@pytest.mark.parametrize(("status", "condition", "error"), [
    (500, "amqp:internal-error", InternalServerError),
    (408, "com.microsoft:timeout", ServerTimeoutError),
])
def test_a_non_idempotent_request_answered_with_an_unknown_outcome_is_not_replayed(
        fake: FakeNamespace, client: ManagementClient, status: int, condition: str,
        error: type[Exception]) -> None:
    fake.faults.malformed_replies(_answer(status, condition), operation=SCHEDULE)
    with pytest.raises(error) as raised:
        client.entity(QUEUE).schedule_messages([Message(body=b"once")], LATER)
    assert raised.value.may_have_been_applied is True
    assert _applied(fake, SCHEDULE) == 1  # sent once, not five times
    assert client.stats.submitted == 1


def test_an_idempotent_request_is_retried_after_a_500(
        fake: FakeNamespace, client: ManagementClient) -> None:
    fake.faults.malformed_replies(_answer(500, "amqp:internal-error"), count=2, operation=PEEK)
    assert client.entity(QUEUE).peek_messages() == []
    assert _applied(fake, PEEK) == 3


def test_an_idempotent_request_that_keeps_failing_says_it_was_not_risky(
        fake: FakeNamespace, client: ManagementClient) -> None:
    fake.faults.malformed_replies(_answer(500, "amqp:internal-error"), operation=PEEK)
    with pytest.raises(InternalServerError) as raised:
        client.entity(QUEUE).peek_messages()
    assert raised.value.may_have_been_applied is False
    assert _applied(fake, PEEK) == RETRIES.max_attempts


def test_a_non_idempotent_request_is_retried_after_server_busy(
        fake: FakeNamespace, client: ManagementClient) -> None:
    fake.faults.server_busy(2, operation=SCHEDULE)
    [number] = client.entity(QUEUE).schedule_messages([Message(body=b"busy")], LATER)
    assert _applied(fake, SCHEDULE) == 1
    assert number == 1


def test_a_schedule_time_out_of_range_is_a_bad_request_using_no_sequence_number(
        fake: FakeNamespace, client: ManagementClient) -> None:
    queue = client.entity(QUEUE)
    with pytest.raises(BadRequestError, match="out of range") as raised:
        queue.schedule_messages([Message(body=b"a"), Message(body=b"b")], datetime.max)
    assert raised.value.status_code == 400
    assert raised.value.error_condition == "com.microsoft:argument-out-of-range"
    assert client.stats.submitted == 1
    assert queue.schedule_messages([Message(body=b"c")], LATER) == [1]
