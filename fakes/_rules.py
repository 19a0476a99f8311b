"""Which messages a subscription rule lets through (rules are ``sbmgmt.rules`` models).

True, false and correlation filters are evaluated exactly. SQL filters are stored and
returned by enumerate-rules, but evaluated only in their trivial forms: ``1=1``
matches everything and any other expression matches nothing (see docs/fake.md).
"""

from __future__ import annotations

from sbmgmt.message import Message
from sbmgmt.rules import (
    CorrelationFilter,
    FalseFilter,
    RuleDescription,
    SqlFilter,
    TrueFilter,
)

__all__ = ["DEFAULT_RULE_NAME", "default_rule", "matches"]

DEFAULT_RULE_NAME = "$Default"

_CORRELATION_FIELDS = (
    "correlation_id", "message_id", "to", "reply_to", "subject", "session_id",
    "reply_to_session_id", "content_type",
)


def default_rule() -> RuleDescription:
    """The ``$Default`` true-filter rule every new subscription gets."""
    return RuleDescription(name=DEFAULT_RULE_NAME, filter=TrueFilter())


def _correlation_matches(rule_filter: CorrelationFilter, message: Message) -> bool:
    for name in _CORRELATION_FIELDS:
        expected = getattr(rule_filter, name)
        if expected is not None and getattr(message, name) != expected:
            return False
    props = message.application_properties
    return all(props.get(key) == value for key, value in rule_filter.properties.items())


def matches(
    rule_filter: SqlFilter | CorrelationFilter | TrueFilter | FalseFilter, message: Message
) -> bool:
    """Whether ``rule_filter`` lets ``message`` into the subscription."""
    if isinstance(rule_filter, TrueFilter):
        return True
    if isinstance(rule_filter, FalseFilter):
        return False
    if isinstance(rule_filter, SqlFilter):
        return "".join(rule_filter.expression.split()) == "1=1"
    return _correlation_matches(rule_filter, message)
