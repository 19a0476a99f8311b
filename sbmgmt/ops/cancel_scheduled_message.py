"""com.microsoft:cancel-scheduled-message — cancel scheduled messages by sequence number."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..amqp.values import Fields, long_array
from ._base import OpModel, OpRequest, SequenceNumber, check_reply, validated

OPERATION = "com.microsoft:cancel-scheduled-message"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Cancel the scheduled messages with these sequence numbers."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    sequence_numbers: tuple[SequenceNumber, ...] = Field(min_length=1)


class Response(OpModel):
    """Nothing: 200 means cancelled."""


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "sequence-numbers | array of long | Yes"
    return {}, {"sequence-numbers": long_array(request.sequence_numbers)}


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    return validated(
        Request, OPERATION, sequence_numbers=Fields(body, OPERATION).longs("sequence-numbers")
    )


def encode_response(response: Response) -> tuple[int, None]:
    return 200, None


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response()
