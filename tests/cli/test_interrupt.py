"""Ctrl-C in the middle of every long command, as a user presses it (issue 57).

Each command runs as a real ``python -m sbmgmt.cli`` process against a fake namespace on
127.0.0.1 (started here, embedded), on 10,000 messages made slow enough to
interrupt: with a pseudo-terminal on stdin and stderr (a shell: the progress bar drawn)
and without one. Once the fake shows the work under way, the test sends SIGINT; the
command must stop cleanly (``sbmgmt/cli/_long.py``: exit code 130 after its report), its
report must count what was done, and counting by MessageId and body in the source and the
target after, nothing is lost or doubled, and what was done is what the report says.
"""

from __future__ import annotations

import collections
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.export import read_messages, write_messages
from sbmgmt.cli import ExitCode
from sbmgmt.message import Message, ReceivedMessage

from .test_subprocess import ROOT, environment, interrupted_once_under_way
from .test_terminal import Terminal

#: 40 pages of peeks: an export reads 16 at once, then 32 (peek_all's window), so the
#: first pages are written a slowed reply before the rest come.
MESSAGES = 10_000
DEAD_LETTERS = "orders/$DeadLetterQueue"
#: Added to every AMQP round trip of the command's connections (seconds): its run then
#: takes tens of seconds, its first progress a few.
ROUND_TRIP = 0.1
#: Added to each reply of the management requests named in a case (seconds).
SLOW_REPLY = 0.3
#: Messages or settlements a request, and one request at a time, so the run is long.
SMALL = ["--batch-size", "20", "--in-flight", "1"]

Key = tuple[str, bytes]
"""A message as counted: its MessageId and its body."""


def key(message: ReceivedMessage | Message) -> Key:
    body = message.body
    return str(message.message_id), body if isinstance(body, bytes) else repr(body).encode()


ORIGINALS = [Message(body=f"order {n}".encode(), message_id=f"m{n}") for n in range(MESSAGES)]
EVERY = collections.Counter(key(m) for m in ORIGINALS)


def contents(fake: FakeNamespace, path: str) -> collections.Counter[Key]:
    """Every message of ``path`` (whatever its state), by MessageId and body."""
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        return collections.Counter(key(m) for m in client.entity(path).peek_all())


def settle_all(fake: FakeNamespace, status: str) -> None:
    """Send the originals to orders and settle every one with ``status`` (dead-letter,
    defer) through the management node, as a receiver would."""
    fake.send("orders", *ORIGINALS)
    locked = fake.receive_and_lock("orders", MESSAGES)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        for start in range(0, len(locked), 500):
            client.entity("orders").update_disposition(
                [m.lock_token for m in locked[start:start + 500]], status)


def moved(source: str, target: str) -> Callable[[FakeNamespace, str], int]:
    """What a move did: source and target together hold every original once; the number
    now in the target."""
    def count(fake: FakeNamespace, _stdout: str) -> int:
        left, arrived = contents(fake, source), contents(fake, target)
        assert left + arrived == EVERY  # nothing lost, nothing doubled
        return sum(arrived.values())
    return count


def removed(fake: FakeNamespace, _stdout: str) -> int:
    """What a purge or a completion did: the originals left are each there once; the
    number gone."""
    left = contents(fake, "orders")
    assert not left - EVERY and max(left.values(), default=1) == 1  # none doubled or new
    return MESSAGES - sum(left.values())


def imported(fake: FakeNamespace, _stdout: str) -> int:
    """What an import did: each message of the file at most once in the target."""
    arrived = contents(fake, "orders")
    assert not arrived - EVERY and max(arrived.values(), default=1) == 1
    return sum(arrived.values())


def exported(fake: FakeNamespace, stdout: str) -> int:
    """What an export to stdout did: the entity unchanged; stdout holds a run of its
    messages, each once."""
    assert contents(fake, "orders") == EVERY
    written = collections.Counter(key(m) for m in read_messages(io.StringIO(stdout)))
    assert not written - EVERY and max(written.values(), default=1) == 1
    return sum(written.values())


def write_import_file(fake: FakeNamespace, tmp: Path) -> None:
    fake.add_queue("staging")
    fake.send("staging", *ORIGINALS)
    with ManagementClient.from_connection_string(fake.connection_string) as client, (
            tmp / "import.jsonl").open("w", encoding="utf-8") as out:
        write_messages(client.entity("staging").peek_all(), out)


@dataclass(frozen=True)
class Case:
    """One long command: how to set it up, run it, see it under way, and count what it
    did."""

    args: Callable[[Path], list[str]]
    words: tuple[str, ...]
    """The report's name for what it did (``deleted``...), in the record's counts."""
    prepare: Callable[[FakeNamespace, Path], None]
    under_way: Callable[[FakeNamespace, Path], bool]
    """Whether the run is under way: the fake shows work done (or, for an export, the
    output has its first messages)."""
    done: Callable[[FakeNamespace, str], int]
    """What the fake (and stdout, given) show was done, nothing lost or doubled."""
    slow: str | None = None
    """A management operation whose replies are slowed (besides every round trip)."""
    slow_reply: float = SLOW_REPLY
    """How long each of ``slow``'s replies is held (seconds)."""
    total_known: bool = True
    """Whether the command knows how many there are before it starts (its bar has a
    total); an export does not (a running count)."""
    data_on_stdout: bool = False
    """stdout holds the messages (an export): the report is the sentence on stderr."""


CASES = {
    "purge": Case(
        lambda _tmp: ["purge", "orders", "--yes", "--batch-size", "10", "--in-flight", "2"],
        ("deleted",),
        lambda fake, _tmp: fake.send("orders", *ORIGINALS),
        lambda fake, _tmp: fake.accounting("orders")["deleted"] > 0, removed,
        slow="com.microsoft:batch-delete-messages"),
    "resubmit": Case(
        lambda _tmp: ["resubmit", "orders", "--yes", *SMALL], ("resubmitted", "moved"),
        lambda fake, _tmp: settle_all(fake, "suspended"),
        lambda fake, _tmp: fake.accounting("orders")["active"] > 0,
        moved(DEAD_LETTERS, "orders")),
    "move": Case(
        lambda _tmp: ["move", "orders", "archive", "--yes", *SMALL], ("moved",),
        lambda fake, _tmp: fake.send("orders", *ORIGINALS),
        lambda fake, _tmp: fake.accounting("archive")["active"] > 0, moved("orders", "archive")),
    "import": Case(
        lambda tmp: ["import", str(tmp / "import.jsonl"), "orders", "--yes", *SMALL],
        ("sent",), write_import_file,
        lambda fake, _tmp: fake.accounting("orders")["active"] > 0, imported),
    "export": Case(
        lambda _tmp: ["export", "orders"], ("exported",),
        lambda fake, _tmp: fake.send("orders", *ORIGINALS),
        lambda _fake, tmp: (tmp / "out").stat().st_size > 0, exported,
        slow="com.microsoft:peek-message", total_known=False, data_on_stdout=True,
        slow_reply=1.0),
    "deferred complete": Case(
        lambda _tmp: ["deferred", "complete", "orders", "--yes", *SMALL], ("completed",),
        lambda fake, _tmp: settle_all(fake, "defered"),
        lambda fake, _tmp: fake.accounting("orders")["deferred"] < MESSAGES, removed),
    "deferred dead-letter": Case(
        lambda _tmp: ["deferred", "dead-letter", "orders", "--yes", *SMALL],
        ("dead-lettered", "dead_lettered"), lambda fake, _tmp: settle_all(fake, "defered"),
        lambda fake, _tmp: fake.accounting("orders")["dead_lettered"] > 0,
        moved("orders", DEAD_LETTERS)),
}


#: The suite's ``fake`` (tests/conftest.py) holds these two queues in this module.
pytestmark = pytest.mark.fake_namespace(queues=["orders", "archive"])


def reported(record: Any, words: tuple[str, ...]) -> int:
    """How many the report says were done: its counts (or a field of that name: a number
    or a list; or, for a list of rows, the rows with that outcome)."""
    if isinstance(record, list):
        return sum(1 for row in record if row.get("outcome") in words)
    for where in (record.get("counts") or {}, record):
        for word in words:
            if word in where:
                value = where[word]
                return len(value) if isinstance(value, list) else int(value)
    raise AssertionError(f"the report counts none of {words}: {record}")


def was_cancelled(record: Any) -> bool:
    if isinstance(record, list):
        return any(row.get("outcome") == "not_attempted" for row in record)
    return record.get("outcome") == "cancelled" or record.get("cancelled") is True


def interrupted(fake: FakeNamespace, case: Case, tmp: Path, *,
                terminal: bool) -> tuple[int, str, str]:
    """Run the case's command, SIGINT it once the fake shows it under way; (exit code,
    stdout, what stderr or the terminal showed)."""
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string,
                           "TERM": "xterm", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    screen = Terminal.open() if terminal else None
    out, err = tmp / "out", tmp / "err"
    fake.network_latency = ROUND_TRIP
    slowed = None if case.slow is None else fake.faults.latency(
        case.slow_reply, entity="orders", operation=case.slow)
    try:
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "sbmgmt.cli", "-o", "json", "--timeout", "30",
                 *case.args(tmp)],
                stdin=subprocess.DEVNULL if screen is None else screen.slave, stdout=stdout,
                stderr=stderr if screen is None else screen.slave, env=env, cwd=ROOT)
            code = interrupted_once_under_way(process, lambda: case.under_way(fake, tmp))
    finally:
        fake.network_latency = 0
        if slowed is not None:
            slowed.remove()
    shown = err.read_text() if screen is None else screen.text()
    return code, out.read_text(), shown


@pytest.mark.parametrize("terminal", [False, True], ids=["no-terminal", "terminal"])
@pytest.mark.parametrize("name", list(CASES))
def test_ctrl_c_stops_cleanly_reports_what_was_done_and_loses_nothing(
        fake: FakeNamespace, tmp_path: Path, name: str, terminal: bool) -> None:
    case = CASES[name]
    case.prepare(fake, tmp_path)
    code, stdout, shown = interrupted(fake, case, tmp_path, terminal=terminal)
    assert code == ExitCode.INTERRUPTED, (code, stdout, shown)
    assert "error: interrupted" not in shown  # stopped cleanly: one Ctrl-C, not an abort
    if case.data_on_stdout:
        said = re.search(r"(\d[\d,]*) messages? .*cancel", shown)
        assert said is not None, shown
        record: Any = {case.words[0]: int(said.group(1).replace(",", ""))}
    else:
        record = json.loads(stdout)
        assert was_cancelled(record), record
    done = case.done(fake, stdout)
    assert 0 < done < MESSAGES, (done, record)  # interrupted in the middle
    assert reported(record, case.words) == done
    assert "cancelled (Ctrl-C)" in shown  # sbmgmt/cli/_long.py's word after the report
    if terminal and case.total_known:
        assert f"/{MESSAGES}" in shown  # the bar was drawn: done/total


def test_an_export_to_a_file_cut_by_ctrl_c_leaves_the_file_as_it_was(
        fake: FakeNamespace, tmp_path: Path) -> None:
    """A file is replaced only when the new one is whole: Ctrl-C leaves it as it was, and
    the report says how far the export had come."""
    case = CASES["export"]
    case.prepare(fake, tmp_path)
    kept = tmp_path / "export.jsonl"
    kept.write_text("the file before\n", encoding="utf-8")
    to_file = Case(lambda _tmp: ["export", "orders", "--file", str(kept)], case.words,
                   case.prepare, lambda _fake, tmp: any(
                       part.stat().st_size > 0 for part in tmp.glob(".export.jsonl.*.partial")),
                   case.done, slow=case.slow, slow_reply=case.slow_reply)
    code, stdout, shown = interrupted(fake, to_file, tmp_path, terminal=False)
    assert code == ExitCode.INTERRUPTED, (code, stdout, shown)
    record = json.loads(stdout)
    assert was_cancelled(record), record
    assert 0 < reported(record, case.words) < MESSAGES
    assert kept.read_text(encoding="utf-8") == "the file before\n"
    assert contents(fake, "orders") == EVERY
