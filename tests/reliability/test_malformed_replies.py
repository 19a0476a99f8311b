"""Fuzz: the fake answers with malformed replies; each gets ProtocolError, the next succeeds.

Also replies that are well-formed but do not answer their request as the page says,
shaped by hand (proton values, as the reference page lays them out), each breaking one
pairing rule: an expiry per lock token sent, a sequence number per message scheduled,
only the deferred messages asked for, at most the count asked for. The caller pairs
results with its request by position, so each is a ProtocolError too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from proton import Array, Data, Message, int32, symbol, timestamp

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.errors import ProtocolError, ServiceBusManagementError
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

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**31), 2**31 - 1),
                     st.text(max_size=20), st.binary(max_size=64), st.floats(allow_nan=False))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
_bodies = st.one_of(
    _values,
    st.dictionaries(st.sampled_from(["messages", "expirations", "message", "x"]), _values,
                    max_size=3),
    st.fixed_dictionaries({"messages": st.lists(
        st.fixed_dictionaries({"message": st.binary(max_size=200)}), max_size=3)}),
    st.fixed_dictionaries({"expirations": st.lists(st.integers(), max_size=3)}),
    st.binary(min_size=70_000, max_size=70_000),           # absurdly large for the op
)
_status = st.one_of(st.just(int32(200)), st.text(max_size=5), st.none(), st.booleans(),
                    st.floats(allow_nan=False))


@st.composite
def replies(draw: st.DrawFn) -> tuple[Any, Any]:
    """(statusCode value or None for missing, body) of a broken reply proton can encode."""
    status, body = draw(_status), draw(_bodies)
    try:
        Message(properties={"statusCode": status}, body=body).encode()
    except Exception:  # proton refuses some generated values (e.g. mixed-type lists)
        assume(False)
    return status, body


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


def _inject(fake: FakeNamespace, operation: str, status: Any, body: Any) -> None:
    def factory(message_id: Any) -> Message:
        properties = {} if status is None else {"statusCode": status}
        return Message(correlation_id=message_id, properties=properties, body=body)

    fake.faults.malformed_replies(factory, 1, operation=operation)


@pytest.mark.parametrize(("status", "body"), [
    (None, {"messages": []}),                                      # no statusCode
    ("200", {"messages": []}),                                     # statusCode of wrong type
    (int32(200), b"garbage!"),                                     # body not a map
    (int32(200), {"messages": [{"message": b"garbage!"}]}),        # not an AMQP message
    (int32(200), {"messages": [{"message": 7}]}),                  # wrong type in the list
    (int32(200), {"messages": "x" * 70_000}),                      # absurd value
])
def test_known_malformed_peek_replies(fake: FakeNamespace, client: ManagementClient,
                                      status: Any, body: Any) -> None:
    _inject(fake, peek_message.OPERATION, status, body)
    with pytest.raises(ProtocolError):
        client.entity(QUEUE).peek_messages(max_count=1)
    assert [m.body for m in client.entity(QUEUE).peek_messages(max_count=1)] == [b"m"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=replies(), peek=st.booleans())
def test_malformed_reply_is_a_protocol_error_and_the_next_request_works(
        fake: FakeNamespace, client: ManagementClient, reply: tuple[Any, Any],
        peek: bool) -> None:
    status, body = reply
    _inject(fake, peek_message.OPERATION if peek else renew_lock.OPERATION, status, body)
    queue = client.entity(QUEUE)
    try:
        if peek:
            queue.peek_messages(max_count=1)
        else:
            queue.renew_message_locks([uuid.uuid4()])
    except ProtocolError:
        pass
    except ServiceBusManagementError as error:    # only a well-formed failure status
        assert isinstance(status, int) and not isinstance(status, bool) and status != 200, error
    fake.faults.clear()
    assert [m.body for m in queue.peek_messages(max_count=1)] == [b"m"]


# ---- replies that do not answer their request ------------------------------------------

_NOW_MS = 1_900_000_000_000


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
    _inject(fake, operation, int32(200), body)
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
    _inject(fake, enumerate_rules.OPERATION, int32(200), body)
    with pytest.raises(ProtocolError, match="2 rules for at most 1"):
        sub.list_rules(top=1)
    assert len(sub.list_rules(top=1)) == 1
