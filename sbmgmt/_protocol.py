"""The request and reply envelopes of the management node (sans-I/O).

A request is a proton ``Message`` with ``message-id`` (a uuid), ``reply-to``, and the
application properties ``operation``, optionally ``com.microsoft:server-timeout``
(uint, ms) and ``associated-link-name``; the body is the operation's amqp-value map.
A reply carries ``correlation-id`` = the request's message-id and ``statusCode``
(``status-code`` on ``$cbs``) of any integer width, with optional
``statusDescription`` and ``errorCondition``.

Both directions live here: the client builds requests and parses replies, the fake
namespace parses requests and builds replies, through the same code.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proton import Message, int32, uint, ulong

from . import ops
from ._amqp import owned
from ._decode import decode_described, decode_message_list_map
from ._encode import encode_message
from .errors import OUTCOME_UNKNOWN, ProtocolError
from .ops._base import ERROR_CONDITION, STATUS_DESCRIPTION, OpModel, OpRequest, R

__all__ = [
    "ASSOCIATED_LINK_NAME",
    "EncodedRequest",
    "OPERATION",
    "Reply",
    "Request",
    "SERVER_TIMEOUT",
    "build_reply",
    "correlation_key",
    "decode_reply",
    "encode_reply",
    "encode_request",
    "parse_reply",
    "parse_request",
    "reply_of",
    "reply_parts",
]

OPERATION = "operation"
SERVER_TIMEOUT = "com.microsoft:server-timeout"
ASSOCIATED_LINK_NAME = "associated-link-name"
_STATUS_KEYS = ("statusCode", "status-code")
_DESCRIPTION_KEYS = (STATUS_DESCRIPTION, "status-description")
_PROPERTIES = 0x73
_APPLICATION_PROPERTIES = 0x74
_DATA = 0x75  # data, amqp-sequence and amqp-value (0x75-0x77) are the body
_AMQP_VALUE = 0x77
_SECTION_CODES: dict[Any, int] = {
    **{code: code for code in range(0x70, 0x79)},
    "amqp:header:list": 0x70,
    "amqp:delivery-annotations:map": 0x71,
    "amqp:message-annotations:map": 0x72,
    "amqp:properties:list": _PROPERTIES,
    "amqp:application-properties:map": _APPLICATION_PROPERTIES,
    "amqp:data:binary": _DATA,
    "amqp:amqp-sequence:list": 0x76,
    "amqp:amqp-value:*": _AMQP_VALUE,
    "amqp:footer:map": 0x78,
}


def correlation_key(value: Any) -> str:
    """Normalise a message-id / correlation-id: a uuid and its string form are one key."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    text = str(value)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return text


@dataclass(frozen=True, slots=True)
class EncodedRequest:
    """A request message's complete AMQP 1.0 bytes, ready for the transfer."""

    payload: bytes

    def encode(self) -> bytes:
        """The same bytes, under the name of proton's ``Message.encode``, for callers
        written against the proton ``Message`` this function used to return."""
        return self.payload


def encode_request(
    request: OpModel,
    *,
    message_id: uuid.UUID,
    reply_to: str,
    server_timeout_ms: int | None = None,
    associated_link_name: str | None = None,
) -> EncodedRequest:
    """The complete request message for an operation's ``Request``, encoded.

    The bytes are those of proton's ``Message(id=message_id, reply_to=reply_to,
    properties=..., body=...).encode()`` (see :func:`sbmgmt._encode.encode_message`).
    """
    module = ops.module_of(request)
    extra, body = module.encode(request)
    properties: dict[str, Any] = {OPERATION: module.OPERATION}
    if server_timeout_ms is not None:
        # "com.microsoft:server-timeout | uint | No | Operation server timeout in milliseconds."
        properties[SERVER_TIMEOUT] = uint(max(0, int(server_timeout_ms)))
    if associated_link_name is not None:
        properties[ASSOCIATED_LINK_NAME] = associated_link_name
    properties.update(extra)
    return EncodedRequest(encode_message(
        message_id=message_id, reply_to=reply_to, application_properties=properties, body=body,
    ))


@dataclass(frozen=True, slots=True)
class Reply:
    """A parsed reply envelope; ``body`` is owned (no proton memoryviews)."""

    correlation_key: str | None
    status_code: int
    description: str | None
    error_condition: str | None
    application_properties: Mapping[str, Any]
    body: Any


def _status(properties: Mapping[str, Any]) -> int:
    for key in _STATUS_KEYS:
        value = properties.get(key)
        if value is not None:
            if isinstance(value, int) and not isinstance(value, bool):
                return int(value)
            raise ProtocolError(f"reply {key} must be an integer, got {type(value).__name__}")
    raise ProtocolError("reply has no statusCode")


def _optional_text(properties: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = properties.get(key)
        if value is not None:
            return str(value)
    return None


def parse_reply(message: Message) -> Reply:
    """Parse a reply envelope; a missing or mistyped status is a ProtocolError."""
    properties = message.properties
    return reply_of(
        message.correlation_id,
        properties if not isinstance(properties, Mapping) else {
            k: owned(v) for k, v in properties.items()
        },
        owned(message.body),
    )


def reply_of(correlation: Any, raw_props: Any, body: Any) -> Reply:
    """A reply envelope from its decoded parts (the correlation-id, the
    application-properties and the body, already owned); ProtocolError if the
    status is missing or mistyped."""
    key = None if correlation is None else correlation_key(correlation)
    if raw_props is not None and not isinstance(raw_props, Mapping):
        raise ProtocolError("reply application-properties is not a map")
    source: Mapping[Any, Any] = raw_props or {}
    properties = {str(k): v for k, v in source.items()}
    return Reply(
        correlation_key=key,
        status_code=_status(properties),
        description=_optional_text(properties, _DESCRIPTION_KEYS),
        error_condition=_optional_text(properties, (ERROR_CONDITION, "error-condition")),
        application_properties=properties,
        body=body,
    )


def reply_parts(raw: bytes | bytearray | memoryview) -> tuple[Any, Any, Any]:
    """The correlation-id, application-properties and body of an encoded reply
    message, as proton's ``Message`` would give them (a later body section replaces an
    earlier one); ProtocolError if the bytes are not an AMQP message."""
    correlation: Any = None
    properties: Any = None
    body: Any = None
    raw = bytes(raw)
    offset = 0
    end = len(raw)
    try:
        while offset < end:
            if raw.startswith(b"\x00\x53\x77", offset):  # amqp-value: a message list?
                listed, after = decode_message_list_map(raw, offset + 3)
                if listed is not None:
                    body, offset = listed, after
                    continue
            code, value, offset = decode_described(raw, offset)
            section = _SECTION_CODES.get(code)
            if section == _PROPERTIES:
                correlation = value[5] if isinstance(value, list) and len(value) > 5 else None
                if isinstance(correlation, ulong):
                    correlation = int(correlation)  # as proton's Message gives a ulong id
            elif section == _APPLICATION_PROPERTIES:
                properties = value
            elif section is not None and _DATA <= section <= _AMQP_VALUE:
                body = value
    except ProtocolError as exc:
        raise ProtocolError(f"malformed reply message at byte {offset}: {exc}") from None
    return correlation, properties, body


def decode_reply(request: OpRequest[R], reply: Reply) -> R:
    """The operation's typed Response for this reply (or its typed error)."""
    try:
        return ops.decode_response(
            request, reply.status_code, reply.application_properties, reply.body
        )
    except OUTCOME_UNKNOWN as error:
        error.may_have_been_applied = not request.IDEMPOTENT
        raise


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed request envelope (the fake namespace's side)."""

    operation: str
    message_id: Any
    reply_to: str | None
    application_properties: Mapping[str, Any]
    body: Any


def parse_request(message: Message) -> Request:
    """Parse a request envelope; no operation is a ProtocolError."""
    raw_props = message.properties
    if not isinstance(raw_props, Mapping):
        raise ProtocolError("request has no application-properties")
    properties = {str(k): owned(v) for k, v in raw_props.items()}
    operation = properties.get(OPERATION)
    if not isinstance(operation, str):
        raise ProtocolError("request has no operation")
    return Request(
        operation=operation,
        message_id=message.id,
        reply_to=message.reply_to,
        application_properties=properties,
        body=owned(message.body),
    )


def _reply_properties(
    status_code: int, description: str | None, error_condition: str | None, status_key: str
) -> dict[str, Any]:
    """A reply's application-properties; the status travels as AMQP int, as the service
    sends it."""
    properties: dict[str, Any] = {status_key: int32(status_code)}
    if description is not None:
        key = STATUS_DESCRIPTION if status_key == "statusCode" else "status-description"
        properties[key] = description
    if error_condition is not None:
        # The service's management replies say "errorCondition"; the official SDKs read
        # "error-condition". Send both so either kind of client sees the condition.
        properties[ERROR_CONDITION] = error_condition
        properties["error-condition"] = error_condition
    return properties


def build_reply(
    correlation_id: Any,
    status_code: int,
    body: Any = None,
    *,
    description: str | None = None,
    error_condition: str | None = None,
    status_key: str = "statusCode",
) -> Message:
    """A reply message, as proton's ``Message`` (:func:`encode_reply` gives its bytes)."""
    properties = _reply_properties(status_code, description, error_condition, status_key)
    return Message(correlation_id=correlation_id, properties=properties, body=body)


def encode_reply(
    correlation_id: Any,
    status_code: int,
    body: Any = None,
    *,
    description: str | None = None,
    error_condition: str | None = None,
    status_key: str = "statusCode",
) -> bytes:
    """The bytes of ``build_reply(...).encode()``, without going through proton's
    ``Message`` (:func:`sbmgmt._encode.encode_message`)."""
    properties = _reply_properties(status_code, description, error_condition, status_key)
    return encode_message(correlation_id=correlation_id, application_properties=properties,
                          body=body)
