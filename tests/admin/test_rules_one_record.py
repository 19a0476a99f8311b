"""A subscription's rules are one record whichever way they change: a rule added or removed
over AMQP is what the administration API reports (and dates the subscription), and a rule
with SQL parameters keeps them through an update and a copy to another subscription."""

from __future__ import annotations

import time

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.servicebus.management import (
    ServiceBusAdministrationClient,
    SqlRuleAction,
    SqlRuleFilter,
)

from fakes import FakeNamespace
from sbmgmt import ManagementClient, SqlFilter

PARAMETERS = {"@owner": "o'brien"}


def _amqp(fake: FakeNamespace) -> ManagementClient:
    return ManagementClient.from_connection_string(fake.connection_string)


def _with_a_parameterised_rule(admin: ServiceBusAdministrationClient) -> None:
    """Topic ``t``, subscription ``s``, and its rule ``owner`` with a SQL parameter."""
    admin.create_topic("t")
    admin.create_subscription("t", "s")
    admin.create_rule("t", "s", "owner", filter=SqlRuleFilter("owner = @owner",
                                                               parameters=PARAMETERS))


def test_an_amqp_rule_removal_reads_back_through_the_api(
        admin: ServiceBusAdministrationClient, fake: FakeNamespace) -> None:
    _with_a_parameterised_rule(admin)
    before = admin.get_subscription_runtime_properties("t", "s").updated_at_utc
    time.sleep(0.05)  # the API's times are in milliseconds
    with _amqp(fake) as client:
        client.entity("t/Subscriptions/s").remove_rule("owner")
    with pytest.raises(ResourceNotFoundError):
        admin.get_rule("t", "s", "owner")
    assert [rule.name for rule in admin.list_rules("t", "s")] == ["$Default"]
    removed = admin.get_subscription_runtime_properties("t", "s").updated_at_utc
    assert before is not None and removed is not None and removed > before

    time.sleep(0.05)
    with _amqp(fake) as client:  # the same name again, over AMQP, without parameters
        client.entity("t/Subscriptions/s").add_rule("owner", SqlFilter(expression="owner = 'x'"))
    again = admin.get_rule("t", "s", "owner")
    assert isinstance(again.filter, SqlRuleFilter)
    assert again.filter.sql_expression == "owner = 'x'"
    assert not again.filter.parameters
    added = admin.get_subscription_runtime_properties("t", "s").updated_at_utc
    assert added is not None and added > removed


def test_a_rule_removed_through_the_api_is_gone_over_amqp(
        admin: ServiceBusAdministrationClient, fake: FakeNamespace) -> None:
    _with_a_parameterised_rule(admin)
    admin.delete_rule("t", "s", "owner")
    with _amqp(fake) as client:
        subscription = client.entity("t/Subscriptions/s")
        assert [rule.name for rule in subscription.list_rules()] == ["$Default"]
        subscription.add_rule("owner", SqlFilter(expression="owner = 'x'"))
    fetched = admin.get_rule("t", "s", "owner")
    assert isinstance(fetched.filter, SqlRuleFilter) and not fetched.filter.parameters


def test_an_updated_rule_keeps_its_parameters_and_creation_time(
        admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t")
    admin.create_subscription("t", "s")
    created = admin.create_rule("t", "s", "owner", filter=SqlRuleFilter(
        "owner = @owner", parameters=PARAMETERS))
    time.sleep(0.05)
    rule = admin.get_rule("t", "s", "owner")
    rule.action = SqlRuleAction("SET tier = @tier", parameters={"@tier": "gold"})
    admin.update_rule("t", "s", rule)
    fetched = admin.get_rule("t", "s", "owner")
    assert isinstance(fetched.filter, SqlRuleFilter)
    assert fetched.filter.sql_expression == "owner = @owner"
    assert fetched.filter.parameters == PARAMETERS
    assert fetched.action is not None and fetched.action.parameters == {"@tier": "gold"}
    assert fetched.created_at_utc == created.created_at_utc


def test_a_rule_copied_to_another_subscription_keeps_its_parameters(
        admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t")
    admin.create_subscription("t", "a")
    admin.create_subscription("t", "b")
    admin.create_rule("t", "a", "owner", filter=SqlRuleFilter("owner = @owner",
                                                               parameters=PARAMETERS),
                      action=SqlRuleAction("SET tier = @tier", parameters={"@tier": "gold"}))
    original = admin.get_rule("t", "a", "owner")
    admin.create_rule("t", "b", "owner", filter=original.filter, action=original.action)
    copied = admin.get_rule("t", "b", "owner")
    assert isinstance(copied.filter, SqlRuleFilter)
    assert copied.filter.sql_expression == "owner = @owner"
    assert copied.filter.parameters == PARAMETERS
    assert copied.action is not None and copied.action.parameters == {"@tier": "gold"}
