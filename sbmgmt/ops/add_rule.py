"""com.microsoft:add-rule — add a rule to a subscription (the entity is the subscription)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..amqp.values import Fields
from ..rules import RuleFilter, SqlRuleAction, rule_description_map, rule_fields_from_map
from ._base import OpModel, OpRequest, check_reply, validated

OPERATION = "com.microsoft:add-rule"
IDEMPOTENT = False


class Request(OpRequest["Response"]):
    """Add the rule ``rule_name`` with ``filter`` and an optional ``action``.

    A rule of that name that already exists is a ConflictError (409).
    """

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    rule_name: str = Field(min_length=1)
    filter: RuleFilter
    action: SqlRuleAction | None = None


class Response(OpModel):
    """Nothing: 200 means the rule was added."""


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "rule-name | string | Yes" / "rule-description | map | Yes"
    return {}, {
        "rule-name": request.rule_name,
        "rule-description": rule_description_map(request.filter, request.action),
    }


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(
        Request,
        OPERATION,
        rule_name=fields.str("rule-name"),
        **rule_fields_from_map(fields.map("rule-description")),
    )


def encode_response(response: Response) -> tuple[int, None]:
    return 200, None


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    check_reply(OPERATION, status_code, application_properties)
    return Response()
