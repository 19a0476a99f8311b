"""com.microsoft:get-session-state — read a session's state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..amqp.values import Fields
from ._base import OpModel, OpRequest, SessionId, check_reply, validated

OPERATION = "com.microsoft:get-session-state"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Read the state of ``session_id``."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    session_id: SessionId


class Response(OpModel):
    """The state, or None when the session has none."""

    session_state: bytes | None = None


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "session-id | string | Yes | Session ID."
    return {}, {"session-id": request.session_id}


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    return validated(Request, OPERATION, session_id=Fields(body, OPERATION).str("session-id"))


def encode_response(response: Response) -> tuple[int, dict[str, Any]]:
    # "session-state | array of bytes | Yes | Opaque binary data."
    return 200, {"session-state": response.session_state}


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response(session_state=Fields(body, OPERATION).optional_bytes("session-state"))
