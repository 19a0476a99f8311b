"""A correlation filter's duration-typed property (a .NET ``TimeSpan``): the administration API
stores it and gives it back (azure-servicebus ``mgmt_tests/test_mgmt_rules.py``,
``test_mgmt_rule_create``: ``properties={"key_duration": timedelta(days=1, hours=2,
minutes=3)}`` read back equal), and AMQP clients see the same rule
(``com.microsoft:timespan``, sbmgmt.amqp.values)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from azure.core.exceptions import HttpResponseError
from azure.servicebus.management import CorrelationRuleFilter, ServiceBusAdministrationClient
from proton import Described

from fakes import FakeNamespace
from fakes._admin._durations import duration_ticks, ticks_duration
from sbmgmt import CorrelationFilter, ManagementClient
from sbmgmt.amqp.values import TIMESPAN_DESCRIPTOR, timedelta_from_ticks
from sbmgmt.errors import ProtocolError
from sbmgmt.ops import enumerate_rules
from sbmgmt.rules import RuleDescription

#: The SDK test's value, then a negative one and one with a fraction of a second.
DURATIONS = {"key_duration": timedelta(days=1, hours=2, minutes=3),
             "behind": timedelta(seconds=-90), "fine": timedelta(seconds=1, microseconds=500)}


def _topic_and_subscription(admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t")
    admin.create_subscription("t", "s")


def test_a_duration_property_is_stored_and_read_back(
        admin: ServiceBusAdministrationClient) -> None:
    _topic_and_subscription(admin)
    created = admin.create_rule("t", "s", "durations", filter=CorrelationRuleFilter(
        properties={**DURATIONS, "key_string": "str1"}))
    assert isinstance(created.filter, CorrelationRuleFilter)
    assert created.filter.properties == {**DURATIONS, "key_string": "str1"}
    fetched = admin.get_rule("t", "s", "durations")
    assert isinstance(fetched.filter, CorrelationRuleFilter)
    assert fetched.filter.properties == {**DURATIONS, "key_string": "str1"}
    listed = {rule.name: rule for rule in admin.list_rules("t", "s")}["durations"]
    assert isinstance(listed.filter, CorrelationRuleFilter)
    assert listed.filter.properties["key_duration"] == DURATIONS["key_duration"]


def test_amqp_clients_see_the_same_durations(
        admin: ServiceBusAdministrationClient, fake: FakeNamespace) -> None:
    _topic_and_subscription(admin)
    admin.create_rule("t", "s", "over-http",
                      filter=CorrelationRuleFilter(properties=DURATIONS))
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        subscription = client.entity("t/Subscriptions/s")
        subscription.add_rule("over-amqp", CorrelationFilter(
            properties={"window": timedelta(hours=-3, microseconds=7)}))
        rules = {rule.name: rule.filter for rule in subscription.list_rules()}
    assert rules["over-http"] == CorrelationFilter(properties=DURATIONS)
    assert rules["over-amqp"] == CorrelationFilter(
        properties={"window": timedelta(hours=-3, microseconds=7)})
    fetched = admin.get_rule("t", "s", "over-amqp")
    assert isinstance(fetched.filter, CorrelationRuleFilter)
    assert fetched.filter.properties == {"window": timedelta(hours=-3, microseconds=7)}


def test_a_duration_beyond_a_timespan_is_refused(admin: ServiceBusAdministrationClient) -> None:
    _topic_and_subscription(admin)
    with pytest.raises(HttpResponseError, match="TimeSpan") as raised:
        admin.create_rule("t", "s", "far", filter=CorrelationRuleFilter(
            properties={"far": timedelta(days=20_000_000)}))
    assert raised.value.status_code == 400
    with pytest.raises(ValueError, match="TimeSpan"):
        CorrelationFilter(properties={"far": timedelta(days=20_000_000)})


@pytest.mark.parametrize(("text", "ticks"), [
    ("P1DT2H3M", (86400 + 2 * 3600 + 3 * 60) * 10**7),
    ("-PT1M30S", -90 * 10**7),
    ("PT0.0000001S", 1),
    ("PT0S", 0),
    ("P10675199DT2H48M5.4775807S", 2**63 - 1),
])
def test_durations_are_written_as_xml_convert_writes_a_timespan(text: str, ticks: int) -> None:
    assert duration_ticks(text) == ticks
    assert ticks_duration(ticks) == text


def test_the_amqp_timespan_is_a_described_long_of_ticks() -> None:
    rule = RuleDescription(name="r", filter=CorrelationFilter(
        properties={"d": timedelta(days=1, hours=2, minutes=3)}))
    _, body = enumerate_rules.encode_response(enumerate_rules.Response(rules=(rule,)))
    described = body["rules"][0]["rule-description"].value[0].value[8]["d"]
    assert described == Described(TIMESPAN_DESCRIPTOR, 937_800_000_000)
    assert enumerate_rules.decode(200, {}, body).rules == (rule,)
    assert timedelta_from_ticks(15) == timedelta(microseconds=2)  # to the nearest µs
    body["rules"][0]["rule-description"].value[0].value[8]["d"] = Described(
        TIMESPAN_DESCRIPTOR, "P1D")
    with pytest.raises(ProtocolError, match=r"com\.microsoft:timespan must hold a long"):
        enumerate_rules.decode(200, {}, body)
