"""``sbmgmt entities`` against the fake's administration API (azure-servicebus's
administration client on the fake's HTTP port), with counts from real AMQP traffic."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from typer.testing import CliRunner, Result

from fakes import FakeNamespace
from sbmgmt.cli import app
from sbmgmt.cli._entities import admin_connection_string

WAIT = 2


def _dead_letter(client: ServiceBusClient, count: int, queue: str | None = None,
                 topic: str | None = None, subscription: str | None = None) -> None:
    if queue is not None:
        with client.get_queue_sender(queue) as sender:
            sender.send_messages([ServiceBusMessage("x") for _ in range(count)])
        receiver = client.get_queue_receiver(queue, max_wait_time=WAIT)
    else:
        assert topic is not None and subscription is not None
        with client.get_topic_sender(topic) as sender:
            sender.send_messages([ServiceBusMessage("x") for _ in range(count)])
        receiver = client.get_subscription_receiver(topic, subscription, max_wait_time=WAIT)
    with receiver:
        received: list[Any] = []
        while len(received) < count:
            received += receiver.receive_messages(count - len(received), max_wait_time=WAIT)
        for message in received:
            receiver.dead_letter_message(message)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    """Queues ``clean`` (2 active), ``dead`` (3 dead-lettered, 1 active); topic ``t`` with
    ``s-dead`` (1 dead-lettered) and ``s-clean`` (its copy of that one message, active)."""
    with FakeNamespace(http_port=0) as namespace:
        for queue in ("clean", "dead"):
            namespace.add_queue(queue)
        namespace.add_topic("t")
        for subscription in ("s-clean", "s-dead"):
            namespace.add_subscription("t", subscription)
        with ServiceBusClient.from_connection_string(namespace.connection_string,
                                                     retry_total=0) as client:
            _dead_letter(client, 3, queue="dead")
            _dead_letter(client, 1, topic="t", subscription="s-dead")
            for queue, count in (("clean", 2), ("dead", 1)):
                with client.get_queue_sender(queue) as sender:
                    sender.send_messages([ServiceBusMessage("y") for _ in range(count)])
        yield namespace


def _run(fake: FakeNamespace, *args: str, output: str = "json") -> Result:
    assert fake.http_port is not None
    return CliRunner().invoke(app, ["-c", fake.connection_string, "--timeout", "10",
                                    "-o", output, "entities", "--http-port",
                                    str(fake.http_port), *args])


def _json(fake: FakeNamespace, *args: str) -> Any:
    result = _run(fake, *args)
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    return json.loads(result.stdout)


def test_dead_lettered_lists_exactly_the_entities_with_dead_letters(
        fake: FakeNamespace) -> None:
    listed = _json(fake, "--dead-lettered")
    assert [(r["kind"], r["name"], r["dead_letter"]) for r in listed] == [
        ("queue", "dead", 3), ("subscription", "t/Subscriptions/s-dead", 1)]


def test_every_entity_with_its_counts(fake: FakeNamespace) -> None:
    listed = {r["name"]: r for r in _json(fake)}
    assert list(listed) == ["clean", "dead", "t", "t/Subscriptions/s-clean",
                            "t/Subscriptions/s-dead"]
    assert {k: listed["dead"][k] for k in ("kind", "active", "dead_letter", "scheduled",
                                           "total")} == {
        "kind": "queue", "active": 1, "dead_letter": 3, "scheduled": 0, "total": 4}
    assert listed["t/Subscriptions/s-clean"]["active"] == 1
    assert listed["t/Subscriptions/s-clean"]["scheduled"] == 0
    assert listed["t"]["kind"] == "topic" and listed["t"]["active"] is None
    assert listed["clean"]["size_in_bytes"] > 0


def test_filters_and_sorting(fake: FakeNamespace) -> None:
    kinds = _json(fake, "--kind", "subscription")
    assert [r["name"] for r in kinds] == ["t/Subscriptions/s-clean", "t/Subscriptions/s-dead"]
    matched = _json(fake, "--match", "T/*DEAD", "--kind", "queue", "--kind", "subscription")
    assert [r["name"] for r in matched] == ["t/Subscriptions/s-dead"]
    by_dead_letters = _json(fake, "--sort", "dead-letter", "--kind", "queue")
    assert [r["name"] for r in by_dead_letters] == ["dead", "clean"]
    by_active = _json(fake, "--sort", "active", "--kind", "queue")
    assert [r["name"] for r in by_active] == ["clean", "dead"]


def test_ndjson_and_table(fake: FakeNamespace) -> None:
    result = _run(fake, "--dead-lettered", output="ndjson")
    assert result.exit_code == 0
    assert [json.loads(line)["name"] for line in result.stdout.splitlines()] == [
        "dead", "t/Subscriptions/s-dead"]
    table = _run(fake, "--kind", "queue", output="table")
    assert table.exit_code == 0
    assert "dead-letter" in table.stdout and "clean" in table.stdout
    empty = _run(fake, "--match", "nothing*", output="table")
    assert empty.exit_code == 0 and empty.stdout.strip() == "no entities"


def test_one_entitys_properties(fake: FakeNamespace) -> None:
    queue = _json(fake, "dead")
    assert (queue["kind"], queue["name"], queue["dead_letter"], queue["max_delivery_count"],
            queue["lock_duration"], queue["status"]) == ("queue", "dead", 3, 10, 60.0, "Active")
    assert queue["created_at_utc"].endswith("Z")
    subscription = _json(fake, "t/s-dead")
    assert (subscription["kind"], subscription["name"], subscription["dead_letter"]) == (
        "subscription", "t/Subscriptions/s-dead", 1)
    topic = _json(fake, "t")
    assert (topic["kind"], topic["name"]) == ("topic", "t")
    table = _run(fake, "dead", output="table")
    assert table.exit_code == 0 and "max_delivery_count" in table.stdout


def test_a_missing_entity_exits_not_found(fake: FakeNamespace) -> None:
    result = _run(fake, "nothing")
    assert result.exit_code == 4
    assert "nothing" in result.stderr


def test_a_queue_with_a_slash_and_a_missing_subscription_say_what_they_are() -> None:
    """``A/B`` is topic A's subscription B, unless a queue has that name (queue names may
    hold slashes); a missing one is named by the service's own words, not azure-core's
    "Operation returned an invalid status 'NOT FOUND'"."""
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders-eu_2/incoming")
        namespace.add_topic("t")
        namespace.add_subscription("t", "s")
        queue = _json(namespace, "orders-eu_2/incoming")
        assert (queue["kind"], queue["name"]) == ("queue", "orders-eu_2/incoming")
        assert _json(namespace, "t/s")["kind"] == "subscription"
        for missing, said in (("t/nothing", "'t/Subscriptions/nothing' could not be found"),
                              ("nothing/s", "'nothing' could not be found")):
            result = _run(namespace, missing)
            assert result.exit_code == 4, (missing, result.stderr)
            assert said in result.stderr and "invalid status" not in result.stderr


def test_a_wrong_key_exits_auth(fake: FakeNamespace) -> None:
    assert fake.http_port is not None
    wrong = fake.connection_string.replace("SAS_KEY_VALUE", "d3Jvbmc=")
    result = CliRunner().invoke(app, ["-c", wrong, "entities", "--http-port",
                                      str(fake.http_port)])
    assert result.exit_code == 3
    assert "d3Jvbmc=" not in result.stderr


def test_without_the_admin_extra_the_message_names_it(
        fake: FakeNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.servicebus.management", None)
    result = _run(fake)
    assert result.exit_code == 2
    assert "pip install 'sbmgmt[admin]'" in result.stderr


def test_the_embedded_emulator_has_nothing_to_list() -> None:
    result = CliRunner().invoke(app, ["--emulator", "entities"])
    assert result.exit_code == 2
    assert "--connection-string" in result.stderr


def test_the_admin_connection_string_keeps_the_credentials() -> None:
    assert admin_connection_string(
        "Endpoint=sb://localhost:5672;SharedAccessKeyName=k;SharedAccessKey=v;"
        "UseDevelopmentEmulator=true", 5300) == (
        "Endpoint=sb://localhost:5300;SharedAccessKeyName=k;SharedAccessKey=v;"
        "UseDevelopmentEmulator=true")
    assert admin_connection_string(
        "Endpoint=sb://[::1];SharedAccessSignature=SharedAccessSignature sr=a&sig=b&se=1&skn=k;"
        "UseDevelopmentEmulator=true", 6000).startswith(
        "Endpoint=sb://[::1]:6000;SharedAccessSignature=SharedAccessSignature sr=a")


def test_a_port_that_is_not_the_http_one_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with FakeNamespace() as plain:  # AMQP only
        for port, said in ((closed, "did not answer"), (plain.port, "did not answer HTTP")):
            result = CliRunner().invoke(app, ["-c", plain.connection_string, "--timeout", "5",
                                              "entities", "--http-port", str(port)])
            assert result.exit_code == 7, (result.exit_code, result.stderr)
            assert said in result.stderr
