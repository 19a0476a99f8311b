"""com.microsoft:get-message-sessions — list the sessions of an entity."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..amqp.values import (
    MAX_TIMESTAMP_MS,
    Fields,
    datetime_from_ms,
    int32_value,
    string_array,
    timestamp_value,
)
from ._base import (
    Int32Count,
    Int32Offset,
    OpModel,
    OpRequest,
    check_at_most,
    check_reply,
    validated,
)

OPERATION = "com.microsoft:get-message-sessions"
IDEMPOTENT = True

#: "a time stamp that is equal to 253402300800000 milliseconds ... DateTime.MaxValue in .NET":
#: the service then returns every session, with state or not.
ALL_SESSIONS = datetime_from_ms(MAX_TIMESTAMP_MS)


class Request(OpRequest["Response"]):
    """Sessions updated after ``last_updated_time`` (ALL_SESSIONS: every session), paged."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    last_updated_time: datetime = ALL_SESSIONS
    skip: Int32Offset = 0
    top: Int32Count = 100


class Response(OpModel):
    """A page of session ids; empty when there are none (204)."""

    skip: int = 0
    session_ids: tuple[str, ...] = ()


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    return {}, {
        # "last-updated-time | timestamp | Yes"
        "last-updated-time": timestamp_value(request.last_updated_time),
        # "skip | int | Yes" / "top | int | Yes"
        "skip": int32_value(request.skip),
        "top": int32_value(request.top),
    }


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        last_updated_time=fields.timestamp("last-updated-time"),
        skip=fields.int("skip"),
        top=fields.int("top"),
    )


def encode_response(response: Response) -> tuple[int, dict[str, Any] | None]:
    # "200: OK - has more messages / 204: No content - no more messages"
    if not response.session_ids:
        return 204, None
    # "skip | int | Yes" / "sessions-ids | array of strings | Yes" (sic: sessions-ids)
    return 200, {
        "skip": int32_value(response.skip),
        "sessions-ids": string_array(response.session_ids),
    }


def check_response(request: Request, response: Response) -> None:
    # "top | int | Yes | Maximum number of sessions."
    check_at_most(OPERATION, "session ids", len(response.session_ids), request.top)


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    if check_reply(OPERATION, status_code, application_properties, no_content=True):
        return Response()
    fields = Fields(body, OPERATION)
    return Response(
        skip=fields.int("skip", default=0), session_ids=tuple(fields.strings("sessions-ids"))
    )
