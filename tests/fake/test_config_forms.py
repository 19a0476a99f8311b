"""Config.json as the emulator takes it: the forms its own files use load, what its schema
refuses is refused naming the JSON path, and (hypothesis) whatever its schema accepts loads.

The contract is the emulator's published JSON schema (the installer repository's
``ServiceBus-Emulator/Schema/Config-schema.json``). It is not copied here: its rules are
written below as hypothesis strategies, each with the schema rule it encodes. Three rules
beyond the schema's patterns are the emulator's and the service's, not the schema's, and the
strategies keep them: a forwarding target names an entity of the file (or is ""), entity
names are unique, and a duplicate-detection window is not zero (the schema's description:
"the minimum value is PT5S"). Issue 39 added the service's naming rules and ranges, one rule
for Config.json, the administration API and the test-facing API (fakes/_validation.py), and
the strategies keep those too: no empty, '.', '..' or 'Subscriptions' part between a queue's
or topic's slashes, no slash in a subscription or rule name, a lock duration from 5 s to
5 min, a history window from 20 s to 7 days.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import ConfigError, FakeNamespace
from fakes._config import load_config, parse_duration

CONFIG = Path(__file__).parent / "configs" / "every_form.json"


def test_the_forms_of_the_emulators_files_load() -> None:
    config = load_config(CONFIG)
    namespace = config.UserConfig.Namespaces[0]
    first, second, sessions, zero = namespace.Queues
    assert (first.Name, second.Name) == ("queue.1", "orders-eu_2/incoming")
    assert first.Properties.ForwardTo is None
    assert first.Properties.ForwardDeadLetteredMessagesTo is None
    assert second.Properties.ForwardDeadLetteredMessagesTo == "queue.1"
    assert second.Properties.DefaultMessageTimeToLive == timedelta(
        days=365 + 2 * 30 + 3, hours=4, minutes=5, seconds=6)
    assert sessions.Properties.RequiresSession
    assert zero.Properties.DefaultMessageTimeToLive == timedelta(0)
    assert config.UserConfig.Logging is not None and config.UserConfig.Logging.Type == "File"
    topic = namespace.Topics[0]
    rule = topic.Subscriptions[0].Rules[0].Properties.CorrelationFilter
    assert rule is not None and rule.ReplyTo == "http://example.test//reply"
    with FakeNamespace(CONFIG) as fake:
        for path in ("queue.1", "orders-eu_2/incoming", "topic.1",
                     "topic.1/Subscriptions/subscription.1", "topic.1/Subscriptions/all"):
            assert fake.accounting(path)


@pytest.mark.parametrize(("text", "expected"), [
    ("PT1M", timedelta(minutes=1)), ("P14D", timedelta(days=14)), ("P1Y", timedelta(days=365)),
    ("P2M", timedelta(days=60)), ("PT", timedelta(0)), ("P1DT2H3M4S", timedelta(
        days=1, hours=2, minutes=3, seconds=4)), ("PT0.5S", timedelta(seconds=0.5))])
def test_every_duration_form_the_schema_allows(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    """A small valid config with ``value`` set at ``path`` under its first queue or topic."""
    config: dict[str, Any] = {"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns", "Queues": [{"Name": "q", "Properties": {}}],
        "Topics": [{"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [
            {"Name": "r", "Properties": {"FilterType": "Sql",
                                         "SqlFilter": {"SqlExpression": "1=1"}}}]}]}]}],
        "Logging": {"Type": "Console"}}}
    target: Any = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return config


NS = ["UserConfig", "Namespaces", 0]


@pytest.mark.parametrize(("path", "value", "where"), [
    ([*NS, "Queues", 0, "Name"], "-q", "Queues[0].Name"),
    ([*NS, "Queues", 0, "Name"], "q/", "Queues[0].Name"),
    ([*NS, "Queues", 0, "Name"], "a b", "Queues[0].Name"),
    ([*NS, "Topics", 0, "Subscriptions", 0, "Name"], "s$", "Subscriptions[0].Name"),
    ([*NS, "Topics", 0, "Subscriptions", 0, "Rules", 0, "Name"], "$Default", "Rules[0].Name"),
    ([*NS, "Queues", 0, "Properties", "LockDuration"], "P", "Properties.LockDuration"),
    ([*NS, "Queues", 0, "Properties", "LockDuration"], "PT1H30", "Properties.LockDuration"),
    ([*NS, "Queues", 0, "Properties", "ForwardTo"], "-x", "Properties.ForwardTo"),
    (["UserConfig", "Logging", "Type"], "Syslog", "UserConfig.Logging.Type"),
    ([*NS, "Topics", 0, "Subscriptions", 0, "Rules", 0, "Properties", "FilterType"],
     "Correlation", "Rules[0].Properties"),
    ([*NS, "Topics", 0, "Subscriptions", 0, "Rules", 0, "Properties"],
     {"FilterType": "Correlation", "CorrelationFilter": {}},
     "Rules[0].Properties.CorrelationFilter"),
    ([*NS, "Queues", 0, "Properties", "ForwardTo"], "nowhere", "Properties.ForwardTo"),
    # the schema's enum and limits
    ([*NS, "Name"], "myns", "Namespaces[0].Name"),
    ([*NS, "Queues", 0, "Properties", "MaxDeliveryCount"], 11, "Properties.MaxDeliveryCount"),
    ([*NS, "Queues", 0, "Properties", "MaxDeliveryCount"], 0, "Properties.MaxDeliveryCount"),
    ([*NS, "Queues"], [{"Name": f"q{i}"} for i in range(51)], "Namespaces[0].Queues"),
    ([*NS, "Topics"], [{"Name": f"t{i}", "Subscriptions": [{"Name": "s"}]} for i in range(51)],
     "Namespaces[0].Topics"),
    ([*NS, "Topics", 0, "Subscriptions"], [], "Topics[0].Subscriptions"),
    ([*NS, "Topics", 0, "Subscriptions"], [{"Name": f"s{i}"} for i in range(51)],
     "Topics[0].Subscriptions"),
    ([*NS, "Topics", 0, "Subscriptions", 0, "Rules"],
     [{"Name": f"r{i}", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}}}
      for i in range(1001)], "Subscriptions[0].Rules"),
])
def test_what_the_schema_refuses_is_refused_naming_the_path(path: list[Any], value: Any,
                                                            where: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(where)):
        FakeNamespace(_with(path, value))


@pytest.mark.parametrize(("path", "where"), [
    (["UserConfig", "Logging"], "UserConfig.Logging"),
    ([*NS, "Queues"], "Namespaces[0].Queues"),
    ([*NS, "Topics"], "Namespaces[0].Topics"),
    ([*NS, "Topics", 0, "Subscriptions"], "Topics[0].Subscriptions"),
])
def test_what_the_schema_requires_is_refused_when_missing_naming_the_path(path: list[Any],
                                                                        where: str) -> None:
    config = _with([*NS, "Name"], "sbemulatorns")
    target: Any = config
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    with pytest.raises(ConfigError, match=re.escape(where)):
        FakeNamespace(config)


def test_a_correlation_property_no_amqp_value_can_hold_is_refused_naming_the_rule() -> None:
    rule = {"FilterType": "Correlation", "CorrelationFilter": {"Properties": {"n": 2**64}}}
    path = [*NS, "Topics", 0, "Subscriptions", 0, "Rules", 0, "Properties"]
    with pytest.raises(ConfigError, match=re.escape(
            "Subscriptions[0].Rules[0].Properties.CorrelationFilter")):
        FakeNamespace(_with(path, rule))


def test_json_that_is_not_json_is_refused_with_its_place() -> None:
    with pytest.raises(ConfigError, match=r"not valid JSON.*column"):
        load_config('{"UserConfig": {"Namespaces": [{"Name": "x" "Queues": []}]}}')


# --- the schema's rules as strategies ---------------------------------------------------

#: "^[A-Za-z0-9]$|^[A-Za-z0-9][\w-\.\/]*[A-Za-z0-9]$" (every entity and rule name)
names = st.from_regex(r"\A[A-Za-z0-9](?:[A-Za-z0-9_./-]{0,12}[A-Za-z0-9])?\Z")
#: "^P(?!$)(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?$"
durations = st.builds(
    lambda date, time: "P" + date + (("T" + time) if time is not None else ""),
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from("YMD")), max_size=3, unique_by=
             lambda part: part[1]).map(
        lambda parts: "".join(f"{n}{unit}" for n, unit in sorted(
            parts, key=lambda part: "YMD".index(part[1])))),
    st.none() | st.lists(st.tuples(st.integers(0, 90), st.sampled_from("HMS")), max_size=3,
                         unique_by=lambda part: part[1]).map(
        lambda parts: "".join(f"{n}{unit}" for n, unit in sorted(
            parts, key=lambda part: "HMS".index(part[1]))))).filter(lambda text: text != "P")
#: the window's description: "the minimum value is PT5S" (so never zero); the service's
#: range, 20 s to 7 days
windows = st.sampled_from(["PT20S", "PT10M", "P1DT2H", "P7D"]) | st.integers(
    20, 7 * 86400).map(lambda seconds: f"PT{seconds}S")
#: the service's LockDuration: 5 s to 5 min
lock_durations = st.sampled_from(["PT5S", "PT1M", "PT1M30S", "PT5M"]) | st.integers(
    5, 300).map(lambda seconds: f"PT{seconds}S")
#: the service's naming rules beyond the schema's pattern (fakes/_validation.py)
entity_names = names.filter(lambda name: all(
    part not in ("", ".", "..") and part.lower() != "subscriptions"
    for part in name.split("/")))
child_names = names.filter(lambda name: "/" not in name)
booleans = st.booleans()
#: MaxDeliveryCount: "minimum": 1, "maximum": 10
deliveries = st.integers(1, 10)
#: the SQL filters and actions the emulator's samples use (the schema takes any string; the
#: emulator parses it, as the fake does)
sql_filters = st.sampled_from(["1=1", "sys.MessageId = '123456' AND userProp1 = 'value1'",
                               "colour = 'red'", "sys.Label LIKE 'order%'", "amount > 10"])
sql_actions = st.sampled_from(["SET sys.To = 'Entity'", "SET stage = 2", "REMOVE colour"])
#: CorrelationFilter: the eight string properties and Properties, "minProperties": 1 each
correlation_fields = ["ContentType", "CorrelationId", "Label", "MessageId", "ReplyTo",
                      "ReplyToSessionId", "SessionId", "To"]
correlations = st.fixed_dictionaries({}, optional={
    **{name: st.text(max_size=8) for name in correlation_fields},
    "Properties": st.dictionaries(st.text(min_size=1, max_size=6),
                                  st.text(max_size=6) | st.booleans()
                                  | st.integers(-(2**63), 2**63 - 1),
                                  min_size=1, max_size=3)}).filter(bool)
rules = st.one_of(
    st.fixed_dictionaries({"FilterType": st.just("Correlation"),
                           "CorrelationFilter": correlations},
                          optional={"Action": st.builds(lambda s: {"SqlExpression": s},
                                                        sql_actions)}),
    st.fixed_dictionaries({"FilterType": st.just("Sql"),
                           "SqlFilter": st.builds(lambda s: {"SqlExpression": s}, sql_filters)},
                          optional={"Action": st.builds(lambda s: {"SqlExpression": s},
                                                        sql_actions)}))


def _queue_properties(targets: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "DeadLetteringOnMessageExpiration": booleans, "DefaultMessageTimeToLive": durations,
        "DuplicateDetectionHistoryTimeWindow": windows, "ForwardDeadLetteredMessagesTo":
        targets, "ForwardTo": targets, "LockDuration": lock_durations,
        "MaxDeliveryCount": deliveries, "RequiresDuplicateDetection": booleans,
        "RequiresSession": booleans})


def _subscription_properties(targets: st.SearchStrategy[str]
                             ) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "DeadLetteringOnMessageExpiration": booleans, "DefaultMessageTimeToLive": durations,
        "LockDuration": lock_durations, "MaxDeliveryCount": deliveries,
        "ForwardDeadLetteredMessagesTo": targets, "ForwardTo": targets,
        "RequiresSession": booleans})


topic_properties = st.fixed_dictionaries({}, optional={
    "DefaultMessageTimeToLive": durations, "DuplicateDetectionHistoryTimeWindow": windows,
    "RequiresDuplicateDetection": booleans})


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """A Config.json the schema accepts (with the three rules of the module's docstring)."""
    drawn = draw(st.lists(entity_names, min_size=1, max_size=6, unique_by=str.lower))
    split = draw(st.integers(0, len(drawn)))
    queue_names, topic_names = drawn[:split], drawn[split:]
    # a forwarding target: "" (none) or a queue or topic of the file
    targets = st.just("") | (st.sampled_from(queue_names + topic_names)
                             if drawn else st.just(""))

    def optional_properties(properties: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
        return {"Properties": draw(properties)} if draw(booleans) else {}

    queues = [{"Name": name, **optional_properties(_queue_properties(targets))}
              for name in queue_names]
    topics = []
    for name in topic_names:
        subscriptions = []
        for sub_name in draw(st.lists(child_names, min_size=1, max_size=3,
                                      unique_by=str.lower)):
            subscription: dict[str, Any] = {
                "Name": sub_name, **optional_properties(_subscription_properties(targets))}
            rule_names = draw(st.lists(child_names, max_size=3, unique_by=str.lower))
            if rule_names or draw(booleans):
                subscription["Rules"] = [{"Name": rule, "Properties": draw(rules)}
                                         for rule in rule_names]
            subscriptions.append(subscription)
        topics.append({"Name": name, **optional_properties(topic_properties),
                       "Subscriptions": subscriptions})
    return {"UserConfig": {
        "Namespaces": [{"Name": "sbemulatorns", "Queues": queues, "Topics": topics}],
        "Logging": {"Type": draw(st.sampled_from(
            ["File", "Console", "File,Console", "Console,File"]))}}}


def _with_comments(config: dict[str, Any], comment: str) -> str:
    """The config as the emulator's files are written: indented, with comments."""
    text = json.dumps(config, indent=2)
    return f"// {comment}\n/* a block\n   comment */\n" + text.replace(
        '"Namespaces": [', '"Namespaces": [ // the one namespace\n', 1)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(), st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=20))
def test_whatever_the_schema_accepts_the_fake_accepts(config: dict[str, Any],
                                                      comment: str) -> None:
    namespace = FakeNamespace(_with_comments(config, comment))
    spec = config["UserConfig"]["Namespaces"][0]
    for queue in spec["Queues"]:
        assert namespace.accounting(queue["Name"])["accepted"] == 0
    for topic in spec["Topics"]:
        assert namespace.accounting(topic["Name"])["accepted"] == 0
        for subscription in topic["Subscriptions"]:
            path = f"{topic['Name']}/Subscriptions/{subscription['Name']}"
            assert namespace.accounting(path)["accepted"] == 0
