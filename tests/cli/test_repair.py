"""``sbmgmt resubmit``, ``sbmgmt move`` and ``sbmgmt import``: the dry run, the refusal
without a terminal, the question on a terminal (a pseudo-terminal), progress, the summary
and the exit codes, against a fake namespace on loopback. On a terminal, and with a pipe
for stdin, in real processes; the rest in this process
(:func:`~tests.cli.conftest.in_process`)."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.export import export_entity
from sbmgmt.cli import ExitCode

from .conftest import in_process
from .test_subprocess import LIMIT, ROOT, environment, reaped, sbmgmt
from .test_terminal import Terminal

DEAD = 30


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("orders")
        namespace.add_queue("archive")
        namespace.send("orders", *(Message(
            body=f"order {i}".encode(), message_id=f"m{i}",
            application_properties={"region": "eu" if i % 2 else "us"}) for i in range(DEAD)))
        locked = namespace.receive_and_lock("orders", DEAD)
        with ManagementClient.from_connection_string(namespace.connection_string) as client:
            q = client.entity("orders")
            q.update_disposition([m.lock_token for m in locked[:20]], "suspended",
                                 dead_letter_reason="Poison")
            q.update_disposition([m.lock_token for m in locked[20:]], "suspended",
                                 dead_letter_reason="Expired")
        yield namespace


def counts(fake: FakeNamespace, path: str) -> int:
    return fake.accounting(path)["active"]


def test_dry_run_lists_the_plan_and_changes_nothing(fake: FakeNamespace) -> None:
    done = in_process("-o", "ndjson", "resubmit", "orders", "--reason", "Poison",
                      "--dry-run", conn=fake.connection_string)
    assert done.returncode == ExitCode.OK, done.stderr
    planned = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(planned) == 20
    assert {p["target"] for p in planned} == {"orders"}
    assert {p["dead_letter_reason"] for p in planned} == {"Poison"}
    assert "would resubmit 20 messages" in done.stderr
    assert counts(fake, "orders/$DeadLetterQueue") == DEAD
    assert counts(fake, "orders") == 0


def test_without_a_terminal_and_without_yes_it_refuses(fake: FakeNamespace) -> None:
    done = in_process("resubmit", "orders", stdin="y\n", conn=fake.connection_string)
    assert done.returncode == ExitCode.NOT_CONFIRMED
    assert "pass --yes" in done.stderr
    assert counts(fake, "orders/$DeadLetterQueue") == DEAD


def test_yes_moves_the_selection_and_reports_it(fake: FakeNamespace) -> None:
    done = in_process("-o", "json", "move", "orders", "archive", "--dead-letter",
                      "--where", "region = 'eu'", "--set", "repaired=true", "--yes",
                      conn=fake.connection_string)
    assert done.returncode == ExitCode.OK, done.stderr
    summary = json.loads(done.stdout)
    assert summary["planned"] == summary["moved"] == DEAD // 2
    assert summary["complete"] and summary["transactional"]
    assert summary["failed"] == [] and summary["duplicates"] == []
    assert counts(fake, "archive") == DEAD // 2
    assert counts(fake, "orders/$DeadLetterQueue") == DEAD // 2
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        moved = client.entity("archive").peek_messages(1, DEAD)
    assert all(m.application_properties["region"] == "eu" for m in moved)
    assert all(m.application_properties["repaired"] is True for m in moved)
    assert all(m.dead_letter_reason is None for m in moved)


def test_a_subscription_target_is_a_wrong_entity(fake: FakeNamespace) -> None:
    done = in_process("move", "orders", "t/Subscriptions/s", "--dead-letter", "--yes",
                      conn=fake.connection_string)
    assert done.returncode == ExitCode.WRONG_ENTITY
    assert "it is a subscription" in done.stderr
    assert "or to a queue" in done.stderr


def _on_a_terminal(args: list[str], conn: str, answer: bytes) -> tuple[int, str, str]:
    """Run with stdin and stderr on a pseudo-terminal (the answer typed there), stdout to
    a pipe."""
    master, slave = pty.openpty()
    stderr = Terminal.open()
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": conn, "TERM": "xterm",
                           "COLUMNS": "100"}
    with reaped(subprocess.Popen([sys.executable, "-m", "sbmgmt.cli", *args], stdin=slave,
                                 stdout=subprocess.PIPE, stderr=stderr.slave, env=env,
                                 cwd=ROOT)) as process:
        os.write(master, answer)
        out, _ = process.communicate(timeout=LIMIT)
    os.close(slave)
    os.close(master)
    return process.returncode, out.decode(), stderr.text()


def test_on_a_terminal_it_asks_and_yes_moves(fake: FakeNamespace) -> None:
    code, out, shown = _on_a_terminal(["resubmit", "orders"], fake.connection_string, b"y\n")
    assert code == ExitCode.OK, shown
    assert "Resubmit 30 messages of orders/$DeadLetterQueue to orders?" in shown
    assert "resubmit: 30 of 30 messages" in out
    assert counts(fake, "orders") == DEAD
    assert counts(fake, "orders/$DeadLetterQueue") == 0


def test_on_a_terminal_no_moves_nothing(fake: FakeNamespace) -> None:
    code, _out, shown = _on_a_terminal(["resubmit", "orders"], fake.connection_string, b"n\n")
    assert code == ExitCode.NOT_CONFIRMED
    assert "not confirmed" in shown
    assert counts(fake, "orders/$DeadLetterQueue") == DEAD


def test_import_sends_an_export_file_into_another_namespace(
        fake: FakeNamespace, tmp_path: Path) -> None:
    """The use it opens: the dead letters of one namespace, exported (issue 43's format),
    imported into a second fake, where they peek the same field for field."""
    export = tmp_path / "dead.ndjson"
    with ManagementClient.from_connection_string(fake.connection_string) as client, \
            export.open("w", encoding="utf-8") as out:
        export_entity(client.entity("orders/$DeadLetterQueue"), out)
        originals = client.entity("orders/$DeadLetterQueue").peek_messages(1, DEAD)
    with FakeNamespace() as second:
        second.add_queue("debug")
        refused = in_process("import", str(export), "debug",
                             conn=second.connection_string)
        assert refused.returncode == ExitCode.NOT_CONFIRMED
        dry = in_process("-o", "ndjson", "import", str(export), "debug", "--dry-run",
                         conn=second.connection_string)
        assert dry.returncode == ExitCode.OK, dry.stderr
        assert len(dry.stdout.splitlines()) == DEAD
        assert second.accounting("debug")["active"] == 0
        done = in_process("-o", "json", "import", str(export), "debug", "--yes",
                          conn=second.connection_string)
        assert done.returncode == ExitCode.OK, done.stderr
        assert json.loads(done.stdout)["sent"] == DEAD
        with ManagementClient.from_connection_string(second.connection_string) as client:
            copies = client.entity("debug").peek_messages(1, DEAD)
    assert [(m.message_id, m.body, m.application_properties) for m in copies] == [
        (m.message_id, m.body, m.application_properties) for m in originals]


def test_import_from_a_pipe_without_yes_is_refused_and_sends_nothing(
        fake: FakeNamespace) -> None:
    """Piped stdin is the file itself, so no one can be asked: refused as every destructive
    command refuses off a terminal (it once closed stdin, then failed on it with exit 2)."""
    out = io.StringIO()
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        export_entity(client.entity("orders/$DeadLetterQueue"), out, max_count=1)
    line = out.getvalue()
    refused = sbmgmt("import", "-", "archive", stdin=line, conn=fake.connection_string)
    assert refused.returncode == ExitCode.NOT_CONFIRMED, refused.stderr
    assert "stdin is not a terminal" in refused.stderr
    assert "closed file" not in refused.stderr
    assert counts(fake, "archive") == 0
    done = sbmgmt("import", "-", "archive", "--yes", stdin=line, conn=fake.connection_string)
    assert done.returncode == ExitCode.OK, done.stderr
    assert counts(fake, "archive") == 1


def test_import_of_a_bad_line_sends_nothing(fake: FakeNamespace, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"not": "a message"}\n', encoding="utf-8")
    done = in_process("import", str(bad), "archive", "--yes", conn=fake.connection_string)
    assert done.returncode == ExitCode.BAD_ARGUMENTS, done.stderr
    assert "line 1" in done.stderr
    assert counts(fake, "archive") == 0


def test_one_message_is_counted_in_the_singular(fake: FakeNamespace) -> None:
    one = ("resubmit", "orders", "--max", "1")
    dry = in_process(*one, "--dry-run", conn=fake.connection_string)
    assert "would resubmit 1 message of orders/$DeadLetterQueue to orders" in dry.stderr
    refused = in_process(*one, stdin="y\n", conn=fake.connection_string)
    assert refused.returncode == ExitCode.NOT_CONFIRMED
    assert "refused to resubmit 1 message:" in refused.stderr
    done = in_process(*one, "--yes", conn=fake.connection_string)
    assert done.returncode == ExitCode.OK, done.stderr
    assert ("resubmit: 1 of 1 message of orders/$DeadLetterQueue moved to orders"
            in done.stdout + done.stderr)
    assert counts(fake, "orders") == 1
