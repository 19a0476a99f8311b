"""``sbmgmt deferred list / complete / dead-letter`` on messages deferred by the official SDK:
in-process (stdin is not a terminal: refused without --yes) and in a real process whose
stdin and stderr are a pseudo-terminal (asked; the answer is obeyed; progress drawn)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.export import read_messages
from sbmgmt.cli import ExitCode
from tests._waiting import wait_until

from .conftest import Cli, sequence_numbers
from .test_subprocess import LIMIT, ROOT, environment, reaped
from .test_terminal import Terminal

WAIT = 2


def defer(fake: FakeNamespace, queue: str, deferred: int, active: int = 0) -> list[int]:
    """Send ``deferred + active`` messages and defer the first ``deferred`` with the SDK."""
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as sdk:
        with sdk.get_queue_sender(queue) as sender:
            sender.send_messages([ServiceBusMessage(f"d{i}") for i in range(deferred)])
        numbers: list[int] = []
        with sdk.get_queue_receiver(queue, max_wait_time=WAIT) as receiver:
            while len(numbers) < deferred:
                for message in receiver.receive_messages(deferred - len(numbers), WAIT):
                    receiver.defer_message(message)
                    numbers.append(message.sequence_number or 0)
        if active:
            with sdk.get_queue_sender(queue) as sender:
                sender.send_messages([ServiceBusMessage(f"a{i}") for i in range(active)])
    return sorted(numbers)


def test_list_shows_the_deferred_messages_only(cli: Cli, fake: FakeNamespace) -> None:
    numbers = defer(fake, "q", 7, active=5)
    listed = cli.json("deferred", "list", "q")
    assert sequence_numbers(listed) == numbers
    assert {r["state"] for r in listed} == {"deferred"}
    assert all(r["enqueued_time"] and r["body_text"].startswith("d") for r in listed)
    assert sequence_numbers(cli.ndjson("deferred", "list", "q", "--count", "3")) == numbers[:3]
    table = cli.run("deferred", "list", "q", output="table")
    assert table.exit_code == 0 and "deliveries" in table.stdout
    empty = cli.run("deferred", "list", "t/Subscriptions/s", output="table")
    assert "no deferred messages in t/Subscriptions/s" in empty.stdout


def test_purge_without_a_terminal_refuses_without_yes(cli: Cli, fake: FakeNamespace) -> None:
    numbers = defer(fake, "q", 4)
    refused = cli.run("deferred", "complete", "q")
    assert refused.exit_code == ExitCode.NOT_CONFIRMED
    assert "--yes" in refused.stderr and "not a terminal" in refused.stderr
    assert fake.accounting("q")["deferred"] == 4
    dry = cli.json("deferred", "complete", "q", "--dry-run")
    assert [(r["sequence_number"], r["outcome"]) for r in dry] == [
        (n, "dry_run") for n in numbers]
    assert fake.accounting("q")["deferred"] == 4
    done = cli.json("deferred", "complete", "q", "--yes", "--batch-size", "3")
    assert [(r["sequence_number"], r["outcome"]) for r in done] == [
        (n, "completed") for n in numbers]
    counts = fake.accounting("q")
    assert (counts["deferred"], counts["completed"]) == (0, 4)


def test_dead_letter_named_numbers_with_a_reason(cli: Cli, fake: FakeNamespace) -> None:
    numbers = defer(fake, "q", 5, active=2)
    result = cli.run("deferred", "dead-letter", "q", str(numbers[0]), str(numbers[3]), "999",
                     "--reason", "lost-consumer", "--yes", output="table")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == (
        "dead-lettered 2 deferred messages of q; not found (not or no longer deferred): 999")
    dead = cli.json("peek", "q", "--dead-letter", "--all")
    assert sequence_numbers(dead) == [numbers[0], numbers[3]]
    assert {r["dead_letter_reason"] for r in dead} == {"lost-consumer"}
    assert sequence_numbers(cli.json("deferred", "list", "q")) == [
        numbers[1], numbers[2], numbers[4]]


def test_purge_of_a_session_entity(cli: Cli, fake: FakeNamespace) -> None:
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as sdk:
        for session in ("a", "b"):
            with sdk.get_queue_sender("sq") as sender:
                sender.send_messages([ServiceBusMessage(f"{session}{i}", session_id=session)
                                      for i in range(3)])
            with sdk.get_queue_receiver("sq", session_id=session,
                                        max_wait_time=WAIT) as receiver:
                for message in receiver.receive_messages(3, WAIT):
                    receiver.defer_message(message)
    done = cli.json("deferred", "complete", "sq", "--yes")
    assert [r["outcome"] for r in done] == ["completed"] * 6
    assert fake.accounting("sq")["deferred"] == 0


def test_export_writes_the_deferred_messages_to_a_file_or_stdout(
        cli: Cli, fake: FakeNamespace, tmp_path: Path) -> None:
    numbers = defer(fake, "q", 6, active=4)
    target = tmp_path / "deferred.jsonl"
    summary = cli.json("deferred", "export", "q", str(target))
    assert summary == {"entity": "q", "exported": 6, "first_sequence_number": numbers[0],
                       "last_sequence_number": numbers[-1], "file": str(target)}
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        peeked = [m for m in client.entity("q").peek_all() if m.sequence_number in numbers]
    read = list(read_messages(target.read_text("utf-8").splitlines()))
    assert [m.body_bytes() for m in read] == [m.body_bytes() for m in peeked]
    assert [m.message_id for m in read] == [m.message_id for m in peeked]
    piped = cli.run("deferred", "export", "q", "-", "--from", str(numbers[1]), "--count", "2")
    assert piped.exit_code == 0, piped.stderr
    lines = [json.loads(line) for line in piped.stdout.splitlines()]
    assert [line["broker"]["sequence_number"] for line in lines] == numbers[1:3]
    assert {line["broker"]["state"] for line in lines} == {"deferred"}
    assert len(list(read_messages(io.StringIO(piped.stdout)))) == 2
    table = cli.run("deferred", "export", "q", str(target), output="table")
    assert table.stdout.strip() == f"exported 6 deferred messages of q to {target}"
    assert fake.accounting("q")["deferred"] == 6
    missing = cli.run("deferred", "export", "nope", str(tmp_path / "none.jsonl"))
    assert missing.exit_code == ExitCode.NOT_FOUND


@pytest.fixture
def served_queue() -> Iterator[tuple[FakeNamespace, list[int]]]:
    with FakeNamespace() as fake:
        fake.add_queue("orders")
        yield fake, defer(fake, "orders", 30)


def run_on_terminal(conn: str, answer: bytes | None, out: Path) -> tuple[int, str]:
    """``sbmgmt deferred complete orders`` with stdin and stderr a pseudo-terminal, stdout a
    file; ``answer`` is typed at the prompt (None: --yes, nothing typed)."""
    terminal = Terminal.open()
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": conn, "TERM": "xterm",
                           "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    args = ["deferred", "complete", "orders", "--batch-size", "5", "--in-flight", "1"]
    with out.open("wb") as stdout, reaped(subprocess.Popen(
            [sys.executable, "-m", "sbmgmt.cli", *args, *([] if answer else ["--yes"])],
            stdin=terminal.slave, stdout=stdout, stderr=terminal.slave, env=env,
            cwd=ROOT)) as process:
        if answer is not None:
            wait_until(lambda: b"[y/N]" in b"".join(terminal.chunks), LIMIT)
            os.write(terminal.master, answer)
        code = process.wait(LIMIT)
    return code, terminal.text()


def test_purge_on_a_terminal_asks_and_obeys(served_queue: tuple[FakeNamespace, list[int]],
                                            tmp_path: Path) -> None:
    fake, _ = served_queue
    code, screen = run_on_terminal(fake.connection_string, b"n\n", tmp_path / "no.txt")
    assert code == ExitCode.NOT_CONFIRMED
    assert "Complete (remove) 30 deferred messages of orders?" in screen
    assert "nothing was done" in screen
    assert fake.accounting("orders")["deferred"] == 30
    code, screen = run_on_terminal(fake.connection_string, b"y\n", tmp_path / "yes.txt")
    assert code == 0, screen
    assert (tmp_path / "yes.txt").read_text().strip() == (
        "completed 30 deferred messages of orders")
    assert fake.accounting("orders")["deferred"] == 0


def test_purge_on_a_terminal_with_yes_shows_progress_on_stderr_only(
        served_queue: tuple[FakeNamespace, list[int]], tmp_path: Path) -> None:
    fake, _ = served_queue
    code, screen = run_on_terminal(fake.connection_string, None, tmp_path / "out.json")
    assert code == 0, screen
    assert "[y/N]" not in screen  # not asked
    assert "completing" in screen or "finding" in screen  # a bar was drawn
    assert (tmp_path / "out.json").read_text().strip() == (
        "completed 30 deferred messages of orders")
