"""The export format (sbmgmt.actions.export): every body kind and property type written,
checked against its JSON Schema, read back equal field for field to the peeked messages,
sent into a second namespace where it peeks identical; readable by jq; bad lines refused
with their number."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import jsonschema
import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from hypothesis import HealthCheck, given, settings
from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Delivery,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.export import (
    ULONG_KEY,
    export_entity,
    export_schema,
    message_from_json,
    message_to_json,
    read_messages,
    write_messages,
)
from sbmgmt.amqp import sections
from sbmgmt.errors import ExportFormatError
from sbmgmt.message import Message, ReceivedMessage
from tests._amqp_messages import amqp_messages, raw_connection, same

QUEUE = "q"
#: What the broker owns of a peeked message: not in a message read back to send.
BROKER_FIELDS = frozenset({"delivery_count", "sequence_number", "enqueued_time",
                           "locked_until", "lock_token", "state", "dead_letter_source"})
SENT_FIELDS = [name for name in Message.model_fields if name not in BROKER_FIELDS]
LATER = datetime(2040, 1, 1, tzinfo=timezone.utc)

#: One value of every AMQP type, and compounds of them.
EVERY_TYPE: dict[str, Any] = {
    "null": None, "boolean": True, "ubyte": ubyte(255), "ushort": ushort(65535),
    "uint": uint(2**32 - 1), "ulong": ulong(2**64 - 1), "byte": byte(-128),
    "short": short(-32768), "int": int32(-2**31), "long": -2**63, "float": float32(1.5),
    "double": -2.25, "infinity": float("inf"), "decimal32": decimal32(7),
    "decimal64": decimal64(2**64 - 1), "decimal128": decimal128(bytes(range(16))),
    "char": char("\u00e9"), "timestamp": timestamp(-1), "uuid": uuid.UUID(int=7),
    "binary": b"\x00\xff", "string": "t\u00e9xt", "symbol": symbol("sym"),
    "list": [int32(1), ["nested", {"k": ubyte(1)}]],
    "map": {symbol("s"): [], ulong(3): {"deep": Described(symbol("d"), b"v")}},
    "array": Array(UNDESCRIBED, Data.UUID, uuid.UUID(int=1), uuid.UUID(int=2)),
    "empty-array": Array(UNDESCRIBED, Data.LONG),
    "described": Described(ulong(0x1234), [symbol("x")]),
}


def every_kind() -> list[Message]:
    """A message of each body kind, with every property, header field and section."""
    common: dict[str, Any] = dict(
        session_id="session", subject="subject", content_type="application/json",
        content_encoding="gzip", to="to", reply_to="reply", reply_to_session_id="rg",
        user_id=b"user", partition_key="pk", time_to_live=timedelta(days=2),
        absolute_expiry_time=datetime(2038, 1, 19, 3, 14, 7, 123000, tzinfo=timezone.utc),
        creation_time=datetime(2001, 2, 3, 4, 5, 6, 789000, tzinfo=timezone.utc),
        group_sequence=2**32 - 1, durable=True, priority=9, first_acquirer=False,
        application_properties=EVERY_TYPE, annotations={"x-every": EVERY_TYPE["map"]},
        delivery_annotations={"x-delivery": symbol("d")}, footer={"x-footer": b"f"},
    )
    ids: list[Any] = ["text", 2**64 - 1, uuid.UUID(int=9), b"\x00binary"]
    bodies: list[dict[str, Any]] = [
        {"body": b"one data section"},
        {"body": [b"first", b"", b"third"]},
        {"body": []},  # no body section at all
        {"body": list(EVERY_TYPE.values()), "body_type": "sequence"},
        {"body": ([1, "a"], [2, "b"], []), "body_type": "sequence"},
        {"body": EVERY_TYPE, "body_type": "value"},
        {"body": None, "body_type": "value"},
    ]
    return [Message(**common, **body, message_id=ids[index % 4],
                    correlation_id=ids[(index + 1) % 4])
            for index, body in enumerate(bodies)]


def assert_same_fields(read: Message, peeked: ReceivedMessage) -> None:
    for name in SENT_FIELDS:
        assert same(getattr(read, name), getattr(peeked, name)), name


@pytest.fixture
def namespaces() -> Iterator[tuple[FakeNamespace, FakeNamespace]]:
    with FakeNamespace(accept_any_token=True) as first, \
            FakeNamespace(accept_any_token=True) as second:
        for namespace in (first, second):
            namespace.add_queue(QUEUE)
        yield first, second


def _peek_all(namespace: FakeNamespace) -> list[ReceivedMessage]:
    with ManagementClient.from_connection_string(namespace.connection_string,
                                                 timeout=10) as client:
        return list(client.entity(QUEUE).peek_all())


def _export(namespace: FakeNamespace) -> str:
    out = io.StringIO()
    with ManagementClient.from_connection_string(namespace.connection_string,
                                                 timeout=10) as client:
        report = export_entity(client.entity(QUEUE), out)
    assert report.exported == out.getvalue().count("\n")
    return out.getvalue()


def _send_raw(namespace: FakeNamespace, messages: list[Message]) -> None:
    """Send each message's bytes with proton, as any AMQP sender would."""
    connection = raw_connection(namespace, QUEUE, 10)
    try:
        link = connection.create_sender(QUEUE, name="sender").link
        for index, message in enumerate(messages):
            delivery = link.delivery(str(index).encode())
            link.send(message.to_bytes())
            link.advance()
            connection.wait(lambda d=delivery: d.settled, msg="no outcome")
            assert delivery.remote_state == Delivery.ACCEPTED
    finally:
        connection.close()


def test_an_export_of_every_body_kind_and_type_reads_back_as_peeked(
        namespaces: tuple[FakeNamespace, FakeNamespace]) -> None:
    first, _ = namespaces
    _send_raw(first, every_kind())
    text = _export(first)
    schema = export_schema()
    for line in text.splitlines():
        jsonschema.validate(json.loads(line), schema)
    peeked = _peek_all(first)
    read = list(read_messages(io.StringIO(text)))
    assert len(read) == len(peeked) == len(every_kind())
    for message, original in zip(read, peeked, strict=True):
        assert type(message) is Message
        assert_same_fields(message, original)


def test_an_export_sent_into_a_second_namespace_peeks_identical(
        namespaces: tuple[FakeNamespace, FakeNamespace]) -> None:
    """What an import does (issue 37's ``sbmgmt import`` sends these same messages): the
    messages read back, sent to another namespace, peek there field for field as they
    peeked where they were exported from, and every section the broker does not own is
    the same bytes."""
    first, second = namespaces
    _send_raw(first, every_kind())
    _send_raw(second, list(read_messages(io.StringIO(_export(first)))))
    for copy, original in zip(_peek_all(second), _peek_all(first), strict=True):
        assert_same_fields(copy, original)
        assert _bare(copy.to_bytes()) == _bare(original.to_bytes())


def _bare(raw: bytes) -> list[bytes]:
    return [raw[start:end] for code, start, end in sections.section_spans(raw)
            if code not in (sections.HEADER, sections.MESSAGE_ANNOTATIONS)]


def test_dead_letters_export_with_their_reason_and_source(
        namespaces: tuple[FakeNamespace, FakeNamespace]) -> None:
    first, _ = namespaces
    with ServiceBusClient.from_connection_string(first.connection_string,
                                                 retry_total=0) as sdk:
        with sdk.get_queue_sender(QUEUE) as sender:
            sender.send_messages(ServiceBusMessage(b"poison", message_id="m-1"))
        with sdk.get_queue_receiver(QUEUE, max_wait_time=5) as receiver:
            (held,) = receiver.receive_messages(max_wait_time=5)
            receiver.dead_letter_message(held, reason="Bad", error_description="really")
    out = io.StringIO()
    with ManagementClient.from_connection_string(first.connection_string,
                                                 timeout=10) as client:
        report = export_entity(client.entity(QUEUE + "/$DeadLetterQueue"), out)
    assert (report.exported, report.first_sequence_number) == (1, 1)
    (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
    assert line["broker"]["dead_letter_source"] == QUEUE
    assert line["application_properties"] == {"DeadLetterReason": "Bad",
                                              "DeadLetterErrorDescription": "really"}
    (read,) = read_messages(io.StringIO(out.getvalue()))
    assert read.application_properties["DeadLetterReason"] == "Bad"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=amqp_messages())
def test_any_message_reads_back_type_for_type(message: Message) -> None:
    """Through JSON text and back: every field, type for type; the bytes of every section
    the same."""
    line = json.dumps(message_to_json(message))
    jsonschema.validate(json.loads(line), export_schema())
    read = message_from_json(json.loads(line))
    for name in Message.model_fields:
        expected = getattr(message, name)
        if name in ("message_id", "correlation_id") and type(expected) is int:
            expected = ulong(expected)
        assert same(getattr(read, name), expected), name
    assert read.to_bytes() == message.to_bytes()


def test_a_ulong_annotation_key_is_written_apart_from_the_symbols() -> None:
    message = Message(body=b"x").model_copy(update={"annotations": {ulong(5): "u", "x-s": 1}})
    line = message_to_json(message)
    assert line["message_annotations"] == {f"{ULONG_KEY}5": "u", "x-s": {"long": 1}}
    assert same(message_from_json(line).annotations, {ulong(5): "u", "x-s": 1})


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_reads_the_lines() -> None:
    out = io.StringIO()
    write_messages(every_kind()[:2], out)
    found = subprocess.run(
        ["jq", "-c", "[.properties.subject, .application_properties.ubyte.ubyte, "
                     "(.body.data | length)]"],
        input=out.getvalue(), capture_output=True, text=True, check=True).stdout
    assert found.splitlines() == ['["subject",255,1]', '["subject",255,3]']


@pytest.mark.parametrize(("line", "complaint"), [
    ("not json", "line 2: not JSON"),
    ('{"version": 2, "body": {"data": []}}', "line 2: version 2"),
    ('{"version": 1}', "line 2: body"),
    ('{"version": 1, "body": {"value": {"int8": 1}}}', "unknown type 'int8'"),
    ('{"version": 1, "body": {"value": {"ubyte": 300}}}', "line 2"),
    ('{"version": 1, "body": {"data": ["not base64!"]}}', "not base64"),
    ('{"version": 1, "properties": {"priority": 1}, "body": {"data": []}}',
     "unknown field 'priority'"),
    ('{"version": 1, "header": {"priority": 256}, "body": {"data": []}}', "line 2"),
    ('{"version": 1, "properties": {"message_id": {"long": 1}}, "body": {"data": []}}',
     "line 2"),
])
def test_a_bad_line_is_refused_with_its_number(line: str, complaint: str) -> None:
    good = json.dumps(message_to_json(Message(body=b"fine")))
    messages = read_messages(io.StringIO(f"{good}\n{line}\n"))
    assert next(messages).body == b"fine"
    with pytest.raises(ExportFormatError, match=complaint) as caught:
        next(messages)
    assert caught.value.line == 2
