"""The fake's fast paths produce exactly what the proton-based paths they replace produce."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from proton import UNDESCRIBED, Array, Data, Message, int32, symbol, timestamp, uint, ulong

from fakes import _management
from fakes._entity import Entity
from fakes._entity_state import EntitySettings, State, StoredMessage
from fakes._management import Reply
from sbmgmt import ops
from sbmgmt.amqp import envelope
from sbmgmt.amqp.encode import encode_amqp_value
from sbmgmt.amqp.sections import (
    DATA,
    FOOTER,
    HEADER,
    MESSAGE_ANNOTATIONS,
    PROPERTIES,
    section_spans,
)
from sbmgmt.amqp.values import ms_from_datetime, timestamp_array
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message as SbMessage
from sbmgmt.message import MessageState, ReceivedMessage, encode_sections
from sbmgmt.ops import peek_message, receive_by_sequence_number, renew_lock
from sbmgmt.ops._messages import encoded_message_list
from tests._wire import build_reply, owned

_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")

_BODIES: list[Any] = [
    None,
    {"expirations": timestamp_array([datetime(2024, 5, 1, tzinfo=timezone.utc)] * 2)},
    {"messages": [{"message": b"\x00Sw\xa1\x01x"}, {"message": b"\x00Sw\xa1\x01y"}]},
    {"sequence-numbers": [1, 2, 3], "session-id": "s", "flag": True},
    [symbol("a"), uint(7), ulong(8), timestamp(5)],
    "text",
]


@pytest.mark.parametrize("status", [200, 204, 400, 503])
@pytest.mark.parametrize("body", _BODIES)
@pytest.mark.parametrize("correlation_id", [_ID, "not-a-uuid", ulong(42), b"\x01\x02"])
def test_reply_encoding_is_build_reply_encoding(status: int, body: Any,
                                                correlation_id: Any) -> None:
    reply = Reply(correlation_id, status, body)
    expected = bytes(build_reply(correlation_id, status, body).encode())
    assert reply.encode() == expected


def test_error_reply_encoding_is_build_reply_encoding() -> None:
    reply = Reply(_ID, 410, description="lock lost", error_condition="com.microsoft:x")
    expected = build_reply(_ID, 410, description="lock lost",
                           error_condition="com.microsoft:x")
    assert reply.encode() == bytes(expected.encode())


def _request(message_id: Any) -> bytes:
    request = renew_lock.Request(lock_tokens=(uuid.uuid4(), uuid.uuid4()))
    return ops.encode_request(request, message_id=message_id, reply_to="reply-link",
                                   server_timeout_ms=5000,
                                   associated_link_name="receiver").payload


@pytest.mark.parametrize("message_id", [_ID, "id-1", ulong(9), b"\x07"])
def test_request_decoding_matches_proton(message_id: Any) -> None:
    data = _request(message_id=message_id)
    expected = Message()
    expected.decode(data)
    decoded = envelope.parse_request(data)
    assert decoded.message_id == expected.id
    # proton hands out a ulong id as int and a binary one as a memoryview (which it cannot
    # encode again as a correlation-id); the reply echoes each id as it came.
    assert Reply(decoded.message_id, 200).encode() == bytes(
        build_reply(owned(expected.id), 200).encode())
    assert decoded.reply_to == expected.reply_to
    assert decoded.application_properties == expected.properties
    assert decoded.body == expected.body
    assert envelope.request_operation(decoded) == expected.properties["operation"]


def test_request_without_sections_it_needs_decodes_to_none() -> None:
    data = bytes(Message(body={"k": int32(1)}).encode())
    decoded = envelope.parse_request(data)
    assert (decoded.message_id, decoded.reply_to, decoded.application_properties,
            decoded.operation) == (None, None, None, None)
    with pytest.raises(ProtocolError, match="no application-properties"):
        envelope.request_operation(decoded)
    assert decoded.body == {"k": 1}


def test_malformed_request_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        envelope.parse_request(b"\x00Sw\xa1\x05ab")


def _stored() -> StoredMessage:
    content = ReceivedMessage(body=b"payload", message_id="m", sequence_number=3,
                              enqueued_time=datetime(2024, 1, 1, tzinfo=timezone.utc))
    return StoredMessage(content, State.ACTIVE)


def test_wire_bytes_follow_every_change_of_the_rendering() -> None:
    stored = _stored()
    assert stored.wire() == stored.render().to_bytes()
    stored.delivery_count = 2
    stored.locked_until = 1_700_000_000.0
    stored.lock_token = uuid.uuid4()
    assert stored.wire() == stored.render().to_bytes()
    stored.deferred = True
    stored.state = State.DEFERRED
    assert ReceivedMessage.from_bytes(stored.wire()).state is MessageState.DEFERRED
    stored.content = stored.content.model_copy(update={"application_properties": {"k": 1}})
    assert stored.wire() == stored.render().to_bytes()
    assert ReceivedMessage.from_bytes(stored.wire()).application_properties == {"k": 1}


def test_wire_response_is_the_encode_response_of_the_same_messages() -> None:
    stored = _stored()
    rendered = stored.render().model_copy(update={"lock_token": None})
    assert peek_message.encode_wire_response([stored.wire()]) == peek_message.encode_response(
        peek_message.Response(messages=(rendered,)))
    assert peek_message.encode_wire_response([]) == (204, None)


def test_message_list_keeps_lock_tokens() -> None:
    token = uuid.uuid4()
    message = _stored().render().model_copy(update={"lock_token": token})
    status, body = receive_by_sequence_number.encode_response(
        receive_by_sequence_number.Response(messages=(message,)))
    assert status == 200
    assert body["messages"] == [{"message": message.to_bytes(), "lock-token": token}]


@pytest.mark.parametrize("seconds", [1_700_000_000.0, 1_700_000_000.0005, 1_700_000_000.0004999,
                                     1_712_345_678.9995, 1_712_345_678.123456789,
                                     1_700_000_000.9999996])
def test_expiry_milliseconds_are_those_of_the_datetime(seconds: float) -> None:
    expected = ms_from_datetime(datetime.fromtimestamp(seconds, tz=timezone.utc))
    assert _management._ms(seconds) == expected


def test_renew_lock_body_is_the_encode_response_of_the_same_expiries() -> None:
    entity = Entity("q", EntitySettings(lock_duration=30.0))
    for index in range(3):
        entity.accept(SbMessage(body=b"x", message_id=str(index)), 1_700_000_000.25)
    now = 1_700_000_000.5
    tokens = []
    while (stored := entity.take(now, None, peek_lock=True)) is not None:
        assert stored.lock_token is not None
        tokens.append(stored.lock_token)
    request = renew_lock.Request(lock_tokens=tuple(tokens))
    status, body = _management._ENCODING_HANDLERS[renew_lock.OPERATION](entity, request, now)
    expected = renew_lock.encode_response(renew_lock.Response(expirations=tuple(
        datetime.fromtimestamp(now + 30.0, tz=timezone.utc) for _ in tokens)))
    assert (status, body.value()) == expected
    assert body.section == encode_amqp_value(expected[1])
    assert Reply(_ID, status, body).encode() == bytes(
        build_reply(_ID, *expected).encode())


@pytest.mark.parametrize("milliseconds", [[], [0], [1_700_000_000_123, 2**62, 5]])
def test_expirations_body_is_the_encoding_of_the_timestamp_array(milliseconds: list[int]) -> None:
    value = {"expirations": Array(UNDESCRIBED, Data.TIMESTAMP,
                                  *(timestamp(ms) for ms in milliseconds))}
    body = _management.expirations_body(milliseconds)
    assert body.section == encode_amqp_value(value)
    assert body.value() == value


@pytest.mark.parametrize("sizes", [[5], [255, 256], [3, 70_000, 1024]])
def test_message_list_body_is_the_encoding_of_the_message_list(sizes: list[int]) -> None:
    wires = [bytes([index % 251]) * size for index, size in enumerate(sizes)]
    value = {"messages": encoded_message_list(wires)}
    body = _management.message_list_body(wires)
    assert body.section == encode_amqp_value(value)
    assert body.value() == value
    reply = Reply(_ID, 200, body)
    assert reply.encode() == bytes(build_reply(_ID, 200, value).encode())
    assert envelope.reply_parts(reply.encode())[2] == value
    other_id = Reply("not-a-uuid", 200, body)
    assert other_id.encode() == bytes(build_reply("not-a-uuid", 200, value).encode())


def test_peek_body_is_encode_wire_response_encoded() -> None:
    entity = Entity("q", EntitySettings())
    for index in range(3):
        entity.accept(SbMessage(body=b"x" * 300 * index, message_id=str(index)), 1_700_000_000.0)
    handler = _management._ENCODING_HANDLERS[peek_message.OPERATION]
    status, body = handler(entity, peek_message.Request(from_sequence_number=2, message_count=5),
                           1_700_000_001.0)
    expected = peek_message.encode_wire_response([m.wire() for m in entity.peek(2, 5)])
    assert (status, body.value()) == expected
    empty = peek_message.Request(from_sequence_number=9, message_count=5)
    assert handler(entity, empty, 1_700_000_001.0) == (204, None)


def test_wire_writes_the_bare_message_as_it_was_sent_and_the_rest_anew() -> None:
    """A stored message decoded from what a sender sent (proton's encoding choices, every
    section): each rendering writes the header and the annotations anew, and the bare
    message (properties on: AMQP 1.0 part 3 §3.2) as the bytes that came."""
    sent = Message(body=b"payload", id="m", subject="s", durable=True, priority=7,
                   properties={"k": 1}, annotations={symbol("user-a"): "b"},
                   instructions={symbol("x-opt-da"): 1})
    raw = bytes(sent.encode())
    entity = Entity("q", EntitySettings())
    entity.accept(SbMessage.from_bytes(raw), now=1_700_000_000.0)
    (stored,) = entity._messages.values()
    peeked = stored.wire()
    assert ReceivedMessage.from_bytes(peeked) == stored.render()
    bare = next(start for code, start, _ in section_spans(raw) if code >= PROPERTIES)
    assert peeked.endswith(raw[bare:])
    stored.delivery_count, stored.locked_until = 1, 1_700_000_060.0
    delivered = stored.wire()
    assert delivered.endswith(raw[bare:]) and delivered != peeked
    again = ReceivedMessage.from_bytes(delivered)
    assert (again.delivery_count, again.locked_until, again.priority, again.durable) == (
        1, stored.render().locked_until, 7, True)
    assert again.delivery_annotations == {"x-opt-da": 1}
    assert again.annotations == {"user-a": "b"}


def test_a_dead_letter_renders_as_its_whole_rendering_encodes() -> None:
    """A dead letter (written once when it was dead-lettered) peeked, then delivered
    locked: each time its head written for the rendering, before its bare message."""
    entity = Entity("q", EntitySettings())
    entity.accept(SbMessage(body=b"payload", message_id="m", subject="s",
                            annotations={"user-a": 1}), now=1_700_000_000.0)
    (source,) = entity._messages.values()
    dead = Entity("q/$DeadLetterQueue", EntitySettings())
    dead.accept_dead_letter(source, "why", "because", "q", 1_700_000_001.0)
    (stored,) = dead._messages.values()
    written = stored.content.to_bytes()
    bare = next(start for code, start, _ in section_spans(written) if code >= PROPERTIES)
    peeked = stored.wire()
    assert peeked == stored.render().to_bytes()  # what encoding the whole rendering gives
    assert peeked.endswith(written[bare:])
    stored.delivery_count, stored.locked_until = 2, 1_700_000_060.0
    delivered = stored.wire()
    assert delivered == stored.render().to_bytes() and delivered != peeked
    again = ReceivedMessage.from_bytes(delivered)
    assert (again.dead_letter_reason, again.dead_letter_source) == ("why", "q")
    assert (again.delivery_count, again.annotations) == (2, {"user-a": 1})


def test_encode_sections_writes_only_those_asked_for() -> None:
    message = SbMessage(body=b"b", message_id="m", priority=3, annotations={"user-a": 1},
                        application_properties={"k": "v"})
    whole = message.to_bytes()
    spans = {code: whole[start:end] for code, start, end in section_spans(whole)}
    assert encode_sections(message, [HEADER, MESSAGE_ANNOTATIONS]) == (
        spans[HEADER] + spans[MESSAGE_ANNOTATIONS])
    assert encode_sections(message, [DATA]) == spans[DATA]
    assert encode_sections(message, [FOOTER]) == b""
