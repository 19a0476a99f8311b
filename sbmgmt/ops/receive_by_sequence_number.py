"""com.microsoft:receive-by-sequence-number — receive deferred messages."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..amqp.values import Fields, long_array, uint_value
from ..message import ReceivedMessage
from ._base import OpModel, OpRequest, SequenceNumber, SessionId, check_reply, mismatch, validated
from ._messages import decode_message_list, encode_message_list

OPERATION = "com.microsoft:receive-by-sequence-number"
IDEMPOTENT = False


class ReceiverSettleMode(enum.IntEnum):
    """AMQP 1.0 receiver-settle-mode: 0 = first (receive and delete), 1 = second (peek lock)."""

    RECEIVE_AND_DELETE = 0
    PEEK_LOCK = 1


class Request(OpRequest["Response"]):
    """Receive the deferred messages with these sequence numbers."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    sequence_numbers: tuple[SequenceNumber, ...] = Field(min_length=1)
    receiver_settle_mode: ReceiverSettleMode = ReceiverSettleMode.PEEK_LOCK
    session_id: SessionId | None = None


class Response(OpModel):
    """The messages, each with its lock token in peek-lock mode."""

    messages: tuple[ReceivedMessage, ...] = ()


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    body: dict[str, Any] = {
        # "sequence-numbers | array of long | Yes"
        "sequence-numbers": long_array(request.sequence_numbers),
        # "receiver-settle-mode | ubyte | Yes" — every SDK sends uint; the service takes it.
        "receiver-settle-mode": uint_value(request.receiver_settle_mode),
    }
    if request.session_id is not None:
        body["session-id"] = request.session_id
    return {}, body


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        sequence_numbers=fields.longs("sequence-numbers"),
        receiver_settle_mode=fields.int("receiver-settle-mode"),
        session_id=fields.optional_str("session-id"),
    )


def encode_response(response: Response) -> tuple[int, dict[str, Any]]:
    # "messages | list of maps" with "lock-token | uuid" and "message | array of byte"
    return 200, {"messages": encode_message_list(response.messages, with_lock_tokens=True)}


def check_response(request: Request, response: Response) -> None:
    # Only the deferred messages asked for, each once.
    asked = set(request.sequence_numbers)
    seen: set[int] = set()
    for message in response.messages:
        number = message.sequence_number
        if number not in asked or number in seen:
            raise mismatch(OPERATION, f"sequence number {number} was not asked for "
                                      "(or came twice)")
        seen.add(number)


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response(messages=decode_message_list(Fields(body, OPERATION)))
