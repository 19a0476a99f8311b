"""Messages the official azure-servicebus SDK sends to the fake, peeked and received by
sequence number back off the wire by sbmgmt's client: every lazily decoded message reads,
field by field in any order and from several threads, and behaves as the eager decoding
of the very bytes it came from; the SDK reads the same messages alike."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.message import ReceivedMessage
from sbmgmt.ops import _messages
from tests._lazy_checks import (
    BEHAVIOURS,
    NAMES,
    assert_behaves_as,
    assert_reads_as,
    outcome,
    read_from_threads,
    snapshot,
)
from tests._peers import missing_peer

WAIT = 2
LATER = datetime(2040, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def sdk() -> ModuleType:
    try:
        import azure.servicebus as servicebus
        import azure.servicebus.amqp  # noqa: F401  (AmqpAnnotatedMessage, below)
    except ImportError:
        missing_peer("azure-servicebus is not installed: pip install -e '.[test]'")
    return servicebus


@pytest.fixture
def client(fake_namespace: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(
            fake_namespace.connection_string, timeout=10,
            retry=RetryPolicy(max_attempts=1)) as management:
        yield management


@pytest.fixture
def wires(monkeypatch: pytest.MonkeyPatch) -> dict[int, tuple[bytes, uuid.UUID | None]]:
    """The wire bytes and lock token of every message the client decodes, by id of the
    message it made of them."""
    seen: dict[int, tuple[bytes, uuid.UUID | None]] = {}
    decode = _messages._decode_lazily

    def spy(raw: bytes, lock_token: uuid.UUID | None) -> ReceivedMessage:
        message = decode(raw, lock_token)
        seen[id(message)] = (raw, lock_token)
        return message

    monkeypatch.setattr(_messages, "_decode_lazily", spy)
    return seen


def _send_everything(sdk: ModuleType, fake_namespace: FakeNamespace) -> int:
    """Send the SDK's kinds of message to ``queue``; how many."""
    amqp = sdk.amqp
    properties: dict[str, Any] = {"int": 7, "negative": -2**31, "float": 1.5, "bool": True,
                                  "str": "välue", "bytes": b"\x00\x01", "none": None,
                                  "DeadLetterReason": "why"}
    messages = [
        sdk.ServiceBusMessage(b"bytes body", message_id="m-1", correlation_id="c-1",
                              subject="subject", content_type="application/octet-stream",
                              to="somewhere", reply_to="back", time_to_live=timedelta(minutes=5),
                              application_properties=properties, partition_key="pk"),
        sdk.ServiceBusMessage("text bödy", message_id=str(uuid.uuid4())),
        sdk.ServiceBusMessage(b"x" * 10_000, message_id="large"),
        amqp.AmqpAnnotatedMessage(
            data_body=[b"first", b"second"], header={"priority": 7, "durable": True},
            footer={"f": "footer"}, delivery_annotations={"d": 1},
            annotations={"user-annotation": "a"}, application_properties={"k": "v"},
            properties={"message_id": "amqp-1", "content_encoding": "identity",
                        "group_sequence": 3, "user_id": b"user"}),
        amqp.AmqpAnnotatedMessage(value_body={"a": [1, "two"], "b": None},
                                  properties={"message_id": "value"}),
        amqp.AmqpAnnotatedMessage(sequence_body=[[1, "x"], [2, "y"]],
                                  properties={"message_id": "sequence"}),
    ]
    with sdk.ServiceBusClient.from_connection_string(
            fake_namespace.connection_string, retry_total=0) as sb_client, \
            sb_client.get_queue_sender("queue") as sender:
        sender.send_messages(messages)
        sender.schedule_messages(sdk.ServiceBusMessage(b"scheduled", message_id="s-1"), LATER)
    return len(messages) + 1


def _check(messages: list[ReceivedMessage],
           wires: dict[int, tuple[bytes, uuid.UUID | None]],
           check: Callable[[ReceivedMessage, ReceivedMessage, random.Random], None]) -> None:
    assert messages
    for index, lazy in enumerate(messages):
        assert type(lazy) is ReceivedMessage
        raw, token = wires[id(lazy)]
        check(lazy, ReceivedMessage.from_bytes(raw, lock_token=token), random.Random(index))


def _fields(lazy: ReceivedMessage, eager: ReceivedMessage, rng: random.Random) -> None:
    assert_reads_as(lazy, eager, rng.sample(NAMES, len(NAMES)))
    assert snapshot(lazy) == snapshot(eager)


def _behaviours(lazy: ReceivedMessage, eager: ReceivedMessage, rng: random.Random) -> None:
    order = rng.sample(NAMES, len(NAMES))
    assert_reads_as(lazy, eager, order[:rng.randrange(len(NAMES))])
    assert_behaves_as(lazy, eager, rng.sample(list(BEHAVIOURS), len(BEHAVIOURS)))


def _threads(lazy: ReceivedMessage, eager: ReceivedMessage, rng: random.Random) -> None:
    orders = [rng.sample(NAMES, len(NAMES)) for _ in range(4)]
    behaviours = rng.sample(list(BEHAVIOURS), 3)
    seen = read_from_threads(lazy, orders, behaviours)
    for values in seen:
        for name in NAMES:
            assert values[name] is seen[0][name], name
        for name in behaviours:
            assert values[f"behaviour:{name}"] == outcome(name, eager), name
    assert_reads_as(lazy, eager, NAMES)


@pytest.mark.parametrize("check", [_fields, _behaviours, _threads])
def test_peeked_sdk_messages_read_as_decoded_at_once(
        sdk: ModuleType, fake_namespace: FakeNamespace, client: ManagementClient,
        wires: dict[int, tuple[bytes, uuid.UUID | None]],
        check: Callable[[ReceivedMessage, ReceivedMessage, random.Random], None]) -> None:
    sent = _send_everything(sdk, fake_namespace)
    peeked = client.entity("queue").peek_messages(max_count=50)
    assert len(peeked) == sent
    _check(peeked, wires, check)


def test_peeked_messages_are_what_the_sdk_peeks(
        sdk: ModuleType, fake_namespace: FakeNamespace, client: ManagementClient) -> None:
    sent = _send_everything(sdk, fake_namespace)
    ours = client.entity("queue").peek_messages(max_count=50)
    with sdk.ServiceBusClient.from_connection_string(
            fake_namespace.connection_string, retry_total=0) as sb_client, \
            sb_client.get_queue_receiver("queue") as receiver:
        theirs = receiver.peek_messages(max_message_count=50)
    assert len(ours) == len(theirs) == sent
    for message, sdk_message in zip(ours, theirs, strict=True):
        assert message.sequence_number == sdk_message.sequence_number
        assert message.message_id == sdk_message.message_id
        assert message.subject == sdk_message.subject
        assert message.content_type == sdk_message.content_type
        assert message.scheduled_enqueue_time == sdk_message.scheduled_enqueue_time_utc
        if message.body_type == "data":
            assert message.body_bytes() == b"".join(sdk_message.body)
        # The SDK gives AMQP strings as bytes, keys and values (its bytes went as strings).
        assert message.application_properties == {
            _text(k): _text(v) for k, v in (sdk_message.application_properties or {}).items()}


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def test_deferred_sdk_messages_received_by_sequence_number_read_as_decoded_at_once(
        sdk: ModuleType, fake_namespace: FakeNamespace, client: ManagementClient,
        wires: dict[int, tuple[bytes, uuid.UUID | None]]) -> None:
    _send_everything(sdk, fake_namespace)
    with sdk.ServiceBusClient.from_connection_string(
            fake_namespace.connection_string, retry_total=0) as sb_client, \
            sb_client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        numbers = []
        for message in receiver.receive_messages(max_message_count=50, max_wait_time=WAIT):
            receiver.defer_message(message)
            numbers.append(message.sequence_number)
    received = client.entity("queue").receive_deferred_messages(numbers)
    assert sorted(m.sequence_number or 0 for m in received) == sorted(numbers)
    assert all(m.lock_token is not None for m in received)
    _check(received, wires, _behaviours)


def test_a_session_peek_reads_the_session_of_each_message(
        sdk: ModuleType, fake_namespace: FakeNamespace, client: ManagementClient,
        wires: dict[int, tuple[bytes, uuid.UUID | None]]) -> None:
    """The reply's check reads each message's session id: the properties are decoded
    then, the rest when read."""
    with sdk.ServiceBusClient.from_connection_string(
            fake_namespace.connection_string, retry_total=0) as sb_client, \
            sb_client.get_queue_sender("session-queue") as sender:
        sender.send_messages([sdk.ServiceBusMessage(f"in {session}", session_id=session,
                                                    application_properties={"n": n})
                              for n, session in enumerate(["a", "b", "a"])])
    peeked = client.entity("session-queue").peek_messages(max_count=10, session_id="a")
    assert [m.session_id for m in peeked] == ["a", "a"]
    _check(peeked, wires, _fields)
