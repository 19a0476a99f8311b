"""The request and reply envelopes of the management node (sans-I/O).

A request is an AMQP message with ``message-id`` (a uuid), ``reply-to``, and the
application properties ``operation``, optionally ``com.microsoft:server-timeout``
(uint, ms) and ``associated-link-name``; the body is the operation's amqp-value map.
A reply carries ``correlation-id`` = the request's message-id and ``statusCode``
(``status-code`` on ``$cbs``) of any integer width, with optional
``statusDescription`` and ``errorCondition``. The ``$cbs`` node's put-token request
(``operation`` = ``put-token``, ``type`` and ``name`` = the audience, the token as the
body) and its reply are the same envelopes.

Both directions live here: the client encodes requests and parses replies, the fake
namespace parses requests and encodes replies, through the same code and the one section
walker of :mod:`sbmgmt.amqp.sections`. Bytes in, bytes out: no proton ``Message``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proton import int32, uint, ulong

from ..errors import ProtocolError
from .encode import encode_message
from .scan import decode_message_list_map
from .sections import APPLICATION_PROPERTIES, BODIES, PROPERTIES, sections

__all__ = [
    "ASSOCIATED_LINK_NAME",
    "ERROR_CONDITION",
    "EncodedRequest",
    "OPERATION",
    "Reply",
    "Request",
    "PUT_TOKEN",
    "SERVER_TIMEOUT",
    "STATUS_DESCRIPTION",
    "correlation_key",
    "encode_operation",
    "encode_put_token",
    "encode_reply",
    "parse_request",
    "reply_of",
    "reply_parts",
    "request_operation",
]

OPERATION = "operation"
SERVER_TIMEOUT = "com.microsoft:server-timeout"
ASSOCIATED_LINK_NAME = "associated-link-name"
#: The ``$cbs`` node's operation that authorizes an audience.
PUT_TOKEN = "put-token"
#: A reply's application properties that describe a failure.
STATUS_DESCRIPTION = "statusDescription"
ERROR_CONDITION = "errorCondition"
_STATUS_KEYS = ("statusCode", "status-code")
_DESCRIPTION_KEYS = (STATUS_DESCRIPTION, "status-description")

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


def encode_operation(
    operation: str,
    properties: Mapping[str, Any],
    body: Any,
    *,
    message_id: uuid.UUID,
    reply_to: str,
    server_timeout_ms: int | None = None,
    associated_link_name: str | None = None,
) -> EncodedRequest:
    """The complete request message of ``operation``, its own application ``properties``
    and ``body`` (what an operation's ``encode`` gives: :func:`sbmgmt.ops.encode_request`),
    encoded.

    The bytes are those of proton's ``Message(id=message_id, reply_to=reply_to,
    properties=..., body=...).encode()`` (see :func:`sbmgmt.amqp.encode.encode_message`).
    """
    application_properties: dict[str, Any] = {OPERATION: operation}
    if server_timeout_ms is not None:
        # "com.microsoft:server-timeout | uint | No | Operation server timeout in milliseconds."
        application_properties[SERVER_TIMEOUT] = uint(max(0, int(server_timeout_ms)))
    if associated_link_name is not None:
        application_properties[ASSOCIATED_LINK_NAME] = associated_link_name
    application_properties.update(properties)
    return EncodedRequest(encode_message(
        message_id=message_id, reply_to=reply_to, application_properties=application_properties,
        body=body,
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
    earlier one); ProtocolError if the bytes are not an AMQP message. A peek reply's
    message list is read in one pass (:func:`sbmgmt.amqp.decode.decode_message_list_map`)."""
    correlation: Any = None
    properties: Any = None
    body: Any = None
    for section, value in sections(raw, amqp_value=decode_message_list_map):
        if section == PROPERTIES:
            correlation = value[5] if isinstance(value, list) and len(value) > 5 else None
            if isinstance(correlation, ulong):
                correlation = int(correlation)  # as proton's Message gives a ulong id
        elif section == APPLICATION_PROPERTIES:
            properties = value
        elif section in BODIES:
            body = value
    return correlation, properties, body


@dataclass(frozen=True, slots=True)
class Request:
    """A request envelope as the receiving node reads it (the fake namespace's side):
    the application-properties and body as decoded, whatever they are."""

    message_id: Any
    #: As decoded: a string from a well-behaved peer, anything from another.
    reply_to: Any
    application_properties: Any
    body: Any
    #: The ``operation`` application property, if it is a string (read once, here).
    operation: str | None


def parse_request(raw: bytes | bytearray | memoryview) -> Request:
    """A request envelope from its message's bytes (the values and types proton's
    ``Message.decode`` gives); ProtocolError if they are not an AMQP message."""
    fields: list[Any] = []
    properties = body = None
    for section, value in sections(raw):
        if section == PROPERTIES and isinstance(value, list):
            fields = value
        elif section == APPLICATION_PROPERTIES:
            properties = value
        elif section in BODIES:
            body = value
    operation = properties.get(OPERATION) if isinstance(properties, dict) else None
    return Request(message_id=fields[0] if fields else None,
                   reply_to=fields[4] if len(fields) > 4 else None,
                   application_properties=properties, body=body,
                   operation=operation if isinstance(operation, str) else None)


def request_operation(request: Request) -> str:
    """The request's operation; ProtocolError if it has none."""
    if not isinstance(request.application_properties, dict):
        raise ProtocolError("request has no application-properties")
    operation = request.operation
    if operation is None:
        raise ProtocolError("request has no operation")
    return operation


def encode_put_token(*, message_id: uuid.UUID, reply_to: str, token_type: str, audience: str,
                     token: str) -> bytes:
    """The ``$cbs`` put-token request: the bytes of proton's ``Message(id=message_id,
    reply_to=reply_to, properties={"operation": "put-token", "type": token_type, "name":
    audience}, body=token).encode()``."""
    return encode_message(
        message_id=message_id, reply_to=reply_to, body=token,
        application_properties={OPERATION: PUT_TOKEN, "type": token_type, "name": audience},
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


def encode_reply(
    correlation_id: Any,
    status_code: int,
    body: Any = None,
    *,
    description: str | None = None,
    error_condition: str | None = None,
    status_key: str = "statusCode",
) -> bytes:
    """A reply message's bytes: those of proton's ``Message(correlation_id=...,
    properties=<the status properties>, body=body).encode()``
    (:func:`sbmgmt.amqp.encode.encode_message`). ``status_key="status-code"`` is the
    ``$cbs`` node's spelling (and ``status-description`` with it)."""
    properties = _reply_properties(status_code, description, error_condition, status_key)
    return encode_message(correlation_id=correlation_id, application_properties=properties,
                          body=body)
