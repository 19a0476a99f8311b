"""com.microsoft:renew-session-lock — extend the lock on a session."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..amqp.values import Fields, timestamp_value
from ._base import OpModel, OpRequest, SessionId, check_reply, validated

OPERATION = "com.microsoft:renew-session-lock"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Renew the lock this client's receiver holds on ``session_id``."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    session_id: SessionId


class Response(OpModel):
    """The session lock's new expiry."""

    expiration: datetime


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "session-id | string | Yes | Session ID."
    return {}, {"session-id": request.session_id}


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    return validated(Request, OPERATION, session_id=Fields(body, OPERATION).str("session-id"))


def encode_response(response: Response) -> tuple[int, dict[str, Any]]:
    # "expiration | timestamp | Yes | New expiration."
    return 200, {"expiration": timestamp_value(response.expiration)}


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response(expiration=Fields(body, OPERATION).timestamp("expiration"))
