"""``sbmgmt entities --watch`` (issue 63): NDJSON samples for scripts with traffic from the
official SDK between them, the live table on a pseudo-terminal redrawn in place, Ctrl-C,
and the options refused in words.

The command runs in its own process (``python -m sbmgmt.cli``) against the embedded fake's
AMQP and HTTP ports; the test sends between two samples when it has read the first one's
lines (no sleeping: the samples pace themselves). What a watch refuses is said before it
samples: those run in this process (:func:`~tests.cli.conftest.in_process`).
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from tests._waiting import wait_until

from .conftest import in_process
from .test_subprocess import LIMIT, ROOT, environment, reaped
from .test_terminal import Terminal

ENTITIES = ("orders", "t", "t/Subscriptions/s")


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders")
        namespace.add_topic("t")
        namespace.add_subscription("t", "s")
        yield namespace


def arguments(fake: FakeNamespace, *args: str) -> list[str]:
    """``sbmgmt``'s arguments for ``args`` against ``fake`` (its AMQP and HTTP ports)."""
    return ["-c", fake.connection_string, *args, "--http-port", str(fake.http_port)]


def command(fake: FakeNamespace, *args: str) -> list[str]:
    return [sys.executable, "-m", "sbmgmt.cli", *arguments(fake, *args)]


def send(fake: FakeNamespace, count: int) -> None:
    with ServiceBusClient.from_connection_string(fake.connection_string) as client, \
            client.get_queue_sender("orders") as sender:
        sender.send_messages([ServiceBusMessage(f"order {i}") for i in range(count)])


def test_ndjson_is_a_line_per_entity_and_sample_with_changes_and_rates(
        fake: FakeNamespace) -> None:
    with reaped(subprocess.Popen(
            command(fake, "-o", "ndjson", "entities", "--watch", "--samples", "4",
                    "--interval", "0.3"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
            cwd=ROOT)) as process:
        assert process.stdout is not None
        first = [json.loads(process.stdout.readline()) for _ in ENTITIES]
        send(fake, 7)  # after the first sample: seen by a later one
        rest, errors = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, errors
    records: list[dict[str, Any]] = first + [json.loads(line) for line in rest.splitlines()]

    assert [(r["sample"], r["name"]) for r in records] == [
        (n, name) for n in (1, 2, 3, 4) for name in ENTITIES]
    orders = [r for r in records if r["name"] == "orders"]
    assert orders[0]["active"] == 0 and orders[-1]["active"] == 7
    assert orders[-1]["active_change"] == 7 and orders[-1]["dead_letter_change"] == 0
    assert orders[0]["in_per_second"] is None  # no sample before the first
    # Each rate is the count's change over the interval; together, the messages sent.
    moved = 0.0
    for before, after in itertools.pairwise(orders):
        seconds = _seconds(after["time"]) - _seconds(before["time"])
        assert after["in_per_second"] * seconds == pytest.approx(
            after["total"] - before["total"], abs=0.005 * seconds + 0.002 * 7 / seconds)
        assert after["out_per_second"] == 0
        moved += after["in_per_second"] * seconds
    assert moved == pytest.approx(7, abs=0.05)
    topic = next(r for r in records if r["name"] == "t")
    assert (topic["kind"], topic["active"], topic["in_per_second"]) == ("topic", None, None)


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_the_table_redraws_in_place_on_a_terminal_and_ends_after_its_samples(
        fake: FakeNamespace) -> None:
    send(fake, 3)
    terminal = Terminal.open()
    env = environment() | {"TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    code = subprocess.run(
        command(fake, "entities", "--watch", "--samples", "3", "--interval", "0.2",
                "--match", "orders"),
        stdin=subprocess.DEVNULL, stdout=terminal.slave, stderr=terminal.slave, env=env,
        cwd=ROOT, timeout=LIMIT, check=False).returncode
    text = terminal.text()
    assert code == 0, text
    # rich's Live: each redraw moves the cursor up over the last table ("\x1b[1A", erase).
    assert all(f"sample {n} " in text for n in (1, 2, 3)) and "sample 4" not in text
    assert "\x1b[1A" in text and "\x1b[2K" in text
    last = text.rsplit("sample 3", 1)[1]
    assert "orders" in last and "t/Subscriptions" not in last
    for header in ("active", "Δ active", "dead-letter", "Δ dead-letter", "in/s", "out/s"):
        assert header in last


def test_ctrl_c_ends_the_watch_with_130_and_the_terminal_s_cursor_shown(
        fake: FakeNamespace) -> None:
    terminal = Terminal.open()
    env = environment() | {"TERM": "xterm", "COLUMNS": "100"}
    process = subprocess.Popen(
        command(fake, "entities", "--watch", "--interval", "0.2"),
        stdin=subprocess.DEVNULL, stdout=terminal.slave, stderr=terminal.slave, env=env,
        cwd=ROOT)
    with reaped(process):
        assert wait_until(lambda: b"sample 2 " in b"".join(terminal.chunks), LIMIT)
        process.send_signal(signal.SIGINT)
        assert process.wait(LIMIT) == 130
    text = terminal.text()
    assert "interrupted" in text and "Traceback" not in text
    assert text.rfind("\x1b[?25h") > text.rfind("\x1b[?25l")  # the cursor shown again


@pytest.mark.parametrize(("args", "said"), [
    (["-o", "json", "entities", "--watch"], "not -o json"),
    (["entities", "--samples", "2"], "--samples and --interval go with --watch"),
    (["entities", "orders", "--watch"], "choose its entities with --match"),
    (["entities", "--watch", "--interval", "0"], "0.1"),
])
def test_what_a_watch_cannot_do_is_refused_in_words(fake: FakeNamespace, args: list[str],
                                                    said: str) -> None:
    done = in_process(*arguments(fake, *args))
    assert done.returncode == 2, done
    assert said in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""

