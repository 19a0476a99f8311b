"""``sbmgmt find ... -o ndjson | sbmgmt resubmit ENTITY --from-stdin --yes``: two processes
and a pipe, against a fake namespace on loopback; exactly the messages found are resubmitted
and gone from the dead-letter queue, counted by MessageId; a line of another entity (its
MessageId is not the one at that sequence number here) takes nothing; lines that are not
the export format are refused before anything moves."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from tests.cli.test_subprocess import LIMIT, ROOT, environment


@pytest.fixture
def dead() -> Iterator[FakeNamespace]:
    with FakeNamespace() as fake:
        for queue in ("orders", "other"):
            fake.add_queue(queue)
            fake.send(queue, *(Message(body=json.dumps(
                {"order": {"id": n, "status": "failed" if n % 4 == 1 else "ok"}}).encode(),
                message_id=f"{queue}-{n}") for n in range(12)))
            locked = fake.receive_and_lock(queue, 12)
            with ManagementClient.from_connection_string(fake.connection_string) as client:
                client.entity(queue).update_disposition([m.lock_token for m in locked
                                                         if m.lock_token is not None],
                                                        "suspended", dead_letter_reason="Bad")
        yield fake


def _sbmgmt(fake: FakeNamespace, *args: str, stdin: str | None = None,
            ) -> subprocess.CompletedProcess[str]:
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string}
    return subprocess.run([sys.executable, "-m", "sbmgmt.cli", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=LIMIT,
                          check=False)


def _ids(fake: FakeNamespace, path: str) -> list[str]:
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        return sorted(str(m.message_id) for m in client.entity(path).peek_all())


def test_what_find_found_is_resubmitted_and_gone(dead: FakeNamespace) -> None:
    found = _sbmgmt(dead, "-o", "ndjson", "find", "orders", "--dead-letter", "--path",
                    "$.order.status == 'failed'")
    assert found.returncode == 0, found.stderr
    assert len(found.stdout.splitlines()) == 3
    moved = _sbmgmt(dead, "resubmit", "orders", "--from-stdin", "--yes", stdin=found.stdout)
    assert moved.returncode == 0, moved.stderr
    assert "resubmit: 3 of 3 messages of orders/$DeadLetterQueue moved to orders" in moved.stdout
    assert _ids(dead, "orders") == ["orders-1", "orders-5", "orders-9"]
    assert _ids(dead, "orders/$DeadLetterQueue") == sorted(
        f"orders-{n}" for n in range(12) if n % 4 != 1)


def test_lines_of_another_entity_take_nothing(dead: FakeNamespace) -> None:
    found = _sbmgmt(dead, "-o", "ndjson", "find", "other", "--dead-letter", "--body", "failed")
    assert len(found.stdout.splitlines()) == 3
    moved = _sbmgmt(dead, "resubmit", "orders", "--from-stdin", "--yes", stdin=found.stdout)
    assert "no messages of orders/$DeadLetterQueue to resubmit" in moved.stdout + moved.stderr
    assert len(_ids(dead, "orders/$DeadLetterQueue")) == 12 and _ids(dead, "orders") == []


def test_lines_that_are_not_the_export_format_are_refused(dead: FakeNamespace) -> None:
    moved = _sbmgmt(dead, "resubmit", "orders", "--from-stdin", "--yes",
                    stdin='{"sequence_number": 3}\n')
    assert moved.returncode == 2
    assert moved.stderr.startswith("error: stdin: line 1: ")
    assert len(_ids(dead, "orders/$DeadLetterQueue")) == 12
