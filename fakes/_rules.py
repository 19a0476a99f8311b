"""Which messages a subscription rule lets through, and the copies a subscription gets.

Rules are ``sbmgmt.rules`` models. True, false and correlation filters are evaluated
exactly; SQL filters and SQL rule actions run on :mod:`sbmgmt.sql`, the client's public
evaluator (the same one a client uses to check a rule or search messages). Fan-out follows
the service (learn.microsoft.com, "Topic filters and actions"): the matching
rules without an action together give the subscription one copy of the message, and
every matching rule with an action gives one more copy, with the action applied and the
application property ``RuleName`` set to the rule's name.
"""

from __future__ import annotations

from collections.abc import Iterable

from sbmgmt.message import Message
from sbmgmt.rules import (
    CorrelationFilter,
    FalseFilter,
    RuleDescription,
    SqlFilter,
    TrueFilter,
)
from sbmgmt.sql import check_rule, parse_action, parse_filter

__all__ = ["DEFAULT_RULE_NAME", "RULE_NAME_PROPERTY", "check_rule", "default_rule", "matches",
           "subscription_copies"]

DEFAULT_RULE_NAME = "$Default"
#: The application property naming the rule whose action made a copy.
RULE_NAME_PROPERTY = "RuleName"

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
    return all(key in props and props[key] == value
               for key, value in rule_filter.properties.items())


def matches(
    rule_filter: SqlFilter | CorrelationFilter | TrueFilter | FalseFilter, message: Message
) -> bool:
    """Whether ``rule_filter`` lets ``message`` into the subscription."""
    if isinstance(rule_filter, TrueFilter):
        return True
    if isinstance(rule_filter, FalseFilter):
        return False
    if isinstance(rule_filter, SqlFilter):
        return parse_filter(rule_filter.expression).matches(message)
    return _correlation_matches(rule_filter, message)


def subscription_copies(rules: Iterable[RuleDescription], message: Message) -> list[Message]:
    """The messages a subscription with ``rules`` stores for ``message`` (maybe none)."""
    plain = False
    annotated: list[Message] = []
    for rule in rules:
        if not matches(rule.filter, message):
            continue
        if rule.action is None:
            plain = True
            continue
        copy = parse_action(rule.action.expression).apply(message)
        annotated.append(copy.model_copy(update={"application_properties": {
            **copy.application_properties, RULE_NAME_PROPERTY: rule.name}}))
    return ([message] if plain else []) + annotated
