"""Every operation's request body, read back from real AMQP bytes, has the page's exact types."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from proton import Array, Data, Message, int32, timestamp, uint

from sbmgmt import ops
from sbmgmt.message import Message as SbMessage
from sbmgmt.message import ReceivedMessage
from sbmgmt.ops import (
    cancel_scheduled_message,
    get_message_sessions,
    get_session_state,
    peek_message,
    receive_by_sequence_number,
    renew_lock,
    renew_session_lock,
    schedule_message,
    set_session_state,
    update_disposition,
)
from tests._wire import parse_reply

T0 = datetime(2030, 5, 17, 8, 30, 15, 123000, tzinfo=timezone.utc)
TOKENS = (uuid.UUID("11111111-2222-3333-4444-555555555555"), uuid.uuid4())


def wire_roundtrip(request: Any) -> Message:
    """Encode the request envelope to bytes and decode it, as the peer sees it."""
    message = ops.encode_request(
        request, message_id=uuid.uuid4(), reply_to="reply-link", server_timeout_ms=5000
    )
    received = Message()
    received.decode(message.payload)
    return received


def test_envelope_has_operation_uint_timeout_and_uuid_message_id() -> None:
    received = wire_roundtrip(renew_session_lock.Request(session_id="s1"))
    assert received.properties["operation"] == "com.microsoft:renew-session-lock"
    timeout = received.properties["com.microsoft:server-timeout"]
    assert type(timeout) is uint and timeout == 5000
    assert isinstance(received.id, uuid.UUID)
    assert received.reply_to == "reply-link"


def test_renew_lock_sends_array_of_uuid() -> None:
    body = wire_roundtrip(renew_lock.Request(lock_tokens=TOKENS)).body
    tokens = body["lock-tokens"]
    assert isinstance(tokens, Array) and tokens.type == Data.UUID
    assert tuple(tokens.elements) == TOKENS


def test_peek_sends_long_and_int32() -> None:
    body = wire_roundtrip(
        peek_message.Request(from_sequence_number=7, message_count=10, session_id="s")
    ).body
    assert type(body["from-sequence-number"]) is int  # AMQP long decodes as a plain int
    assert type(body["message-count"]) is int32 and body["message-count"] == 10
    assert body["session-id"] == "s"


def test_schedule_sends_list_of_maps_with_wire_encoded_messages() -> None:
    message = SbMessage(body=b"x", message_id="m-1", session_id="s", partition_key="s",
                        scheduled_enqueue_time=T0)
    body = wire_roundtrip(schedule_message.Request(messages=(message,))).body
    (entry,) = body["messages"]
    assert entry["message-id"] == "m-1" and entry["session-id"] == "s"
    assert entry["partition-key"] == "s"
    decoded = SbMessage.from_bytes(bytes(entry["message"]))
    assert decoded.scheduled_enqueue_time == T0 and decoded.body == b"x"


def test_cancel_sends_array_of_long() -> None:
    body = wire_roundtrip(cancel_scheduled_message.Request(sequence_numbers=(1, 2**40))).body
    numbers = body["sequence-numbers"]
    assert isinstance(numbers, Array) and numbers.type == Data.LONG
    assert list(numbers.elements) == [1, 2**40]


def test_set_session_state_sends_binary_and_null() -> None:
    body = wire_roundtrip(set_session_state.Request(session_id="s", session_state=b"\x00\x01")).body
    assert bytes(body["session-state"]) == b"\x00\x01"
    cleared = wire_roundtrip(set_session_state.Request(session_id="s", session_state=None)).body
    assert "session-state" in cleared and cleared["session-state"] is None


def test_get_session_state_sends_session_id() -> None:
    assert wire_roundtrip(get_session_state.Request(session_id="abc")).body == {"session-id": "abc"}


def test_get_message_sessions_sends_timestamp_and_int32() -> None:
    body = wire_roundtrip(get_message_sessions.Request(skip=3, top=50)).body
    assert type(body["last-updated-time"]) is timestamp
    assert body["last-updated-time"] == 253402300800000
    assert type(body["skip"]) is int32 and type(body["top"]) is int32
    assert "associated-link-name" not in body
    dated = wire_roundtrip(get_message_sessions.Request(last_updated_time=T0)).body
    assert dated["last-updated-time"] == int(T0.timestamp() * 1000)


def test_receive_by_sequence_number_sends_long_array_and_uint_mode() -> None:
    body = wire_roundtrip(receive_by_sequence_number.Request(sequence_numbers=(5,))).body
    assert body["sequence-numbers"].type == Data.LONG
    mode = body["receiver-settle-mode"]
    assert type(mode) is uint and mode == 1


def test_update_disposition_sends_defered_spelling_and_uuid_array() -> None:
    request = update_disposition.Request(
        disposition_status=update_disposition.DispositionStatus.DEFERED, lock_tokens=TOKENS
    )
    body = wire_roundtrip(request).body
    assert body["disposition-status"] == "defered"
    assert body["lock-tokens"].type == Data.UUID
    suspended = update_disposition.Request(
        disposition_status="suspended", lock_tokens=TOKENS[:1],
        dead_letter_reason="bad", dead_letter_description="very", properties_to_modify={"k": 1},
    )
    body = wire_roundtrip(suspended).body
    assert body["deadletter-reason"] == "bad" and body["deadletter-description"] == "very"
    assert body["properties-to-modify"] == {"k": 1}


@pytest.mark.parametrize(
    ("factory", "field"),
    [
        (lambda: renew_lock.Request(lock_tokens=()), "lock_tokens"),
        (lambda: renew_lock.Request(lock_tokens=("not-a-uuid",)), "lock_tokens"),
        (lambda: peek_message.Request(from_sequence_number=-1, message_count=1),
         "from_sequence_number"),
        (lambda: peek_message.Request(from_sequence_number=1, message_count=0), "message_count"),
        (lambda: peek_message.Request(from_sequence_number=1, message_count=2**31),
         "message_count"),
        (lambda: cancel_scheduled_message.Request(sequence_numbers=()), "sequence_numbers"),
        (lambda: set_session_state.Request(session_id="s", session_state="text"), "session_state"),
        (lambda: renew_session_lock.Request(session_id=""), "session_id"),
        (lambda: get_message_sessions.Request(top=0), "top"),
        (lambda: schedule_message.Request(messages=(SbMessage(body=b"x"),)), "message_id"),
        (lambda: schedule_message.Request(messages=(SbMessage(message_id="m"),)),
         "scheduled_enqueue_time"),
        (lambda: update_disposition.Request(disposition_status="done", lock_tokens=TOKENS),
         "disposition_status"),
        (lambda: update_disposition.Request(disposition_status="completed", lock_tokens=TOKENS,
                                            dead_letter_reason="r"), "suspended"),
        (lambda: peek_message.Request(from_sequence_number=1, message_count=1, extra=1), "extra"),
    ],
)
def test_bad_arguments_name_the_field(factory: Any, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        factory()


def test_requests_are_frozen() -> None:
    request = peek_message.Request(from_sequence_number=1, message_count=1)
    with pytest.raises(ValueError):
        request.message_count = 5  # type: ignore[misc]


def test_peeked_messages_decode_from_wire_bytes() -> None:
    peeked = ReceivedMessage(body=b"hello", sequence_number=42, enqueued_time=T0,
                             message_id="m", state=2)
    status, body = peek_message.encode_response(peek_message.Response(messages=(peeked,)))
    reply = Message(correlation_id="c", properties={"statusCode": int32(status)}, body=body)
    again = Message()
    again.decode(reply.encode())
    parsed = parse_reply(again)
    request = peek_message.Request(from_sequence_number=1, message_count=1)
    response = ops.decode_reply(request, parsed)
    assert isinstance(response, peek_message.Response)
    (message,) = response.messages
    assert message.sequence_number == 42 and message.body == b"hello"
    assert message.enqueued_time == T0 and int(message.state) == 2
