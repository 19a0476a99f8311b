"""com.microsoft:remove-rule — remove a rule from a subscription by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..amqp.values import Fields
from ._base import OpModel, OpRequest, check_reply, validated

OPERATION = "com.microsoft:remove-rule"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Remove the rule ``rule_name``; a rule that does not exist is a NotFoundError (404)."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    rule_name: str = Field(min_length=1)


class Response(OpModel):
    """Nothing: 200 means the rule was removed."""


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "rule-name | string | Yes"
    return {}, {"rule-name": request.rule_name}


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    return validated(Request, OPERATION, rule_name=Fields(body, OPERATION).str("rule-name"))


def encode_response(response: Response) -> tuple[int, None]:
    return 200, None


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response()
