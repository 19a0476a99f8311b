"""com.microsoft:update-disposition — settle deferred messages by lock token.

The operation supports transactions.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from ..amqp.values import Fields, uuid_array
from ._base import OpModel, SessionId, TransactionalRequest, check_reply, validated

OPERATION = "com.microsoft:update-disposition"
IDEMPOTENT = False


class DispositionStatus(str, enum.Enum):
    """How ``update_disposition`` settles messages (``disposition-status``): ``COMPLETED``,
    ``ABANDONED``, ``SUSPENDED`` (dead-lettered) or ``DEFERED`` (deferred; "defered" is
    the service's own spelling). The values are the strings the service takes."""

    COMPLETED = "completed"
    ABANDONED = "abandoned"
    SUSPENDED = "suspended"
    DEFERED = "defered"


class Request(TransactionalRequest["Response"]):
    """Settle the messages holding ``lock_tokens`` with ``disposition_status``."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    disposition_status: DispositionStatus
    lock_tokens: tuple[uuid.UUID, ...] = Field(min_length=1)
    dead_letter_reason: str | None = None
    dead_letter_description: str | None = None
    properties_to_modify: dict[str, Any] | None = None
    session_id: SessionId | None = None

    @model_validator(mode="after")
    def _dead_letter_fields(self) -> Request:
        has_reason = self.dead_letter_reason is not None or self.dead_letter_description is not None
        if has_reason and self.disposition_status is not DispositionStatus.SUSPENDED:
            raise ValueError(
                "dead_letter_reason / dead_letter_description are only for status 'suspended'"
            )
        return self


class Response(OpModel):
    """Nothing: 200 means settled."""


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    body: dict[str, Any] = {
        # "disposition-status | string | Yes | completed / abandoned / suspended" (and "defered")
        "disposition-status": request.disposition_status.value,
        # "lock-tokens | array of uuid | Yes"
        "lock-tokens": uuid_array(request.lock_tokens),
    }
    if request.dead_letter_reason is not None:
        # "deadletter-reason | string | No | set if disposition status is suspended."
        body["deadletter-reason"] = request.dead_letter_reason
    if request.dead_letter_description is not None:
        body["deadletter-description"] = request.dead_letter_description
    if request.properties_to_modify:
        # "properties-to-modify | map | No"
        body["properties-to-modify"] = dict(request.properties_to_modify)
    if request.session_id is not None:
        body["session-id"] = request.session_id
    return {}, body


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    properties = fields.optional_mapping("properties-to-modify")
    return validated(
        Request,
        OPERATION,
        disposition_status=fields.str("disposition-status"),
        lock_tokens=fields.uuids("lock-tokens"),
        dead_letter_reason=fields.optional_str("deadletter-reason"),
        dead_letter_description=fields.optional_str("deadletter-description"),
        properties_to_modify=None if properties is None else {str(k): v for k, v in
                                                               properties.items()},
        session_id=fields.optional_str("session-id"),
    )


def encode_response(response: Response) -> tuple[int, None]:
    return 200, None


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response()
