"""com.microsoft:enumerate-rules — list the rules of a subscription, a page at a time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..amqp.values import Fields, int32_value
from ..rules import RuleDescription, described_rule, rule_fields_from_described
from ._base import (
    Int32Count,
    Int32Offset,
    OpModel,
    OpRequest,
    check_at_most,
    check_reply,
    validated,
)

OPERATION = "com.microsoft:enumerate-rules"
IDEMPOTENT = True


class Request(OpRequest["Response"]):
    """Up to ``top`` rules, after skipping the first ``skip``."""

    OPERATION = OPERATION
    IDEMPOTENT = IDEMPOTENT

    top: Int32Count
    skip: Int32Offset = 0


class Response(OpModel):
    """A page of rules; empty past the end (204)."""

    rules: tuple[RuleDescription, ...] = ()


def encode(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    # "top | int | Yes" / "skip | int | Yes"
    return {}, {"top": int32_value(request.top), "skip": int32_value(request.skip)}


def decode_request(application_properties: Mapping[str, Any], body: Any) -> Request:
    fields = Fields(body, OPERATION)
    return validated(Request, OPERATION, top=fields.int("top"), skip=fields.int("skip"))


def encode_response(response: Response) -> tuple[int, dict[str, Any] | None]:
    if not response.rules:
        return 204, None
    # "rules | list of maps | Yes": each map holds "rule-description", a described list.
    return 200, {"rules": [{"rule-description": described_rule(rule)} for rule in response.rules]}


def check_response(request: Request, response: Response) -> None:
    # "top | int | Yes": at most that many rules.
    check_at_most(OPERATION, "rules", len(response.rules), request.top)


def decode(status_code: int, application_properties: Mapping[str, Any], body: Any) -> Response:
    if check_reply(OPERATION, status_code, application_properties, no_content=True):
        return Response()
    rules = [
        rule_fields_from_described(item.raw("rule-description"), f"{item.where}.rule-description")
        for item in Fields(body, OPERATION).maps("rules")
    ]
    return validated(Response, OPERATION, rules=rules)
