"""The topology round trip (issue 62's "Done when"), with hypothesis.

A namespace of random queues, topics, subscriptions and rules, every property the
administration API has within the service's ranges, is made on a fake through the official
administration client (not through sbmgmt). Then: exported, the file valid by the emulator's
schema (tests/topology/emulator_schema.py), a fresh fake started from the file exports the
same file byte for byte; applied to an empty fake, the official client lists the same
entities with the same properties and rules; a second apply has nothing to do; with
extra entities and a rule added, ``--prune`` deletes exactly those.

The namespace is Standard or Premium at random: Premium's entities have sizes up to 80 GB,
no partitioning, and ``MaxMessageSizeInKilobytes`` (1,024 to 102,400; Standard refuses it,
as the service does). Queues and topics carry shared access rules (names and rights; their
keys are secrets the file does not hold, so the listings compare names and rights).

Left out of the random properties, each for a reason the test cannot change:
durations with fractions of a second (the emulator's pattern has none), a duplicate-detection
window on an entity that detects no duplicates (the fake's administration API keeps it, its
Config.json path does not: a difference between the fake's two ways in, reported).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import jsonschema
from azure.servicebus.management import (
    AccessRights,
    AuthorizationRule,
    CorrelationRuleFilter,
    ServiceBusAdministrationClient,
    SqlRuleAction,
    SqlRuleFilter,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import FakeNamespace
from sbmgmt.actions import topology
from sbmgmt.actions.entities import admin_client

from .emulator_schema import EMULATOR_SCHEMA

NAMES = st.from_regex(r"\A[a-z][a-z0-9]{0,5}\Z")
WORDS = st.from_regex(r"\A[A-Za-z][A-Za-z0-9 ._-]{0,10}\Z")


def seconds(low: int, high: int) -> st.SearchStrategy[timedelta]:
    return st.integers(low, high).map(lambda n: timedelta(seconds=n))


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


DAY = 86400
#: The service's ranges (Microsoft Learn's quotas and the administration client's docs):
#: lock 5 s to 5 min, a time to live from 1 s, duplicate detection 20 s to 7 days,
#: auto-delete from 5 min, sizes 1-5 GB on Standard, deliveries from 1.
COMMON = {
    "default_message_time_to_live": maybe(seconds(1, 30 * DAY)),
    "enable_batched_operations": st.booleans(),
    "auto_delete_on_idle": maybe(seconds(300, 30 * DAY)),
    "user_metadata": maybe(WORDS),
}
#: Shared access rules: "12 per namespace, queue, or topic" (quotas); a name and rights,
#: keys made here (the service's form: 44 characters of base64).
AUTHORIZATION_RULES = st.lists(
    st.builds(lambda name, rights, key: AuthorizationRule(
        type="SharedAccessAuthorizationRule", claim_type="SharedAccessKey", claim_value="None",
        key_name=name, rights=sorted(rights), primary_key=key, secondary_key=key[::-1]),
        NAMES, st.sets(st.sampled_from([AccessRights.LISTEN, AccessRights.SEND,
                                        AccessRights.MANAGE]), min_size=1),
        st.from_regex(r"\A[A-Za-z0-9+/]{43}=\Z")),
    max_size=3, unique_by=lambda rule: rule.key_name)
QUEUE_TOPIC = {
    **COMMON,
    "max_size_in_megabytes": st.sampled_from([1024, 2048, 3072, 4096, 5120]),
    "requires_duplicate_detection": st.booleans(),
    "duplicate_detection_history_time_window": seconds(20, 7 * DAY),
    "enable_partitioning": st.booleans(),
    "enable_express": st.booleans(),
    "authorization_rules": AUTHORIZATION_RULES,
}
#: Premium's differences (quotas; service-bus-premium-messaging): entities up to 80 GB, no
#: partitioned entities (the namespace is partitioned instead), and each queue's or topic's
#: message size set between 1,024 and 102,400 KB.
PREMIUM = {
    "max_size_in_megabytes": st.sampled_from([1024, 5120, 10240, 20480, 40960, 81920]),
    "enable_partitioning": st.just(False),
    "max_message_size_in_kilobytes": st.integers(1024, 102_400),
}
QUEUE_SUBSCRIPTION = {
    "lock_duration": seconds(5, 300),
    "max_delivery_count": st.integers(1, 2000),
    "requires_session": st.booleans(),
    "dead_lettering_on_message_expiration": st.booleans(),
}
QUEUE = {**QUEUE_TOPIC, **QUEUE_SUBSCRIPTION}
TOPIC = {**QUEUE_TOPIC, "support_ordering": st.booleans(),
         "filtering_messages_before_publishing": st.booleans()}
SUBSCRIPTION = {**COMMON, **QUEUE_SUBSCRIPTION,
                "dead_lettering_on_filter_evaluation_exceptions": st.booleans()}
STATUSES = {"queue": ["Active", "Disabled", "SendDisabled", "ReceiveDisabled"],
            "topic": ["Active", "Disabled", "SendDisabled"],
            "subscription": ["Active", "Disabled", "ReceiveDisabled"]}

VALUES = st.integers(-(2**31), 2**31 - 1) | WORDS | st.booleans() | st.sampled_from([1.5, -0.25])
SQL_FILTERS = st.builds(lambda name, value, op: f"{name} {op} {value}", NAMES,
                        st.integers(0, 1000), st.sampled_from(["=", ">", "<>"])) | st.just("1=1")
SQL_FILTER = st.builds(SqlRuleFilter, SQL_FILTERS)
CORRELATION = st.builds(
    CorrelationRuleFilter, correlation_id=maybe(WORDS), message_id=maybe(WORDS),
    to=maybe(WORDS), reply_to=maybe(WORDS), label=maybe(WORDS), session_id=maybe(WORDS),
    reply_to_session_id=maybe(WORDS), content_type=maybe(WORDS),
    properties=maybe(st.dictionaries(NAMES, VALUES, min_size=1, max_size=2)),
).filter(lambda f: any(getattr(f, a) for a in ("correlation_id", "message_id", "to",
                                                "reply_to", "label", "session_id",
                                                "reply_to_session_id", "content_type",
                                                "properties")))
ACTIONS = maybe(st.builds(lambda name, value: SqlRuleAction(f"SET {name} = {value}"),
                          NAMES, st.integers(0, 99)))
RULES = st.lists(st.tuples(NAMES, SQL_FILTER | CORRELATION, ACTIONS), min_size=1,
                 max_size=2, unique_by=lambda rule: rule[0])


@st.composite
def properties(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]],
               targets: list[str], tier: str) -> dict[str, Any]:
    if tier == "premium" and "max_size_in_megabytes" in fields:
        fields = {**fields, **PREMIUM}
    chosen = {name: draw(strategy) for name, strategy in fields.items()}
    if not chosen.get("authorization_rules"):
        chosen.pop("authorization_rules", None)
    if chosen.get("enable_partitioning"):  # a partitioned entity's size: 16 partitions'
        chosen["max_size_in_megabytes"] *= 16
    if not chosen.get("requires_duplicate_detection"):  # the window of no detection: the
        chosen.pop("duplicate_detection_history_time_window", None)  # fake keeps none
    if "lock_duration" in fields and targets:
        chosen["forward_to"] = draw(maybe(st.sampled_from(targets)))
        chosen["forward_dead_lettered_messages_to"] = draw(maybe(st.sampled_from(targets)))
    return {name: value for name, value in chosen.items() if value is not None}


@st.composite
def namespaces(draw: st.DrawFn) -> tuple[str, list[tuple[str, Any, dict[str, Any], str]]]:
    """The tier, and what to create, in order: (kind, name or (topic, sub) or (topic, sub,
    rules), properties, status); forwarding only to queues made before."""
    tier = draw(st.sampled_from(["standard", "premium"]))
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    queue_count = draw(st.integers(0, len(names)))
    made: list[tuple[str, Any, dict[str, Any], str]] = []
    queues: list[str] = []
    for name in names[:queue_count]:
        made.append(("queue", name, draw(properties(QUEUE, queues, tier)),
                     draw(st.sampled_from(STATUSES["queue"]))))
        queues.append(name)
    for topic in names[queue_count:]:
        made.append(("topic", topic, draw(properties(TOPIC, [], tier)),
                     draw(st.sampled_from(STATUSES["topic"]))))
        for sub in draw(st.lists(NAMES, min_size=1, max_size=2, unique=True)):
            made.append(("subscription", (topic, sub), draw(properties(SUBSCRIPTION, queues, tier)),
                         draw(st.sampled_from(STATUSES["subscription"]))))
            keep_default = draw(st.booleans())
            made.append(("rules", (topic, sub, draw(RULES), keep_default), {}, ""))
    return tier, made


def make(client: ServiceBusAdministrationClient,
         plan: list[tuple[str, Any, dict[str, Any], str]]) -> None:
    """Create the namespace with the official client alone (statuses by an update)."""
    for kind, name, props, status in plan:
        if kind == "queue":
            client.create_queue(name, **props)
            model = client.get_queue(name)
            model.status = status
            client.update_queue(model)
        elif kind == "topic":
            client.create_topic(name, **props)
            model = client.get_topic(name)
            model.status = status
            client.update_topic(model)
        elif kind == "subscription":
            client.create_subscription(*name, **props)
            model = client.get_subscription(*name)
            model.status = status
            client.update_subscription(name[0], model)
        else:
            topic, sub, rules, keep_default = name
            for rule, flt, action in rules:
                if rule.lower() != "$default":
                    client.create_rule(topic, sub, rule, filter=flt, action=action)
            if not keep_default:
                client.delete_rule(topic, sub, "$Default")


def client_of(namespace: FakeNamespace) -> ServiceBusAdministrationClient:
    return admin_client(connection_string=namespace.connection_string,
                        http_port=namespace.http_port, timeout=10)


def _plain(model: Any) -> dict[str, Any]:
    """A model as comparable values: forwarding by entity name (the URL names the host)."""
    values = dict(model)
    for key in ("forward_to", "forward_dead_lettered_messages_to"):
        if values.get(key):
            values[key] = values[key].rsplit("/", 1)[-1]
    if "authorization_rules" in values:  # names and rights: the keys stay in the namespace
        values["authorization_rules"] = sorted(
            (rule.key_name, sorted(str(getattr(r, "value", r)) for r in rule.rights or ()))
            for rule in values["authorization_rules"] or ())
    return values


def _rule(rule: Any) -> tuple[Any, ...]:
    flt = rule.filter
    shown = (("sql", flt.sql_expression, flt.parameters) if hasattr(flt, "sql_expression")
             else ("correlation", *(getattr(flt, a) for a in (
                 "correlation_id", "message_id", "to", "reply_to", "label", "session_id",
                 "reply_to_session_id", "content_type")), flt.properties))
    action = rule.action.sql_expression if rule.action else None
    return rule.name, shown, action


def listing(client: ServiceBusAdministrationClient) -> dict[str, Any]:
    """Every entity's properties and every rule, as the official client lists them."""
    found: dict[str, Any] = {f"queue {q.name}": _plain(q) for q in client.list_queues()}
    for topic in client.list_topics():
        found[f"topic {topic.name}"] = {k: v for k, v in _plain(topic).items()
                                        if k != "size_in_bytes"}
        for sub in client.list_subscriptions(topic.name):
            found[f"subscription {topic.name}/{sub.name}"] = _plain(sub)
            found[f"rules {topic.name}/{sub.name}"] = sorted(
                _rule(r) for r in client.list_rules(topic.name, sub.name))
    return found


def fakes(count: int, tier: str) -> Iterator[FakeNamespace]:
    """Empty fakes of ``tier`` on loopback with their HTTP port (stopped by the caller)."""
    for _ in range(count):
        yield FakeNamespace(http_port=0, tier=tier).start()


def exported(namespace: FakeNamespace) -> str:
    with client_of(namespace) as client:
        return topology.write_topology(topology.export_topology(client))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(namespaces())
def test_export_start_export_apply_apply_prune(drawn: tuple[str, list[Any]]) -> None:
    tier, plan = drawn
    source, empty = fakes(2, tier)
    started: FakeNamespace | None = None
    try:
        with client_of(source) as client:
            make(client, plan)
            wanted = listing(client)
        text = exported(source)
        jsonschema.validate(json.loads(text), EMULATOR_SCHEMA)

        started = FakeNamespace(text, http_port=0, tier=tier).start()
        assert exported(started) == text  # a fresh fake started from the file

        file = topology.read_topology(text)
        with client_of(empty) as client:
            first = topology.plan(client, file)
            report = topology.apply_plan(client, first)
            assert report.outcome is topology.ApplyOutcome.FINISHED, report.error
            assert len(report.done) == len(first.changes)
            assert listing(client) == wanted  # the official client lists the same
            assert topology.plan(client, file).changes == ()  # applied twice: nothing to do
            assert topology.plan(client, file, prune=True).changes == ()

            client.create_queue("extra-queue")
            client.create_topic("extra-topic")
            client.create_subscription("extra-topic", "s")
            extra_rules = [f"{name[0]}/Subscriptions/{name[1]}/Rules/extrarule"
                           for kind, name, _, _ in plan if kind == "rules"][:1]
            for path in extra_rules:
                topic_name, _, sub_name, _, _ = path.split("/")
                client.create_rule(topic_name, sub_name, "extrarule",
                                   filter=SqlRuleFilter("1=0"))
            pruned = topology.plan(client, file, prune=True)
            assert {(c.action.value, c.path) for c in pruned.changes} == {
                ("delete", "extra-queue"), ("delete", "extra-topic"),
                *(("delete", path) for path in extra_rules)}
            assert topology.plan(client, file).changes == ()  # without --prune: kept
            report = topology.apply_plan(client, pruned)
            assert report.outcome is topology.ApplyOutcome.FINISHED, report.error
            assert listing(client) == wanted
    finally:
        for namespace in (source, empty, started):
            if namespace is not None:
                namespace.stop()
