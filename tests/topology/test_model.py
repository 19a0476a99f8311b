"""The topology file's form (no namespace), and an apply that is cancelled or fails
(against a fake): its report says exactly what was done."""

from __future__ import annotations

import json
import threading
from typing import Any

import jsonschema
import pytest

from fakes import FakeNamespace
from sbmgmt.actions import topology
from sbmgmt.actions.entities import EntityKind, admin_client
from sbmgmt.actions.topology._fields import duration_text, parse_duration

from .emulator_schema import EMULATOR_SCHEMA


def config(queues: list[Any] | None = None, topics: list[Any] | None = None) -> str:
    return json.dumps({"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns", "Queues": queues or [], "Topics": topics or []}],
        "Logging": {"Type": "File"}}})


def one_subscription(**sub: Any) -> str:
    return config(topics=[{"Name": "t", "Subscriptions": [{"Name": "s", **sub}]}])


@pytest.mark.parametrize(("text", "seconds", "written"), [
    ("PT1M", 60, "PT1M"), ("P14D", 14 * 86400, "P14D"), ("PT90S", 90, "PT1M30S"),
    ("P1DT2H", 93600, "P1DT2H"), ("P1Y", 365 * 86400, "P365D"),
    ("P10675199DT2H48M5.4775807S", 922337203685.4775807, topology.NEVER),
])
def test_durations_read_and_written_in_the_emulator_pattern(text: str, seconds: float,
                                                            written: str) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert duration_text(parse_duration(text)) == written


def test_a_file_of_the_emulator_gets_the_services_defaults_and_the_true_rule() -> None:
    found = topology.read_topology(config(
        [{"Name": "q", "Properties": {"MaxDeliveryCount": 3}}],
        [{"Name": "t", "Subscriptions": [{"Name": "s"}]}]))
    queue, _, sub = found.entities
    assert queue.properties["MaxDeliveryCount"] == 3
    assert queue.properties["LockDuration"] == "PT1M"  # the service's, not the emulator's
    assert queue.properties["DefaultMessageTimeToLive"] == topology.NEVER
    assert [(r.name, dict(r.properties)) for r in sub.rules or ()] == [
        ("$Default", {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}})]


SQL = {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "a = 1"}}


@pytest.mark.parametrize("rules", [
    [("$Default", {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}})],
    [("$Default", SQL)],
    [("$Default", {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}}), ("r", SQL)],
    [("r", SQL)],
    [],
])
def test_every_default_rule_case_is_written_as_the_schema_takes_and_read_back(
        rules: list[tuple[str, Any]]) -> None:
    sub = topology.EntitySpec(
        EntityKind.SUBSCRIPTION, "s", topology.read_topology(one_subscription()).entities[1]
        .properties, topic="t", rules=tuple(topology.RuleSpec(n, p) for n, p in rules))
    topic = topology.read_topology(one_subscription()).entities[0]
    text = topology.write_topology(topology.Topology((topic, sub)))
    jsonschema.validate(json.loads(text), EMULATOR_SCHEMA)
    assert topology.read_topology(text).entities[1] == sub
    with FakeNamespace(text, http_port=0) as fake, admin_client(
            connection_string=fake.connection_string, http_port=fake.http_port) as client:
        assert topology.write_topology(topology.export_topology(client)) == text


def test_authorization_rules_are_kept_without_keys_in_one_order() -> None:
    text = config([{"Name": "q", "x-sbmgmt": {"AuthorizationRules": [
        {"KeyName": "b", "Rights": ["Send", "Listen", "Send"]},
        {"KeyName": "a", "Rights": ["Manage"]}]}}])
    queue = topology.read_topology(text).entities[0]
    assert queue.properties["AuthorizationRules"] == [
        {"KeyName": "a", "Rights": ["Manage"]}, {"KeyName": "b", "Rights": ["Listen", "Send"]}]
    with pytest.raises(topology.TopologyFileError, match="never in the file"):
        topology.read_topology(config([{"Name": "q", "x-sbmgmt": {"AuthorizationRules": [
            {"KeyName": "a", "Rights": ["Send"], "PrimaryKey": "secret"}]}}]))


@pytest.mark.parametrize(("text", "said"), [
    ("{nope", "the file is not JSON"),
    (json.dumps({"UserConfig": {"Namespaces": []}}), "one namespace, please"),
    (config([{"Name": "q"}, {"Name": "Q"}]), "queue Q is in the file twice"),
    (config([{"Name": "q", "Properties": {"LockDuration": 60}}]),
     "Queues[0].Properties.LockDuration: 60 is not an ISO 8601 duration"),
    (config([{"Name": "q", "Properties": {"Bogus": 1}}]),
     "Queues[0].Properties.Bogus: a queue has no such property"),
    (one_subscription(Rules=[{"Name": "r", "Properties": {"FilterType": "Sql"}}]),
     "Rules[0].Properties.SqlFilter: must be an object"),
    (one_subscription(**{"x-sbmgmt": {"DefaultRule": {"FilterType": "Nope"}}}),
     "x-sbmgmt.DefaultRule.FilterType: must be Sql or Correlation"),
])
def test_what_is_not_the_format_is_refused_naming_the_path(text: str, said: str) -> None:
    with pytest.raises(topology.TopologyFileError) as refused:
        topology.read_topology(text)
    assert said in str(refused.value)


def test_past_the_emulators_limits_is_said_not_cut() -> None:
    found = topology.read_topology(config(
        [{"Name": f"q{i}"} for i in range(51)] + [{"Name": "_odd"}],
        [{"Name": "t", "Subscriptions": []}]))
    assert topology.emulator_limits(found) == [
        "52 queues: the emulator takes at most 50",
        "topic t has 0 subscriptions: the emulator takes 1 to 50",
        "_odd: the name '_odd' is not one the emulator's schema takes"]
    assert len(topology.read_topology(topology.write_topology(found)).entities) == 53


def test_an_apply_cancelled_or_failed_reports_exactly_what_was_done() -> None:
    wanted = topology.read_topology(config(
        [{"Name": f"q{i}"} for i in range(5)]
        + [{"Name": "forwarder", "Properties": {"ForwardTo": "nowhere"}}]))
    with FakeNamespace(http_port=0) as fake, admin_client(
            connection_string=fake.connection_string, http_port=fake.http_port) as client:
        plan = topology.plan(client, wanted)
        cancel = threading.Event()
        cancel.set()
        report = topology.apply_plan(client, plan, cancel=cancel)
        assert (report.outcome, report.done) == (topology.ApplyOutcome.CANCELLED, ())
        assert list(client.list_queues()) == []

        report = topology.apply_plan(client, plan, in_flight=1)
        assert report.outcome is topology.ApplyOutcome.FAILED
        assert report.failed is not None and report.failed.path == "forwarder"
        assert "nowhere" in str(report.error)
        assert sorted(c.path for c in report.done) == sorted(
            q.name for q in client.list_queues())


def test_forwarding_to_an_entity_made_by_the_same_apply_waits_for_it() -> None:
    wanted = topology.read_topology(config(
        [{"Name": "x", "Properties": {"ForwardTo": "y"}},
         {"Name": "new", "Properties": {"ForwardTo": "y", "ForwardDeadLetteredMessagesTo": "x"}},
         {"Name": "y"}]))
    with FakeNamespace(http_port=0) as fake, admin_client(
            connection_string=fake.connection_string, http_port=fake.http_port) as client:
        client.create_queue("x")
        plan = topology.plan(client, wanted)
        assert [(c.action.value, c.path) for c in plan.changes] == [
            ("update", "x"), ("create", "new"), ("create", "y")]
        report = topology.apply_plan(client, plan)
        assert report.outcome is topology.ApplyOutcome.FINISHED, report.error
        assert topology.plan(client, wanted).changes == ()
        forwards = {q.name: (q.forward_to or "").rsplit("/", 1)[-1] for q in client.list_queues()}
        assert forwards == {"x": "y", "new": "y", "y": ""}


def test_an_apply_cancelled_midway_reports_exactly_the_entities_made() -> None:
    wanted = topology.read_topology(config([{"Name": f"q{i:02d}"} for i in range(40)]))
    with FakeNamespace(http_port=0) as fake, admin_client(
            connection_string=fake.connection_string, http_port=fake.http_port) as client:
        plan = topology.plan(client, wanted)
        cancel = threading.Event()
        report = topology.apply_plan(client, plan, in_flight=4,
                                     on_progress=lambda _change: cancel.set(), cancel=cancel)
        assert report.outcome is topology.ApplyOutcome.CANCELLED
        made = sorted(q.name for q in client.list_queues())
        assert 1 <= len(made) < 40
        assert sorted(change.path for change in report.done) == made
