"""Subscription rule commands: list, add, remove."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import typer

from ..client import EntityClient
from ..rules import CorrelationFilter, RuleDescription, SqlFilter, SqlRuleAction
from ._command import command, group
from ._exit import UsageProblem
from ._input import correlation_filter, entity_path
from ._messages import DryRun
from ._render import RULE_COLUMNS, outcome, rule_record
from ._state import CliState

__all__ = ["all_rules", "register", "rules", "subscription_path"]

_PAGE = 100

rules = group("rules", "List, add and remove subscription rules.")

Subscription = Annotated[
    str, typer.Argument(help="TOPIC/Subscriptions/SUB (or the short form TOPIC/SUB).")
]
RuleName = Annotated[str, typer.Argument(help="The rule's name.")]


def subscription_path(text: str) -> str:
    """``topic/Subscriptions/sub`` from itself or from the short form ``topic/sub``
    (:func:`sbmgmt.cli._input.entity_path`, the one parser)."""
    path = entity_path(text)
    parts = path.split("/")
    if len(parts) == 3 and parts[1].lower() == "subscriptions":
        return path
    raise UsageProblem(f"{text!r} is not a subscription: use TOPIC/Subscriptions/SUB")


def all_rules(entity: EntityClient) -> Iterator[RuleDescription]:
    """Every rule of a subscription, page by page."""
    skip = 0
    while True:
        page = entity.list_rules(skip=skip, top=_PAGE)
        yield from page
        if len(page) < _PAGE:
            return
        skip += len(page)


@command(rules, "list")
def rules_list(ctx: typer.Context, subscription: Subscription) -> None:
    """List a subscription's rules.

    Example: sbmgmt rules list events/Subscriptions/audit -o json
    """
    state = CliState.of(ctx)
    client = state.entity(subscription_path(subscription))
    state.renderer.records((rule_record(rule) for rule in all_rules(client)), RULE_COLUMNS,
                           empty="no rules")


@command(rules, "add")
def rules_add(
    ctx: typer.Context,
    subscription: Subscription,
    name: RuleName,
    sql: Annotated[
        str | None, typer.Option("--sql", help="A SQL filter expression.")
    ] = None,
    correlation: Annotated[
        list[str] | None,
        typer.Option("--correlation", help="A correlation filter pair key=value (or key:=json "
                     "for a typed property); repeatable. System keys: correlation_id, "
                     "message_id, to, reply_to, subject, session_id, reply_to_session_id, "
                     "content_type; other keys (or property.KEY) are application properties."),
    ] = None,
    action: Annotated[
        str | None, typer.Option("--action", help="A SQL rule action (SET / REMOVE ...).")
    ] = None,
) -> None:
    """Add a rule to a subscription, with a SQL or a correlation filter.

    Example: sbmgmt rules add events/audit big --sql "amount > 100"

    Example: sbmgmt rules add events/audit vip --sql vip=1 --action "SET tier='A'"
    """
    if (sql is None) == (not correlation):
        raise UsageProblem("give either --sql or --correlation (one or more pairs)")
    rule_filter: SqlFilter | CorrelationFilter = (
        SqlFilter(expression=sql) if sql is not None else correlation_filter(correlation or [])
    )
    rule_action = None if action is None else SqlRuleAction(expression=action)
    state = CliState.of(ctx)
    state.entity(subscription_path(subscription)).add_rule(name, rule_filter, rule_action)
    state.renderer.record(
        rule_record(RuleDescription(name=name, filter=rule_filter, action=rule_action)),
        RULE_COLUMNS[:3],
    )


@command(rules, "remove")
def rules_remove(
    ctx: typer.Context, subscription: Subscription, name: RuleName, dry_run: DryRun = False
) -> None:
    """Remove a rule from a subscription.

    Example: sbmgmt rules remove events/Subscriptions/audit big --dry-run
    """
    state = CliState.of(ctx)
    path = subscription_path(subscription)
    if not dry_run:
        state.entity(path).remove_rule(name)
    state.renderer.done(
        outcome(dry_run, f"remove the rule {name} of {path}",
                f"removed the rule {name} of {path}"),
        {"name": name, "dry_run": dry_run},
    )


def register(app: typer.Typer) -> None:
    """Add the rules group to the root app."""
    app.add_typer(rules)
