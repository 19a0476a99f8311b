"""SQL and correlation rules in the fake's topic fan-out, through sbmgmt's client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes import ConfigError, FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.errors import BadRequestError
from sbmgmt.message import Message
from sbmgmt.rules import CorrelationFilter, SqlFilter, SqlRuleAction

SUBS = ("red", "big", "corr", "none")


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_topic("t")
        for name in SUBS:
            namespace.add_subscription("t", name, rules=[])
        yield namespace


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
        yield c


def _bodies(client: ManagementClient, path: str) -> list[bytes]:
    return [m.body for m in client.entity(path).peek_messages(max_count=50)
            if isinstance(m.body, bytes)]


def _sub(name: str) -> str:
    return f"t/Subscriptions/{name}"


def test_sql_and_correlation_rules_select_different_messages(
        fake: FakeNamespace, client: ManagementClient) -> None:
    client.entity(_sub("red")).add_rule("red", SqlFilter(expression="color = 'red'"))
    client.entity(_sub("big")).add_rule(
        "big", SqlFilter(expression="quantity > 10 AND sys.Label LIKE 'order%'"))
    client.entity(_sub("corr")).add_rule(
        "corr", CorrelationFilter(correlation_id="c1", properties={"color": "blue"}))
    fake.send("t",
              Message(body=b"1", subject="order-1", correlation_id="c1",
                      application_properties={"color": "red", "quantity": 20}),
              Message(body=b"2", subject="order-2", correlation_id="c1",
                      application_properties={"color": "blue", "quantity": 5}),
              Message(body=b"3", subject="note", application_properties={"quantity": 50}),
              Message(body=b"4", correlation_id="c2", application_properties={"color": "blue"}))
    assert _bodies(client, _sub("red")) == [b"1"]
    assert _bodies(client, _sub("big")) == [b"1"]
    assert _bodies(client, _sub("corr")) == [b"2"]
    assert _bodies(client, _sub("none")) == []
    assert fake.accounting("t") == {"accepted": 4, "fanned_out": 2, "unmatched": 2,
                                    "duplicate": 0}


@pytest.mark.parametrize(("field", "value"), [
    ("correlation_id", "x"), ("message_id", "x"), ("to", "x"), ("reply_to", "x"),
    ("subject", "x"), ("session_id", "x"), ("reply_to_session_id", "x"), ("content_type", "x"),
])
def test_correlation_filters_on_each_system_property(
        fake: FakeNamespace, client: ManagementClient, field: str, value: str) -> None:
    client.entity(_sub("corr")).add_rule(
        "one", CorrelationFilter.model_validate({field: value}))
    fake.send("t", Message.model_validate({"body": b"yes", field: value}),
              Message.model_validate({"body": b"no", field: "y"}), Message(body=b"unset"))
    assert _bodies(client, _sub("corr")) == [b"yes"]


def test_correlation_property_must_be_present_and_equal(
        fake: FakeNamespace, client: ManagementClient) -> None:
    client.entity(_sub("corr")).add_rule("n", CorrelationFilter(properties={"n": 1, "k": "v"}))
    fake.send("t", Message(body=b"a", application_properties={"n": 1, "k": "v"}),
              Message(body=b"b", application_properties={"n": 2, "k": "v"}),
              Message(body=b"c", application_properties={"n": 1}))
    assert _bodies(client, _sub("corr")) == [b"a"]


def test_actions_edit_the_delivered_copy_and_rules_without_actions_give_one_copy(
        fake: FakeNamespace, client: ManagementClient) -> None:
    sub = client.entity(_sub("red"))
    sub.add_rule("plain1", SqlFilter(expression="color = 'red'"))
    sub.add_rule("plain2", SqlFilter(expression="EXISTS(color)"))
    sub.add_rule("half", SqlFilter(expression="quantity > 1"),
                 SqlRuleAction(expression="SET quantity = quantity / 2; REMOVE color"))
    sub.add_rule("tag", SqlFilter(expression="1=1"),
                 SqlRuleAction(expression="SET sys.Label = 'tagged'"))
    fake.send("t", Message(body=b"x", application_properties={"color": "red", "quantity": 10}))
    copies = sub.peek_messages(max_count=10)
    assert len(copies) == 3       # one for both plain rules, one per rule with an action
    plain, half, tag = copies
    assert plain.application_properties == {"color": "red", "quantity": 10}
    assert half.application_properties == {"quantity": 5, "RuleName": "half"}
    assert tag.subject == "tagged"
    assert tag.application_properties["RuleName"] == "tag"
    assert fake.accounting(_sub("red"))["active"] == 3


def test_add_rule_refuses_a_filter_that_does_not_parse(client: ManagementClient) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.entity(_sub("red")).add_rule("bad", SqlFilter(expression="color = = 'red'"))
    assert caught.value.error_condition == "com.microsoft:argument-error"
    assert "line 1, column" in str(caught.value)
    assert [r.name for r in client.entity(_sub("red")).list_rules()] == []


def test_add_rule_refuses_an_action_that_does_not_parse(client: ManagementClient) -> None:
    with pytest.raises(BadRequestError, match="column"):
        client.entity(_sub("red")).add_rule("bad", SqlFilter(expression="1=1"),
                                            SqlRuleAction(expression="SET = 3"))


def _config(rule_properties: dict[str, object]) -> dict[str, object]:
    return {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [], "Topics": [{
        "Name": "t", "Properties": {}, "Subscriptions": [{
            "Name": "s", "Properties": {},
            "Rules": [{"Name": "ok", "Properties": {"FilterType": "Sql",
                                                    "SqlFilter": {"SqlExpression": "1=1"}}},
                      {"Name": "r", "Properties": rule_properties}]}]}]}],
        "Logging": {"Type": "File"}}}


def test_config_refuses_a_bad_sql_filter_naming_the_path() -> None:
    config = _config({"FilterType": "Sql", "SqlFilter": {"SqlExpression": "a >"}})
    with pytest.raises(ConfigError, match=r"Topics\[0\]\.Subscriptions\[0\]\.Rules\[1\]"
                                          r"\.Properties\.SqlFilter\.SqlExpression: SQL syntax"):
        FakeNamespace(config)


def test_config_refuses_a_bad_action_naming_the_path() -> None:
    config = _config({"FilterType": "Correlation", "CorrelationFilter": {"Label": "x"},
                      "Action": {"SqlExpression": "SET"}})
    with pytest.raises(ConfigError, match=r"Rules\[1\]\.Properties\.Action\.SqlExpression"):
        FakeNamespace(config)


def test_config_sql_rules_filter_and_act() -> None:
    config = _config({"FilterType": "Sql", "SqlFilter": {"SqlExpression": "n > 1"},
                      "Action": {"SqlExpression": "SET n = 0"}})
    namespace = FakeNamespace(config)
    namespace.send("t", Message(body=b"a", application_properties={"n": 2}),
                   Message(body=b"b", application_properties={"n": 1}))
    assert namespace.accounting("t/Subscriptions/s")["active"] == 3
