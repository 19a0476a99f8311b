"""A rule's SQL checked before it is sent: the same parser the evaluator uses."""

from __future__ import annotations

from ..rules import RuleDescription, SqlFilter
from ._programs import parse_action, parse_filter

__all__ = ["check_rule"]


def check_rule(rule: RuleDescription) -> None:
    """Parse the rule's SQL filter and SQL action, if it has them; nothing is sent.

    ``add_rule`` sends a rule as it is given and the service refuses an expression it
    cannot parse (400); this finds the same faults first, with the line and column.

    Args:
        rule: The rule (a correlation, true or false filter has no SQL to check).

    Raises:
        SqlSyntaxError: The filter or the action is not valid Service Bus SQL; the
            message names the line, the column and the offending token.
    """
    if isinstance(rule.filter, SqlFilter):
        parse_filter(rule.filter.expression)
    if rule.action is not None:
        parse_action(rule.action.expression)
