"""Replies that are well-formed but do not answer their request as the page says.

The management node here answers with replies shaped by hand (proton values, as the
reference page lays them out), each breaking one pairing rule between request and reply:
an expiry per lock token sent, a sequence number per message scheduled, only the
deferred messages asked for, at most the count asked for. Each is a ProtocolError (the
caller pairs results with its request by position), and the next request works.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from proton import Array, Data, Message, int32, symbol, timestamp

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._retry import RetryPolicy
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message as SbMessage
from sbmgmt.ops import (
    enumerate_rules,
    get_message_sessions,
    peek_message,
    receive_by_sequence_number,
    renew_lock,
    schedule_message,
)
from sbmgmt.rules import SqlFilter

from ._cases import QUEUE, SESSION_QUEUE, SUBSCRIPTION, new_namespace

_NOW_MS = 1_900_000_000_000


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    namespace = new_namespace()
    namespace.send(QUEUE, SbMessage(body=b"m"))
    yield namespace
    namespace.stop()


@pytest.fixture(scope="module")
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(
            fake.connection_string, timeout=5, retry=RetryPolicy(max_attempts=1)) as c:
        yield c


@pytest.fixture(autouse=True)
def no_leaked_threads() -> None:
    """Module-scoped fake and client here: the suite-wide check runs in other modules."""


def _answer(fake: FakeNamespace, operation: str, body: Any) -> None:
    """The next ``operation`` request is answered 200 with ``body`` (an amqp-value)."""
    def factory(message_id: Any) -> Message:
        return Message(correlation_id=message_id, properties={"statusCode": int32(200)},
                       body=body)

    fake.faults.malformed_replies(factory, 1, operation=operation)


def _wire(sequence_number: int, session_id: str | None = None) -> bytes:
    """A peeked / deferred message as the service encodes it (message annotations)."""
    return bytes(Message(body=b"x", group_id=session_id, annotations={
        symbol("x-opt-sequence-number"): sequence_number,
        symbol("x-opt-enqueued-time"): timestamp(_NOW_MS),
        symbol("x-opt-locked-until"): timestamp(_NOW_MS + 60_000),
    }).encode())


def _later() -> datetime:
    return datetime.now(timezone.utc) + timedelta(hours=1)


_CASES: list[tuple[str, str, Any, Callable[[ManagementClient], Any], str]] = [
    # "expirations | array of timestamp | ... corresponding to the request lock tokens"
    (renew_lock.OPERATION, QUEUE,
     {"expirations": Array(Data.NULL, Data.TIMESTAMP, timestamp(_NOW_MS))},
     lambda c: c.entity(QUEUE).renew_message_locks([uuid.uuid4(), uuid.uuid4()]),
     "1 expirations for 2 lock tokens"),
    # "sequence-numbers | array of long | Yes | Sequence number of scheduled messages"
    (schedule_message.OPERATION, QUEUE,
     {"sequence-numbers": Array(Data.NULL, Data.LONG, 7)},
     lambda c: c.entity(QUEUE).schedule_messages(
         [SbMessage(body=b"a"), SbMessage(body=b"b")], _later()),
     "1 sequence numbers for 2 messages"),
    # deferred messages: only those asked for
    (receive_by_sequence_number.OPERATION, QUEUE,
     {"messages": [{"lock-token": uuid.uuid4(), "message": _wire(99)}]},
     lambda c: c.entity(QUEUE).receive_deferred_messages([5]),
     "sequence number 99 was not asked for"),
    (receive_by_sequence_number.OPERATION, QUEUE,
     {"messages": [{"lock-token": uuid.uuid4(), "message": _wire(5)},
                   {"lock-token": uuid.uuid4(), "message": _wire(5)}]},
     lambda c: c.entity(QUEUE).receive_deferred_messages([5, 6]),
     "came twice"),
    # peek: at most message-count, from from-sequence-number on, of the session asked
    (peek_message.OPERATION, QUEUE,
     {"messages": [{"message": _wire(1)}, {"message": _wire(2)}]},
     lambda c: c.entity(QUEUE).peek_messages(from_sequence_number=1, max_count=1),
     "2 messages for at most 1"),
    (peek_message.OPERATION, QUEUE,
     {"messages": [{"message": _wire(3)}]},
     lambda c: c.entity(QUEUE).peek_messages(from_sequence_number=10, max_count=5),
     "before from-sequence-number 10"),
    (peek_message.OPERATION, SESSION_QUEUE,
     {"messages": [{"message": _wire(3, session_id="other")}]},
     lambda c: c.entity(SESSION_QUEUE).peek_messages(max_count=5, session_id="s1"),
     "session 'other'"),
    # "top | int | Yes | Maximum number of sessions."
    (get_message_sessions.OPERATION, SESSION_QUEUE,
     {"skip": int32(0), "sessions-ids": ["a", "b"]},
     lambda c: c.entity(SESSION_QUEUE).list_sessions(top=1),
     "2 session ids for at most 1"),
]


@pytest.mark.parametrize(("operation", "entity", "body", "call", "match"), _CASES,
                         ids=[f"{case[0].split(':')[1]}-{i}" for i, case in enumerate(_CASES)])
def test_a_reply_that_does_not_answer_its_request_is_a_protocol_error(
        fake: FakeNamespace, client: ManagementClient, operation: str, entity: str,
        body: Any, call: Callable[[ManagementClient], Any], match: str) -> None:
    _answer(fake, operation, body)
    with pytest.raises(ProtocolError, match=match):
        call(client)
    assert [m.body for m in client.entity(QUEUE).peek_messages(max_count=1)] == [b"m"]


def test_more_rules_than_top_is_a_protocol_error(
        fake: FakeNamespace, client: ManagementClient) -> None:
    sub = client.entity(SUBSCRIPTION)
    sub.add_rule("extra", SqlFilter(expression="a = 1"))
    status, body = enumerate_rules.encode_response(
        enumerate_rules.Response(rules=tuple(sub.list_rules(top=10))))
    assert status == 200 and len(body["rules"]) == 2
    _answer(fake, enumerate_rules.OPERATION, body)
    with pytest.raises(ProtocolError, match="2 rules for at most 1"):
        sub.list_rules(top=1)
    assert len(sub.list_rules(top=1)) == 1
