"""``sbmgmt topology export | plan | apply`` and ``sbmgmt entities create | update | delete``
as a user runs them, against a fake namespace's administration API on loopback: without a
terminal in this process (typer's runner), on a pseudo-terminal in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt.actions.entities import admin_client
from sbmgmt.cli import ExitCode, app
from sbmgmt.message import Message
from tests.cli.test_subprocess import LIMIT, ROOT, environment
from tests.cli.test_terminal import Terminal


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    """orders (3 messages), events with audit (1 message)."""
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders")
        namespace.add_topic("events")
        namespace.add_subscription("events", "audit")
        namespace.send("orders", *(Message(body=f"{i}".encode()) for i in range(3)))
        namespace.send("events", Message(body=b"e"))
        yield namespace


def run(fake: FakeNamespace, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``sbmgmt ARGS`` in this process (stdin no terminal)."""
    result = CliRunner().invoke(app, list(args), env={
        "SERVICEBUS_CONNECTION_STRING": fake.connection_string,
        "EMULATOR_HTTP_PORT": str(fake.http_port), "COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def run_on_terminal(fake: FakeNamespace, answer: bytes, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, what the terminal showed) of ``python -m sbmgmt.cli ARGS`` with
    stdin and stderr on one pseudo-terminal, the answer typed ahead."""
    terminal = Terminal.open()
    os.write(terminal.master, answer)
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string,
                           "EMULATOR_HTTP_PORT": str(fake.http_port), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "sbmgmt.cli", *args], stdin=terminal.slave,
                          stdout=subprocess.PIPE, stderr=terminal.slave, env=env, cwd=ROOT,
                          timeout=LIMIT, check=False, text=True)
    return done.returncode, done.stdout, terminal.text()


def names(fake: FakeNamespace) -> set[str]:
    with admin_client(connection_string=fake.connection_string, http_port=fake.http_port,
                      timeout=10) as client:
        found = {q.name for q in client.list_queues()} | {t.name for t in client.list_topics()}
        for topic in client.list_topics():
            found |= {f"{topic.name}/{s.name}" for s in client.list_subscriptions(topic.name)}
    return found


@pytest.fixture
def wanted(fake: FakeNamespace, tmp_path: Path) -> Path:
    """The namespace's file with a queue ``invoices`` added and ``events`` left out."""
    code, text, err = run(fake, "topology", "export")
    assert code == 0, err
    document = json.loads(text)
    namespace = document["UserConfig"]["Namespaces"][0]
    namespace["Queues"].append({"Name": "invoices", "Properties": {"LockDuration": "PT30S"}})
    namespace["Topics"] = []
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(document))
    return path


def test_export_writes_the_file_whole_and_stdout_the_same(fake: FakeNamespace,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "Config.json"
    code, out, err = run(fake, "topology", "export", str(path))
    assert code == 0 and err == ""
    assert out == f"wrote 1 queue, 1 topic, 1 subscription, 1 rule to {path}\n"
    code, printed, _ = run(fake, "topology", "export")
    assert code == 0 and printed == path.read_text()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_an_export_that_fails_leaves_the_old_file_as_it_was(fake: FakeNamespace,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "Config.json"
    path.write_text("the last good export")
    code, _, err = run(fake, "topology", "export", str(path), "--http-port", "1")
    assert code == ExitCode.TRANSIENT and "the HTTP port tried was 1" in err
    assert path.read_text() == "the last good export"


def test_plan_shows_the_changes_and_the_messages_a_delete_takes(fake: FakeNamespace,
                                                                wanted: Path) -> None:
    code, out, err = run(fake, "-o", "json", "topology", "plan", str(wanted), "--prune")
    assert code == 0, err
    assert [(c["action"], c["path"], c.get("messages")) for c in json.loads(out)] == [
        ("create", "invoices", None), ("delete", "events", 1)]
    code, out, _ = run(fake, "-o", "json", "topology", "plan", str(wanted))
    assert [c["path"] for c in json.loads(out)] == ["invoices"]  # no deletes without --prune


def test_apply_without_a_terminal_refuses_then_yes_applies_once(fake: FakeNamespace,
                                                                wanted: Path) -> None:
    before = names(fake)
    code, out, err = run(fake, "topology", "apply", str(wanted), "--prune")
    assert code == ExitCode.NOT_CONFIRMED
    assert "to create queue invoices" in err
    assert "to delete topic events (holds 1 message)" in err
    assert "stdin is not a terminal" in err and "--yes" in err and out == ""
    assert names(fake) == before

    code, out, err = run(fake, "topology", "apply", str(wanted), "--prune", "--dry-run")
    assert code == 0 and "dry run: nothing changed" in out and names(fake) == before

    code, out, err = run(fake, "topology", "apply", str(wanted), "--prune", "--yes")
    assert code == 0, err
    assert out.splitlines() == ["deleted topic events (it held 1 message)",
                                "created queue invoices", "1 created, 0 updated, 1 deleted"]
    assert names(fake) == {"orders", "invoices"}
    code, out, _ = run(fake, "topology", "apply", str(wanted), "--prune", "--yes")
    assert (code, out) == (0, f"nothing to change: the namespace matches {wanted}\n")


def test_apply_on_a_terminal_asks(fake: FakeNamespace, wanted: Path) -> None:
    code, out, shown = run_on_terminal(fake, b"n\n", "topology", "apply", str(wanted), "--prune")
    assert code == ExitCode.NOT_CONFIRMED and out == ""
    assert "Make these 2 changes? [y/N]" in shown and "nothing changed: not confirmed" in shown
    assert "events" in names(fake)
    code, out, shown = run_on_terminal(fake, b"y\n", "topology", "apply", str(wanted), "--prune")
    assert code == 0, shown
    assert out.endswith("1 created, 0 updated, 1 deleted\n")
    assert names(fake) == {"orders", "invoices"}


def test_entities_delete_says_the_messages_and_asks(fake: FakeNamespace) -> None:
    code, out, err = run(fake, "entities", "delete", "orders")
    assert code == ExitCode.NOT_CONFIRMED
    assert "to delete queue orders (holds 3 messages)" in err and out == ""
    code, out, shown = run_on_terminal(fake, b"y\n", "entities", "delete", "orders")
    assert code == 0, shown
    assert "Make this change? [y/N]" in shown
    assert out.splitlines()[0] == "deleted queue orders (it held 3 messages)"
    assert "orders" not in names(fake)
    code, _, err = run(fake, "entities", "delete", "orders", "--yes")
    assert code == ExitCode.NOT_FOUND and "orders" in err


def test_entities_create_and_update_with_their_options(fake: FakeNamespace) -> None:
    code, out, err = run(fake, "-o", "json", "entities", "create", "subscription",
                         "events/Subscriptions/billing", "--lock-duration", "PT30S",
                         "--max-deliveries", "25", "--sessions", "--forward-to", "orders",
                         "--set", "DeadLetteringOnFilterEvaluationExceptions=false")
    assert code == 0, err
    assert json.loads(out)["created"] == 1
    code, out, err = run(fake, "entities", "update", "events/billing", "--status", "Disabled",
                         "--metadata", "billing team")
    assert (code, out) == (0, "updated subscription events/Subscriptions/billing\n"
                              "0 created, 1 updated, 0 deleted\n"), err
    with admin_client(connection_string=fake.connection_string, http_port=fake.http_port,
                      timeout=10) as client:
        made = client.get_subscription("events", "billing")
        rules = [rule.name for rule in client.list_rules("events", "billing")]
    assert (made.lock_duration.total_seconds(), made.max_delivery_count, made.requires_session,
            made.forward_to.rsplit("/", 1)[-1], made.dead_lettering_on_filter_evaluation_exceptions,
            made.status, made.user_metadata) == (30, 25, True, "orders", False, "Disabled",
                                                 "billing team")
    assert rules == ["$Default"]


@pytest.mark.parametrize(("args", "said"), [
    (("entities", "update", "orders", "--set", "RequiresSession=true"),
     "RequiresSession cannot change on an existing entity"),
    (("entities", "update", "orders", "--lock-duration", "soon"),
     "LockDuration: 'soon' is not an ISO 8601 duration"),
    (("entities", "update", "events", "--lock-duration", "PT1M"),
     "LockDuration: a topic has no such property"),
    (("entities", "update", "orders"), "nothing to change: give a property"),
    (("entities", "create", "queue", "orders"), "orders exists already"),
    (("entities", "create", "subscription", "events"), "a subscription is named TOPIC/"),
])
def test_what_cannot_be_done_is_said_before_anything_is_sent(
        fake: FakeNamespace, args: tuple[str, ...], said: str) -> None:
    before = names(fake)
    code, out, err = run(fake, *args)
    assert code != 0 and out == ""
    assert said in err and "Error" not in err.split(":")[0]
    assert names(fake) == before


def test_a_file_that_is_not_the_format_is_refused_naming_the_path(
        fake: FakeNamespace, tmp_path: Path) -> None:
    path = tmp_path / "Config.json"
    path.write_text(json.dumps({"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns", "Queues": [{"Name": "q", "Properties": {"MaxDeliveryCount":
                                                                        "ten"}}],
        "Topics": []}], "Logging": {"Type": "File"}}}))
    code, _, err = run(fake, "topology", "plan", str(path))
    assert code == ExitCode.BAD_ARGUMENTS
    assert ("UserConfig.Namespaces[0].Queues[0].Properties.MaxDeliveryCount: must be a whole "
            "number") in err


CHANGE = {"type": "object", "additionalProperties": False,
          "required": ["action", "kind", "path", "differences", "messages"],
          "properties": {"action": {"enum": ["create", "update", "delete"]},
                         "kind": {"enum": ["queue", "topic", "subscription", "rule"]},
                         "path": {"type": "string"}, "differences": {"type": "object"},
                         "messages": {"type": ["integer", "null"]}}}
REPORT = {"type": "object", "additionalProperties": False,
          "required": ["outcome", "created", "updated", "deleted", "failed", "error", "changes"],
          "properties": {"outcome": {"enum": ["finished", "cancelled", "failed", "dry-run"]},
                         "created": {"type": "integer"}, "updated": {"type": "integer"},
                         "deleted": {"type": "integer"}, "failed": {"type": ["string", "null"]},
                         "error": {"type": ["string", "null"]},
                         "changes": {"type": "array", "items": CHANGE}}}


def test_apply_has_one_json_shape_whatever_happened(fake: FakeNamespace, wanted: Path) -> None:
    outcomes = []
    for extra in (["--dry-run"], ["--yes"], ["--yes"]):  # dry run, done, nothing to change
        code, out, err = run(fake, "-o", "json", "topology", "apply", str(wanted), *extra)
        assert code == 0, err
        jsonschema.validate(json.loads(out), REPORT)
        outcomes.append((json.loads(out)["outcome"], len(json.loads(out)["changes"])))
    assert outcomes == [("dry-run", 1), ("finished", 1), ("finished", 0)]
    code, out, _ = run(fake, "-o", "json", "entities", "delete", "orders", "--yes")
    jsonschema.validate(json.loads(out), REPORT)
