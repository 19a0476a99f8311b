"""``sbmgmt purge``: the prompt, ``--yes``, progress and the refusal, in a pseudo-terminal and
without one, and its records and options. On a terminal and for Ctrl-C in separate
processes, as a user runs them; without a terminal in this process
(:func:`~tests.cli.conftest.in_process`)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.cli import ExitCode
from sbmgmt.message import Message
from tests._waiting import wait_until

from .conftest import in_process
from .test_subprocess import LIMIT, ROOT, environment, reaped
from .test_terminal import Terminal

MESSAGES = 3000
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("orders")
        namespace.add_queue("sessions", requires_session=True)
        namespace.add_topic("t")
        namespace.add_subscription("t", "s")
        namespace.send("orders", *(Message(body=b"x") for _ in range(MESSAGES)))
        yield namespace


def run(args: list[str], fake: FakeNamespace, *, stdin: int, stdout: int,
        stderr: int) -> int:
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string,
                           "TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "sbmgmt.cli", *args], stdin=stdin, stdout=stdout,
        stderr=stderr, env=env, cwd=ROOT, timeout=LIMIT, check=False).returncode


def here(fake: FakeNamespace, *args: str) -> subprocess.CompletedProcess[str]:
    """``sbmgmt ARGS`` without a terminal, in this process, with :func:`run`'s settings."""
    return in_process(*args, conn=fake.connection_string,
                      env={"TERM": "xterm", "COLUMNS": "100", "NO_COLOR": None})


def test_without_a_terminal_it_refuses_without_yes(fake: FakeNamespace) -> None:
    done = here(fake, "purge", "orders")
    assert done.returncode == ExitCode.NOT_CONFIRMED == 11
    said = done.stderr
    assert f"about to delete {MESSAGES} messages of orders" in said
    assert "stdin is not a terminal" in said and "--yes" in said
    assert done.stdout == ""
    assert fake.accounting("orders")["deleted"] == 0


def test_without_a_terminal_yes_deletes_and_reports(fake: FakeNamespace) -> None:
    done = here(fake, "-o", "json", "purge", "orders", "--yes")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["entity"], record["deleted"], record["outcome"]) == (
        "orders", MESSAGES, "finished")
    assert "purging" not in done.stderr  # no bar without a terminal
    assert fake.accounting("orders")["deleted"] == MESSAGES


def _answered(fake: FakeNamespace, args: list[str], answer: bytes,
              tmp_path: Path) -> tuple[int, str, str]:
    """Run with stdin and stderr on one pseudo-terminal (as in a shell), the answer typed
    ahead; stdout to a file. (exit code, what the terminal showed, stdout)."""
    terminal = Terminal.open()
    os.write(terminal.master, answer)
    out = tmp_path / "out"
    with out.open("wb") as stdout:
        code = run(args, fake, stdin=terminal.slave, stdout=stdout.fileno(),
                   stderr=terminal.slave)
    return code, terminal.text(), out.read_text()


def test_on_a_terminal_it_asks_and_shows_progress(fake: FakeNamespace, tmp_path: Path) -> None:
    code, shown, out = _answered(fake, ["purge", "orders"], b"y\n", tmp_path)
    assert code == 0, shown
    assert f"about to delete {MESSAGES} messages of orders" in shown
    assert "Delete them? [y/N]" in shown
    assert "purging" in shown  # the bar was drawn, on the terminal
    assert out == f"deleted {MESSAGES} messages from orders\n"
    assert fake.accounting("orders")["deleted"] == MESSAGES


def test_on_a_terminal_no_deletes_nothing(fake: FakeNamespace, tmp_path: Path) -> None:
    code, shown, out = _answered(fake, ["purge", "orders"], b"n\n", tmp_path)
    assert code == ExitCode.NOT_CONFIRMED
    assert "nothing deleted: not confirmed" in shown
    assert out == ""
    assert fake.accounting("orders")["deleted"] == 0


def test_on_a_terminal_yes_does_not_ask(fake: FakeNamespace, tmp_path: Path) -> None:
    code, shown, _ = _answered(fake, ["purge", "orders", "--yes", "--max", "1000"], b"",
                               tmp_path)
    assert code == 0, shown
    assert "Delete them?" not in shown
    assert "about to delete 1000 messages" in shown
    assert fake.accounting("orders")["deleted"] == 1000


def test_nothing_to_delete_asks_nothing(fake: FakeNamespace) -> None:
    done = here(fake, "-o", "ndjson", "purge", "t/Subscriptions/s")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["deleted"], record["outcome"]) == (0, "finished")


def test_dead_letter_session_and_before(fake: FakeNamespace) -> None:
    locked = fake.receive_and_lock("orders", 5)
    fake.send("sessions", *(Message(body=b"a", session_id="a") for _ in range(4)),
              Message(body=b"b", session_id="b"))

    def purge(*args: str) -> dict[str, object]:
        done = here(fake, "-o", "json", "purge", *args, "--yes")
        assert done.returncode == 0, done.stderr
        result: dict[str, object] = json.loads(done.stdout)
        return result

    assert purge("orders", "--before", "-1h")["deleted"] == 0
    assert purge("sessions", "--session", "a")["deleted"] == 4
    assert purge("orders", "--dead-letter")["deleted"] == 0
    assert fake.accounting("sessions")["active"] == 1
    assert fake.accounting("orders")["locked"] == len(locked)


def test_ctrl_c_stops_cleanly_and_reports_the_count(fake: FakeNamespace, tmp_path: Path) -> None:
    fake.faults.latency(0.3, entity="orders", operation="com.microsoft:batch-delete-messages")
    terminal = Terminal.open()
    out = tmp_path / "out"
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string,
                           "TERM": "xterm", "COLUMNS": "100"}
    with out.open("wb") as stdout, reaped(subprocess.Popen(
            [sys.executable, "-m", "sbmgmt.cli", "-o", "json", "purge", "orders", "--yes",
             "--batch-size", "100"], stdin=subprocess.DEVNULL, stdout=stdout,
            stderr=terminal.slave, env=env, cwd=ROOT)) as process:
        wait_until(lambda: fake.accounting("orders")["deleted"] > 0, LIMIT)
        process.send_signal(signal.SIGINT)
        code = process.wait(LIMIT)
    shown = terminal.text()
    assert code == ExitCode.INTERRUPTED, shown
    record = json.loads(out.read_text())
    assert record["outcome"] == "cancelled"
    assert record["deleted"] == fake.accounting("orders")["deleted"]
    assert 0 < record["deleted"] < MESSAGES
    assert "cancelled (Ctrl-C): stopped cleanly" in shown  # run_long's word, on stderr


def test_ctrl_c_in_a_table_says_what_was_deleted(fake: FakeNamespace, tmp_path: Path) -> None:
    """Without a terminal (stdout to a file, as a script's log): the sentence counts what
    was deleted and says it was cancelled; exit 130. Nothing lost or doubled, counted by
    MessageId and body: what stays is exactly what was not deleted, and a second purge
    deletes exactly the rest."""
    fake.add_queue("ids")
    sent = {f"m-{i}": f"body {i}".encode() for i in range(MESSAGES)}
    fake.send("ids", *(Message(message_id=mid, body=body) for mid, body in sent.items()))
    fake.faults.latency(0.3, entity="ids", operation="com.microsoft:batch-delete-messages")
    out, err = tmp_path / "out", tmp_path / "err"
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string}
    with out.open("wb") as stdout, err.open("wb") as stderr, reaped(subprocess.Popen(
            [sys.executable, "-m", "sbmgmt.cli", "purge", "ids", "--yes",
             "--batch-size", "100"], stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
            env=env, cwd=ROOT)) as process:
        assert wait_until(lambda: fake.accounting("ids")["deleted"] > 0, LIMIT)
        process.send_signal(signal.SIGINT)
        code = process.wait(LIMIT)
    assert code == ExitCode.INTERRUPTED, err.read_text()
    deleted = fake.accounting("ids")["deleted"]
    assert 0 < deleted < MESSAGES
    assert out.read_text() == f"deleted {deleted} messages from ids (cancelled)\n"
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        left: dict[str, bytes] = {}
        for message in client.entity("ids").peek_all():
            assert isinstance(message.message_id, str) and message.message_id not in left
            assert isinstance(message.body, bytes)
            left[message.message_id] = message.body
        assert len(left) == MESSAGES - deleted
        assert all(sent[mid] == body for mid, body in left.items())
        assert client.entity("ids").purge_messages() == MESSAGES - deleted
    counts = fake.accounting("ids")
    assert (counts["deleted"], counts["active"]) == (MESSAGES, 0)


def test_in_flight_sets_the_requests_on_the_wire(fake: FakeNamespace) -> None:
    """--in-flight 1: one batch delete at a time (6 full ones, then the zero that ends it);
    the default sends 32 at once after the first full reply."""
    operation = "com.microsoft:batch-delete-messages"
    code = here(fake, "-o", "json", "purge", "orders", "--yes", "--in-flight", "1").returncode
    assert code == 0
    assert fake.applied("orders", operation) == MESSAGES // 500 + 1
    fake.send("orders", *(Message(body=b"x") for _ in range(MESSAGES)))
    code = here(fake, "-o", "json", "purge", "orders", "--yes").returncode
    assert code == 0
    assert fake.applied("orders", operation) >= MESSAGES // 500 + 1 + 1 + 32


def test_dry_run_counts_and_deletes_nothing_without_a_terminal(fake: FakeNamespace) -> None:
    done = here(fake, "purge", "orders", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"dry run: would delete {MESSAGES} messages from orders enqueued "
                        rf"before {TIME} UTC \(nothing was sent\)\n", done.stdout)
    done = here(fake, "-o", "json", "purge", "orders", "--dry-run", "--max", "10")
    record = json.loads(done.stdout)
    assert {k: record[k] for k in ("eligible", "dry_run", "deleted", "outcome")} == {
        "eligible": 10, "dry_run": True, "deleted": 0, "outcome": None}
    assert fake.accounting("orders")["deleted"] == 0


def test_the_refusal_suggests_the_dry_run(fake: FakeNamespace) -> None:
    done = here(fake, "purge", "orders")
    assert done.returncode == ExitCode.NOT_CONFIRMED
    assert "pass --yes (or --dry-run to see what it would do)" in done.stderr


def test_on_a_terminal_the_count_shows_from_the_start_and_the_time_to_the_second(
        fake: FakeNamespace, tmp_path: Path) -> None:
    """The count peeks every message (seconds on a large queue at a distance: slowed here
    to 0.2 s a peek): a spinner and the running count are on the terminal before the
    question, and the question's time has no microseconds."""
    handle = fake.faults.latency(0.2, entity="orders", operation="com.microsoft:peek-message")
    try:
        code, shown, _ = _answered(fake, ["purge", "orders"], b"n\n", tmp_path)
    finally:
        handle.remove()
    assert code == ExitCode.NOT_CONFIRMED, shown
    assert "counting the messages of orders" in shown
    assert shown.index("counting the messages of orders") < shown.index("Delete them?")
    said = next(line for line in shown.splitlines() if "about to delete" in line).strip()
    said = said[said.index("about to delete"):]  # after the spinner's erasing codes
    assert re.fullmatch(rf"about to delete {MESSAGES} messages of orders enqueued before "
                        rf"{TIME} UTC", said)
    assert len(said) <= 80
