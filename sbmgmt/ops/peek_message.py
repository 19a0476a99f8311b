"""com.microsoft:peek-message — browse messages without locking them.

With ``session_id`` this is the page's "peek session message".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..amqp.values import Fields, int32_value
from ..message import ReceivedMessage
from ._base import (
    Int32Count,
    OpModel,
    OpRequest,
    SequenceNumber,
    SessionId,
    check_at_most,
    check_reply,
    mismatch,
    validated,
)
from ._messages import decode_message_list, encoded_message_list

OPERATION = "com.microsoft:peek-message"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Peek up to ``message_count`` messages from ``from_sequence_number`` on."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    from_sequence_number: SequenceNumber
    message_count: Int32Count
    session_id: SessionId | None = None


class Response(OpModel):
    """The peeked messages, in sequence-number order (empty past the end)."""

    messages: tuple[ReceivedMessage, ...] = ()


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    body: dict[str, Any] = {
        # "from-sequence-number | long | Yes"
        "from-sequence-number": request.from_sequence_number,
        # "message-count | int | Yes"
        "message-count": int32_value(request.message_count),
    }
    if request.session_id is not None:
        # "session-id | string | Yes" (peek session message)
        body["session-id"] = request.session_id
    return {}, body


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        from_sequence_number=fields.int("from-sequence-number"),
        message_count=fields.int("message-count"),
        session_id=fields.optional_str("session-id"),
    )


def encode_response(response: Response) -> tuple[int, dict[str, Any] | None]:
    return encode_wire_response([message.to_bytes() for message in response.messages])


def encode_wire_response(encoded: Sequence[bytes]) -> tuple[int, dict[str, Any] | None]:
    """``encode_response`` for messages already wire-encoded (``ReceivedMessage.to_bytes()``)."""
    # "200: OK - has more messages / 204: No content - no more messages"
    if not encoded:
        return 204, None
    return 200, {"messages": encoded_message_list(encoded)}


def check_response(request: Request, response: Response) -> None:
    # At most "message-count" messages, "from-sequence-number" on, of "session-id" if given.
    check_at_most(OPERATION, "messages", len(response.messages), request.message_count)
    for message in response.messages:
        number = message.sequence_number
        if number is None or number < request.from_sequence_number:
            raise mismatch(OPERATION, f"sequence number {number} is before "
                                      f"from-sequence-number {request.from_sequence_number}")
        if request.session_id is not None and message.session_id != request.session_id:
            raise mismatch(OPERATION, f"a message of session {message.session_id!r} in a peek "
                                      f"of session {request.session_id!r}")


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    if check_reply(OPERATION, status_code, application_properties, no_content=True):
        return Response()
    return Response(messages=decode_message_list(Fields(body, OPERATION)))
