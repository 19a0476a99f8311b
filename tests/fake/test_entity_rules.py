"""The subscription's rule records (fakes/_entity_rules.py): one record per rule, replaced or
removed as a whole, every change dating the subscription; the errors both ways in share."""

from __future__ import annotations

import pytest

from fakes._entity import Entity
from fakes._entity_rules import SentSql, StoredRule
from fakes._entity_state import EntitySettings
from fakes._errors import ArgumentError, EntityAlreadyExists, EntityNotFound
from sbmgmt.rules import RuleDescription, SqlFilter

BOUND = RuleDescription(name="owner", filter=SqlFilter(expression="owner = 'o''brien'"))
SENT = SentSql("owner = @owner", {"@owner": "o'brien"})


def _subscription() -> Entity:
    return Entity("t/Subscriptions/s", EntitySettings())


def test_a_record_keeps_what_was_sent_through_every_copy_of_its_rule() -> None:
    subscription = _subscription()
    added = subscription.add_rule(StoredRule(BOUND, SENT), now=100.0)
    assert added.rule is not BOUND and added.rule.created_at is not None  # dated: a copy
    assert added.sent_filter == SENT
    replaced = subscription.replace_rule(StoredRule(BOUND, SENT), now=200.0)
    assert replaced.rule.created_at == added.rule.created_at  # a copy again
    assert subscription.stored_rule("owner").sent_filter == SENT
    assert subscription.updated_at == 200.0


def test_a_removed_rule_leaves_nothing_behind() -> None:
    subscription = _subscription()
    subscription.add_rule(StoredRule(BOUND, SENT), now=100.0)
    subscription.remove_rule("owner", now=150.0)
    assert [rule.name for rule in subscription.rules()] == ["$Default"]
    assert subscription.updated_at == 150.0
    plain = subscription.add_rule(StoredRule(BOUND), now=160.0)
    assert plain.sent_filter is None
    assert subscription.stored_rule("owner").sent_filter is None


def test_the_errors_are_the_services() -> None:
    subscription = _subscription()
    with pytest.raises(EntityAlreadyExists, match="t/Subscriptions/s/Rules/\\$Default"):
        subscription.add_rule(StoredRule(RuleDescription(name="$Default",
                                                         filter=SqlFilter(expression="1=1"))), 1.0)
    with pytest.raises(EntityNotFound, match="t/Subscriptions/s/Rules/none"):
        subscription.remove_rule("none", 1.0)
    with pytest.raises(EntityNotFound):
        subscription.replace_rule(StoredRule(BOUND), 1.0)
    with pytest.raises(ArgumentError, match="'bad' is not valid"):
        subscription.add_rule(StoredRule(RuleDescription(
            name="bad", filter=SqlFilter(expression="a = = 1"))), 1.0)
    assert [rule.name for rule in subscription.rules()] == ["$Default"]
    assert subscription.updated_at == 0.0
