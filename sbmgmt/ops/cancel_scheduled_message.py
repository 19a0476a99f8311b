"""com.microsoft:cancel-scheduled-message — cancel scheduled messages by sequence number."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..amqp.values import Fields, long_array
from ..errors import NotFoundError, ScheduledMessagesNotFoundError
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


#: The service's answer for a number that is not a scheduled message (404
#: com.microsoft:message-not-found), e.g. "Messages not found. Missing sequence numbers:
#: 72043423689408512 TrackingId:…" (quoted in MassTransit issue 926 and azure-service-bus
#: issue 239): the numbers run from the colon to the first word that is not one.
_MISSING = re.compile(r"Missing sequence numbers:\s*((?:-?\d+[\s,;]*)+)")


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
    try:
        check_reply(OPERATION, status_code, application_properties)
    except NotFoundError as error:
        raise _not_scheduled(error) or error from None
    return Response()


def _not_scheduled(error: NotFoundError) -> ScheduledMessagesNotFoundError | None:
    """The typed error for a reply that names missing sequence numbers; None for another
    not-found (the entity's)."""
    found = _MISSING.search(error.description or "")
    if found is None:
        return None
    numbers = tuple(int(n) for n in re.findall(r"-?\d+", found.group(1)))
    listed = ", ".join(map(str, numbers))
    return ScheduledMessagesNotFoundError(
        f"not cancelled: no scheduled message has the sequence number{'s' * (len(numbers) > 1)}"
        f" {listed} ({OPERATION} answered {error.status_code}: {error.description})",
        sequence_numbers=numbers,
        operation=error.operation,
        status_code=error.status_code,
        error_condition=error.error_condition,
        description=error.description,
    )
