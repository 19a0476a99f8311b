"""com.microsoft:schedule-message — enqueue messages at a future time (supports transactions)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from ..amqp.values import Fields, long_array
from ..errors import ProtocolError
from ..message import Message, id_text
from ._base import OpModel, TransactionalRequest, check_reply, mismatch, validated

OPERATION = "com.microsoft:schedule-message"
IDEMPOTENT = False


class Request(TransactionalRequest["Response"]):
    """Schedule ``messages``; each has a message_id and a scheduled_enqueue_time."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    messages: tuple[Message, ...] = Field(min_length=1)

    @field_validator("messages")
    @classmethod
    def _complete(cls, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        for index, message in enumerate(messages):
            if message.message_id is None or message.message_id == "":
                raise ValueError(f"messages[{index}].message_id is required")
            if message.scheduled_enqueue_time is None:
                raise ValueError(f"messages[{index}].scheduled_enqueue_time is required")
        return messages


def with_trace_context(request: Request, headers: Mapping[str, str]) -> Request:
    """``request`` with ``headers`` (the producing span's ``traceparent``,
    ``Diagnostic-Id``, ``tracestate``) added to each message's application properties; a
    property a message already carries is kept, as the official SDKs do."""
    if not headers:
        return request
    messages = tuple(
        message.model_copy(update={
            "application_properties": {**headers, **message.application_properties}})
        for message in request.messages
    )
    return request.model_copy(update={"messages": messages})


class Response(OpModel):
    """The sequence numbers of the scheduled messages (used to cancel them)."""

    sequence_numbers: tuple[int, ...]


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    entries = []
    for message in request.messages:
        # "message-id | string | Yes | amqpMessage.Properties.MessageId as string"
        # (a ulong, uuid or binary message-id as its text: id_text; the message keeps its own)
        message_id = message.message_id
        assert message_id is not None  # Request's validator
        entry: dict[str, Any] = {"message-id": id_text(message_id)}
        if message.session_id is not None:
            # "session-id | string | No | amqpMessage.Properties.GroupId as string"
            entry["session-id"] = message.session_id
        if message.partition_key is not None:
            # "partition-key | string | No | MessageAnnotations."x-opt-partition-key""
            entry["partition-key"] = message.partition_key
        if message.via_partition_key is not None:
            # "via-partition-key | string | No | MessageAnnotations."x-opt-via-partition-key""
            entry["via-partition-key"] = message.via_partition_key
        # "message | array of byte | Yes | AMQP 1.0 wire-encoded message."
        entry["message"] = message.to_bytes()
        entries.append(entry)
    return {}, {"messages": entries}


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    messages = []
    for entry in fields.maps("messages"):
        message = Message.from_bytes(entry.bytes("message"))
        message_id = _entry_id(entry)
        if message.message_id is None:
            message = message.model_copy(update={"message_id": message_id})
        elif id_text(message.message_id) != id_text(message_id):
            raise ProtocolError(f"{entry.where}: message-id differs from the encoded message's")
        messages.append(message)
    return validated(Request, OPERATION, messages=tuple(messages))


def _entry_id(entry: Fields) -> str | int | uuid.UUID | bytes:
    """An entry's ``message-id``: the reference says string, and sbmgmt sends one, but the
    official Python SDK sends the message's own id as it is (a uuid for
    ``message_id=uuid.uuid4()``: its ``test_queue_schedule_multiple_messages``,
    ``test_queue_send_dict_messages_scheduled``, ``test_session_schedule_multiple_messages``
    schedule so against the service), so any of the four types a message-id has is taken
    and compared as its text."""
    value = entry.raw("message-id")
    if isinstance(value, (str, uuid.UUID)) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ProtocolError(
        f"{entry.where}: field 'message-id' must be a string, ulong, uuid or binary, "
        f"got {type(value).__name__}", operation=OPERATION)


def encode_response(response: Response) -> tuple[int, dict[str, Any]]:
    # "sequence-numbers | array of long | Yes"
    return 200, {"sequence-numbers": long_array(response.sequence_numbers)}


def check_response(request: Request, response: Response) -> None:
    # "sequence-numbers | array of long | Yes | Sequence number of scheduled messages":
    # one per message scheduled, in the request's order.
    if len(response.sequence_numbers) != len(request.messages):
        raise mismatch(OPERATION, f"{len(response.sequence_numbers)} sequence numbers for "
                                  f"{len(request.messages)} messages scheduled")


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response(sequence_numbers=tuple(Fields(body, OPERATION).longs("sequence-numbers")))
