"""com.microsoft:set-session-state — store (or, with None, clear) a session's state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import StrictBytes

from ..amqp.values import Fields
from ._base import OpModel, OpRequest, SessionId, check_reply, validated

OPERATION = "com.microsoft:set-session-state"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Set ``session_id``'s state to ``session_state``; None clears it."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    session_id: SessionId
    session_state: StrictBytes | None


class Response(OpModel):
    """Nothing: 200 means stored."""


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    return {}, {
        # "session-id | string | Yes | Session ID."
        "session-id": request.session_id,
        # "session-state | array of bytes | Yes | Opaque binary data." (AMQP null clears it)
        "session-state": request.session_state,
    }


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        session_id=fields.str("session-id"),
        session_state=fields.optional_bytes("session-state"),
    )


def encode_response(response: Response) -> tuple[int, None]:
    return 200, None


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response()
