"""com.microsoft:renew-lock — extend the locks of many messages in one request."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import Field

from ..amqp.values import Fields, timestamp_array, uuid_array
from ._base import OpModel, OpRequest, check_reply, mismatch, validated

OPERATION = "com.microsoft:renew-lock"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Renew the locks held by ``lock_tokens`` (delivery tags, or deferred lock-tokens)."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    lock_tokens: tuple[uuid.UUID, ...] = Field(min_length=1)
    session_id: str | None = None


class Response(OpModel):
    """The new expiry of each lock, in the order of the request's tokens."""

    expirations: tuple[datetime, ...]


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "lock-tokens | array of uuid | Yes | Message lock tokens to renew."
    body: dict[str, Any] = {"lock-tokens": uuid_array(request.lock_tokens)}
    if request.session_id is not None:
        body["session-id"] = request.session_id
    return {}, body


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        lock_tokens=fields.uuids("lock-tokens"),
        session_id=fields.optional_str("session-id"),
    )


def encode_response(response: Response) -> tuple[int, dict[str, Any]]:
    # "expirations | array of timestamp | Yes | new expiration per request lock token."
    return 200, {"expirations": timestamp_array(response.expirations)}


def check_response(request: Request, response: Response) -> None:
    # "expirations | array of timestamp | Yes | ... new expiration corresponding to the
    # request lock tokens": one per token, in the request's order.
    if len(response.expirations) != len(request.lock_tokens):
        raise mismatch(OPERATION, f"{len(response.expirations)} expirations for "
                                  f"{len(request.lock_tokens)} lock tokens")


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    fields = Fields(body, OPERATION)
    return Response(expirations=tuple(fields.timestamps("expirations")))
