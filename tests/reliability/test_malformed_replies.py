"""Fuzz: the fake answers with malformed replies; each gets ProtocolError, the next succeeds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from proton import Message, int32

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._retry import RetryPolicy
from sbmgmt.errors import ProtocolError, ServiceBusManagementError
from sbmgmt.message import Message as SbMessage
from sbmgmt.ops import peek_message, renew_lock

from ._cases import QUEUE, new_namespace

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
