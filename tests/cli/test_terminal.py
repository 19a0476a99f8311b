"""Runs attached to a terminal (a pseudo-terminal): records go to stdout whatever stderr
is, and the progress bar to stderr only.

Each case runs ``python -m sbmgmt.cli`` with stdout and stderr each either a file or the
slave end of its own pseudo-terminal, against a fake namespace on loopback that holds
more messages than one peek page.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from fakes import FakeNamespace
from sbmgmt.message import Message

from .test_subprocess import LIMIT, ROOT, environment

MESSAGES = 150  # two peek pages of 100


@dataclass
class Terminal:
    """A pseudo-terminal whose master end is drained on a thread (so the child never
    blocks on a full terminal buffer)."""

    master: int
    slave: int
    chunks: list[bytes] = field(default_factory=list)
    _reader: threading.Thread | None = None

    @classmethod
    def open(cls) -> Terminal:
        master, slave = pty.openpty()
        terminal = cls(master, slave)
        terminal._reader = threading.Thread(target=terminal._drain, daemon=True)
        terminal._reader.start()
        return terminal

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the slave end is closed everywhere
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    def text(self) -> str:
        """Everything written to the terminal (call after the child ended)."""
        os.close(self.slave)
        assert self._reader is not None
        self._reader.join(LIMIT)
        os.close(self.master)
        return b"".join(self.chunks).decode("utf-8", "replace")


@pytest.fixture
def orders() -> Iterator[str]:
    with FakeNamespace() as fake:
        fake.add_queue("orders")
        for i in range(MESSAGES):
            fake.send("orders", Message(body=f"order {i}".encode()))
        yield fake.connection_string


def run(args: list[str], conn: str, stdout: int | IO[bytes],
        stderr: int | IO[bytes]) -> int:
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": conn, "TERM": "xterm",
                           "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "sbmgmt.cli", *args], stdin=subprocess.DEVNULL,
        stdout=stdout, stderr=stderr, env=env, cwd=ROOT, timeout=LIMIT, check=False,
    ).returncode


def ndjson_bodies(text: str) -> list[str]:
    return [json.loads(line)["body_text"] for line in text.splitlines() if line.strip()]


PEEK_ALL = ["-o", "ndjson", "peek", "orders", "--all"]
EVERY_BODY = [f"order {i}" for i in range(MESSAGES)]


def test_ndjson_to_a_file_while_stderr_is_a_terminal(orders: str, tmp_path: Path) -> None:
    stderr = Terminal.open()
    with (tmp_path / "records.ndjson").open("wb") as out:
        code = run(PEEK_ALL, orders, out, stderr.slave)
    progress = stderr.text()
    assert code == 0, progress
    assert ndjson_bodies((tmp_path / "records.ndjson").read_text()) == EVERY_BODY
    assert "peeking" in progress  # the bar was drawn, on stderr
    assert "order 0" not in progress


def test_ndjson_schedule_in_batches_to_a_pipe_while_stderr_is_a_terminal(
        orders: str, tmp_path: Path) -> None:
    stderr = Terminal.open()
    bodies = [arg for i in range(5) for arg in ("--body", f"later {i}")]
    with (tmp_path / "scheduled.ndjson").open("wb") as out:
        code = run(["-o", "ndjson", "schedule", "orders", "--at", "+1h", "--batch-size", "2",
                    *bodies], orders, out, stderr.slave)
    progress = stderr.text()
    assert code == 0, progress
    lines = (tmp_path / "scheduled.ndjson").read_text().splitlines()
    assert len(lines) == 5
    assert all("sequence_number" in json.loads(line) for line in lines)
    assert "sequence_number" not in progress


def test_ndjson_to_a_terminal_with_stderr_to_a_file(orders: str, tmp_path: Path) -> None:
    stdout = Terminal.open()
    with (tmp_path / "stderr.txt").open("wb") as err:
        code = run(PEEK_ALL, orders, stdout.slave, err)
    shown = stdout.text()
    assert code == 0
    assert (tmp_path / "stderr.txt").read_text() == ""
    assert ndjson_bodies(shown.replace("\r\n", "\n")) == EVERY_BODY


def test_ndjson_when_both_are_terminals_keeps_the_lines_whole(orders: str) -> None:
    stdout, stderr = Terminal.open(), Terminal.open()
    code = run(PEEK_ALL, orders, stdout.slave, stderr.slave)
    shown, progress = stdout.text(), stderr.text()
    assert code == 0, progress
    assert ndjson_bodies(shown.replace("\r\n", "\n")) == EVERY_BODY
    assert progress == ""  # the streamed lines are the progress: no bar to tear them


def test_table_to_a_terminal_with_the_bar_on_the_other_terminal(orders: str) -> None:
    stdout, stderr = Terminal.open(), Terminal.open()
    code = run(["peek", "orders", "--all"], orders, stdout.slave, stderr.slave)
    shown, progress = stdout.text(), stderr.text()
    assert code == 0, progress
    assert "order 149" in shown
    assert "peeking" in progress and "order" not in progress.replace("peeking", "")
