"""Every message AMQP 1.0 allows, kept whole (issue 43): generated from the grammar
(``tests/_amqp_messages.py``), sent to the fake by the official SDK's
``AmqpAnnotatedMessage`` or, for the AMQP types the SDK cannot express, as raw bytes by
proton; peeked back by the SDK and by sbmgmt, which must agree section for section; and
scheduled by sbmgmt, which must arrive byte-equal in every section the broker does not own.

The SDKs read the wall clock: the namespace runs on real time, and the messages live a day.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusReceiver, ServiceBusSender
from azure.servicebus.amqp import AmqpAnnotatedMessage, AmqpMessageBodyType
from hypothesis import HealthCheck, given, settings
from proton import Array, Delivery, Described, char, decimal32, decimal64, decimal128, symbol, ulong
from proton.utils import BlockingConnection

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.amqp import sections
from sbmgmt.amqp.encode import encode_value
from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.ops import _messages
from tests._amqp_messages import amqp_messages, plain, raw_connection, same, sdk_messages

QUEUE = "q"
WAIT = 5
#: The sections the broker owns: it sets the header's delivery count and its annotations.
BROKER_SECTIONS = frozenset({sections.HEADER, sections.MESSAGE_ANNOTATIONS})
#: The fields of a message a test compares with what was sent (not the broker's).
SENT_FIELDS = [name for name in Message.model_fields if name != "delivery_count"]
EXAMPLES = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


class Peers:
    """The fake, and each client that talks to it: the SDK (a sender and a receiver on
    the queue, open for the whole test: each SDK handler is a connection of its own),
    sbmgmt's, and a raw proton connection; each message sent is peeked by the next
    sequence number."""

    def __init__(self, namespace: FakeNamespace, sender: ServiceBusSender,
                 receiver: ServiceBusReceiver, sbmgmt: ManagementClient,
                 proton: BlockingConnection, wires: dict[int, bytes]) -> None:
        self.namespace, self.sender, self.receiver = namespace, sender, receiver
        self.sbmgmt, self.proton, self.wires = sbmgmt, proton, wires
        self.sent = 0

    def send_sdk(self, message: AmqpAnnotatedMessage) -> int:
        """Send with the SDK; the sequence number the message got."""
        self.sender.send_messages(message)
        return self.last()

    def last(self) -> int:
        """The sequence number of the last message the queue has (the one just sent)."""
        page = self.sbmgmt.entity(QUEUE).peek_messages(self.sent + 1, 250)
        assert page, "nothing was stored"
        self.sent = page[-1].sequence_number or 0
        return self.sent

    def send_raw(self, data: bytes) -> Delivery:
        link = self.proton.create_sender(QUEUE, name=f"sender-{uuid.uuid4()}").link
        delivery = link.delivery(b"tag")
        link.send(data)
        link.advance()
        self.proton.wait(lambda: delivery.settled, msg="no outcome")
        link.close()
        if delivery.remote_state == Delivery.ACCEPTED:
            self.last()
        return delivery

    def peek_sbmgmt(self, sequence_number: int) -> tuple[ReceivedMessage, bytes]:
        """sbmgmt's peek of one message, and the bytes it came as."""
        (message,) = self.sbmgmt.entity(QUEUE).peek_messages(sequence_number, 1)
        assert message.sequence_number == sequence_number
        return message, self.wires[id(message)]

    def peek_sdk(self, sequence_number: int) -> AmqpAnnotatedMessage:
        (message,) = self.receiver.peek_messages(max_message_count=1,
                                                 sequence_number=sequence_number)
        assert message.sequence_number == sequence_number
        return message.raw_amqp_message


@pytest.fixture
def peers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peers]:
    wires: dict[int, bytes] = {}
    decode = _messages._decode_lazily

    def spy(raw: bytes, lock_token: uuid.UUID | None) -> ReceivedMessage:
        message = decode(raw, lock_token)
        wires[id(message)] = raw
        return message

    monkeypatch.setattr(_messages, "_decode_lazily", spy)
    with FakeNamespace(accept_any_token=True) as namespace:
        namespace.add_queue(QUEUE)
        proton = raw_connection(namespace, QUEUE, WAIT)
        try:
            with ServiceBusClient.from_connection_string(
                    namespace.connection_string, retry_total=0) as sdk, \
                    sdk.get_queue_sender(QUEUE) as sender, \
                    sdk.get_queue_receiver(QUEUE, max_wait_time=WAIT) as receiver, \
                    ManagementClient.from_connection_string(
                        namespace.connection_string, timeout=WAIT,
                        retry=RetryPolicy(max_attempts=1)) as sbmgmt:
                yield Peers(namespace, sender, receiver, sbmgmt, proton, wires)
        finally:
            proton.close()


def _spans(raw: bytes) -> dict[int, list[bytes]]:
    """A message's sections' bytes by section code (the body's sections under DATA)."""
    out: dict[int, list[bytes]] = {}
    for code, start, end in sections.section_spans(raw):
        key = sections.DATA if code in sections.BODIES else code
        out.setdefault(key, []).append(raw[start:end])
    return out


def assert_bare_sections_equal(sent: Message, peeked: bytes) -> None:
    """Every section the broker does not own is the bytes sent, in the same order (the
    properties too, unless the broker gave the message its message-id)."""
    ours, theirs = _spans(sent.to_bytes()), _spans(peeked)
    owned = BROKER_SECTIONS | ({sections.PROPERTIES} if sent.message_id is None else set())
    for code in set(ours) | set(theirs):
        if code not in owned:
            assert ours.get(code) == theirs.get(code), f"section 0x{code:x}"


def assert_peeks_as_sent(sent: Message, peeked: ReceivedMessage) -> None:
    """sbmgmt's peek holds every field sent, type for type (a message-id that was absent is
    the broker's to give)."""
    for name in SENT_FIELDS:
        value = getattr(sent, name)
        if name in ("message_id", "correlation_id") and type(value) is int:
            value = ulong(value)  # the model's int id is a ulong on the wire
        if name == "message_id" and value is None:
            continue
        assert same(getattr(peeked, name), value), name


def _sdk_sections(message: AmqpAnnotatedMessage) -> dict[str, Any]:
    header = message.header
    properties = message.properties
    body = list(message.body) if message.body_type is not AmqpMessageBodyType.VALUE else [
        message.body]
    return {
        "body": plain(body),
        "header": plain([header.durable, header.priority, header.time_to_live,
                         header.first_acquirer] if header else [None] * 4),
        "properties": plain([getattr(properties, name) for name in _SDK_PROPERTIES]
                            if properties else [None] * len(_SDK_PROPERTIES)),
        "application_properties": plain(message.application_properties or {}),
        "annotations": plain(message.annotations or {}),
        "delivery_annotations": plain(message.delivery_annotations or {}),
        "footer": plain(message.footer or {}),
    }


_SDK_PROPERTIES = ("message_id", "user_id", "to", "subject", "reply_to", "correlation_id",
                   "content_type", "content_encoding", "absolute_expiry_time",
                   "creation_time", "group_id", "group_sequence", "reply_to_group_id")
_OUR_PROPERTIES = ("message_id", "user_id", "to", "subject", "reply_to", "correlation_id",
                   "content_type", "content_encoding", "absolute_expiry_time",
                   "creation_time", "session_id", "group_sequence", "reply_to_session_id")


def _our_sections(message: ReceivedMessage) -> dict[str, Any]:
    return {
        "body": plain(message.body_sections()),
        "header": plain([message.durable, message.priority, message.time_to_live,
                         message.first_acquirer]),
        "properties": plain([getattr(message, name) for name in _OUR_PROPERTIES]),
        "application_properties": plain(message.application_properties),
        "annotations": plain(message.raw_annotations),
        "delivery_annotations": plain(message.delivery_annotations),
        "footer": plain(message.footer),
    }


def assert_sdk_agrees(sdk: AmqpAnnotatedMessage, ours: ReceivedMessage) -> None:
    """The SDK's peek and sbmgmt's hold the same sections (as the SDK's decoder gives
    them: text as bytes, numbers untyped)."""
    theirs, mine = _sdk_sections(sdk), _our_sections(ours)
    if mine["body"] == []:  # no body section: the SDK shows it as a null amqp-value
        mine["body"] = [None]
    for name in theirs:
        assert theirs[name] == mine[name], name


# --- the property tests -------------------------------------------------------------------

@EXAMPLES
@given(kwargs=sdk_messages())
def test_sdk_sent_messages_peek_alike_by_the_sdk_and_by_sbmgmt(
        peers: Peers, kwargs: dict[str, Any]) -> None:
    number = peers.send_sdk(AmqpAnnotatedMessage(**kwargs))
    ours, _ = peers.peek_sbmgmt(number)
    assert_sdk_agrees(peers.peek_sdk(number), ours)
    # the body and the application properties are what was given, section for section
    if "data_body" in kwargs:
        assert ours.body_type == "data" and ours.body_sections() == kwargs["data_body"]
    elif "sequence_body" in kwargs:
        assert ours.body_type == "sequence"
        assert plain(ours.body_sections()) == plain(kwargs["sequence_body"])
    elif not kwargs["value_body"]:
        # the SDK sends no body section for a value that is false in Python (None, 0, "",
        # [], {}, False: AMQP 1.0 wants one); no section is kept
        assert ours.body_type == "data" and ours.body_sections() == []
    else:
        assert ours.body_type == "value" and plain(ours.body) == plain(kwargs["value_body"])
    assert plain(ours.message_id) == plain(kwargs["properties"]["message_id"])
    assert (plain(ours.application_properties)
            == plain(kwargs.get("application_properties") or {}))


@EXAMPLES
@given(message=amqp_messages())
def test_any_message_sent_by_proton_is_kept_whole(peers: Peers, message: Message) -> None:
    """Bytes the SDK cannot express (char, decimals, arrays, described values, typed
    numbers, several sections) sent by proton: the peek holds every field type for type
    and every section the broker does not own as the very bytes sent; the SDK's peek agrees
    where its decoder can read the message."""
    assert peers.send_raw(message.to_bytes()).remote_state == Delivery.ACCEPTED
    ours, wire = peers.peek_sbmgmt(peers.sent)
    assert_peeks_as_sent(message, ours)
    assert_bare_sections_equal(message, wire)
    if _sdk_readable(message):
        assert_sdk_agrees(peers.peek_sdk(peers.sent), ours)


@EXAMPLES
@given(message=amqp_messages(message_id=True))
def test_a_message_scheduled_by_sbmgmt_arrives_byte_equal(
        peers: Peers, message: Message) -> None:
    later = datetime.now(timezone.utc) + timedelta(days=1)
    (number,) = peers.sbmgmt.entity(QUEUE).schedule_messages([message], later)
    peers.sent += 1
    assert number == peers.sent
    ours, wire = peers.peek_sbmgmt(number)
    assert_peeks_as_sent(message.model_copy(update={"scheduled_enqueue_time": later.replace(
        microsecond=later.microsecond // 1000 * 1000)}), ours)
    assert_bare_sections_equal(message, wire)
    if _sdk_readable(message):
        assert_sdk_agrees(peers.peek_sdk(number), ours)


def _sdk_readable(message: Message) -> bool:
    """Whether the SDK's decoder reads the message as it was sent: it has no reader for
    char and the decimals, fails on an empty array inside a list, and reads a described
    value its own way."""
    return not any(_unreadable(value) for value in (
        message.body, message.application_properties, message.annotations,
        message.delivery_annotations, message.footer))


def _unreadable(value: Any) -> bool:
    if isinstance(value, (char, decimal32, decimal64, decimal128, Described, Array)):
        return True
    if isinstance(value, dict):
        return any(_unreadable(k) or _unreadable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_unreadable(item) for item in value)
    return False


# --- the two defects of the issue ---------------------------------------------------------

def test_two_amqp_sequence_sections_are_both_kept(peers: Peers) -> None:
    """``sequence_body=[[1, "a"], [2, "b"]]`` is two amqp-sequence sections on the wire:
    the fake kept only the last."""
    number = peers.send_sdk(AmqpAnnotatedMessage(sequence_body=[[1, "a"], [2, "b"]]))
    ours, wire = peers.peek_sbmgmt(number)
    assert [code for code, _, _ in sections.section_spans(wire)
            if code in sections.BODIES] == [sections.AMQP_SEQUENCE] * 2
    assert ours.body_type == "sequence" and ours.body == ([1, "a"], [2, "b"])
    assert ours.body_sections() == [[1, "a"], [2, "b"]]
    assert list(peers.peek_sdk(number).body) == [[1, b"a"], [2, b"b"]]


@pytest.mark.parametrize("message_id", [b"\x00\xffbinary", 2**64 - 1,
                                        uuid.UUID("2f1c1e0e-77b5-4b0a-9d7c-3a2b1c0d9e8f"),
                                        "text"],
                         ids=["binary", "ulong", "uuid", "string"])
def test_each_of_the_four_message_id_types_is_accepted_and_kept(
        peers: Peers, message_id: Any) -> None:
    """A binary message-id was refused (``amqp:decode-error``: "message-id is binary"),
    losing the message; each of the four types is accepted and peeks as it was sent, by
    sbmgmt and by the SDK, and so is a correlation-id."""
    number = peers.send_sdk(AmqpAnnotatedMessage(
        data_body=b"body", properties={"message_id": message_id,
                                       "correlation_id": message_id}))
    ours, _ = peers.peek_sbmgmt(number)
    expected = ulong(message_id) if type(message_id) is int else message_id
    assert same(ours.message_id, expected) and same(ours.correlation_id, expected)
    sdk = peers.peek_sdk(number).properties
    assert sdk is not None
    assert plain(sdk.message_id) == plain(message_id) == plain(sdk.correlation_id)


@pytest.mark.parametrize("message_id", [1.5, -1, symbol("not-string"), Described(symbol("d"), 1)],
                         ids=["double", "long", "symbol", "described"])
def test_a_message_id_of_another_type(peers: Peers, message_id: Any) -> None:
    """The service refuses a message-id that is none of the four types (a double: "DecodeError:
    System.Double", docs/fake.md) with amqp:decode-error, and so does the fake; a symbol,
    text all the same, is kept as it came."""
    raw = Message(body=b"x").to_bytes()
    properties = sections.prefix(sections.PROPERTIES) + _properties_with_id(message_id)
    delivery = peers.send_raw(properties + raw)
    if type(message_id) is symbol:
        assert delivery.remote_state == Delivery.ACCEPTED
        ours, _ = peers.peek_sbmgmt(peers.sent)
        assert same(ours.message_id, message_id)
        return
    assert delivery.remote_state == Delivery.REJECTED
    assert delivery.remote.condition.name == "amqp:decode-error"
    assert "message-id is" in delivery.remote.condition.description
    assert peers.namespace.accounting(QUEUE)["active"] == 0


def _properties_with_id(message_id: Any) -> bytes:
    return encode_value([message_id])
