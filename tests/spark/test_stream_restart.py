"""A killed streaming query restarts where it stopped, and the examples run as a user
runs them.

``examples/dlq_audit_stream.py`` tails ``q/$DeadLetterQueue`` into Parquet. It runs as
a subprocess the way a user runs it from a venv that is not activated
(``.venv/bin/python examples/...``: ``python3`` on ``PATH`` is another interpreter and
``PYSPARK_PYTHON`` is unset), while a thread keeps dead-lettering messages. Each run is
killed with SIGKILL (its whole process group: driver, JVM and Python workers) at a
random point, several times in a row; a last run with ``--available-now`` (in this
process, on the test session, to spare a JVM start) reads to the end and draws the
chart. The table must then equal what the official azure-servicebus SDK peeks from the
dead-letter queue: no duplicates, no gaps.
"""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusSubQueue

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message
from sbmgmt.spark import WorkerPythonError, use_driver_python
from tests._spark import JVM_OPTIONS
from tests._waiting import wait_until

from .conftest import ROOT, load_example

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

EXAMPLE = ROOT / "examples" / "dlq_audit_stream.py"
REASONS = ("MaxDeliveryCountExceeded", "BadPayload", "Expired")
KILLS = 3


def _other_python3(directory: Path) -> Path:
    """A ``python3`` that is not the venv's (it cannot run anything)."""
    directory.mkdir()
    stub = directory / "python3"
    stub.write_text("#!/bin/sh\necho 'python3 from PATH: not the venv interpreter' >&2\n"
                    "exit 3\n")
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    return stub


def _user_env(bin_dir: Path) -> dict[str, str]:
    """The environment of ``.venv/bin/python examples/...`` without an activated venv."""
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(
        [str(bin_dir), *(p for p in env.get("PATH", "").split(os.pathsep)
                         if p and os.path.abspath(p) != venv_bin)])
    env["PYTHONPATH"] = str(ROOT)  # this checkout's sbmgmt (a user's venv has it installed)
    # The JVM options of the suite's session (tests/_spark.py: less CPU per JVM start, the
    # same behaviour), for the driver and for spark-submit's launcher JVM before it.
    env["SPARK_LAUNCHER_OPTS"] = JVM_OPTIONS
    env["PYSPARK_SUBMIT_ARGS"] = (
        "--master local[2] --conf spark.driver.bindAddress=127.0.0.1 "
        "--conf spark.driver.host=127.0.0.1 --conf spark.ui.enabled=false "
        f"--conf 'spark.driver.extraJavaOptions={JVM_OPTIONS}' "
        "--conf spark.ui.showConsoleProgress=false pyspark-shell")
    return env


class DeadLetterer(threading.Thread):
    """Sends messages to ``q`` and dead-letters them, a few every 100 ms, until stopped."""

    def __init__(self, fake: FakeNamespace) -> None:
        super().__init__(daemon=True)
        self.fake = fake
        self.stopping = threading.Event()
        self.sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with ManagementClient.from_connection_string(self.fake.connection_string) as client:
                while not self.stopping.wait(0.1):
                    self.fake.send("q", *(Message(body=f"b-{self.sent + i}".encode(),
                                                  message_id=f"d-{self.sent + i}")
                                          for i in range(4)))
                    locked = self.fake.receive_and_lock("q", 4)
                    client.entity("q").update_disposition(
                        [m.lock_token for m in locked], "suspended",
                        dead_letter_reason=REASONS[(self.sent // 4) % len(REASONS)])
                    self.sent += len(locked)
        except BaseException as exc:  # reported by the test
            self.error = exc


def _run(env: dict[str, str], fake: FakeNamespace, out: Path, log: Path,
         *extra: str) -> subprocess.Popen[str]:
    with log.open("a") as errors:
        return subprocess.Popen(
            [sys.executable, str(EXAMPLE), fake.connection_string, "q", str(out), *extra],
            env=env, stdout=subprocess.PIPE, stderr=errors, text=True, start_new_session=True)


def _committed(out: Path) -> int:
    return len(list((out / "checkpoint" / "commits").glob("[0-9]*")))


def _kill_at_random_point(run: subprocess.Popen[str], out: Path, chance: random.Random,
                          log: Path) -> float:
    """SIGKILL the run's process group once it has committed a new micro-batch, after a
    random delay (0-2 s; a micro-batch is triggered every second): mid-batch or between
    batches. Returns the delay."""
    committed = _committed(out)
    wait_until(lambda: run.poll() is not None or _committed(out) > committed, 120)
    if run.poll() is not None:
        pytest.fail(f"the example exited on its own:\n{log.read_text()[-3000:]}")
    delay = round(chance.uniform(0.0, 2.0), 2)
    time.sleep(delay)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    return delay


def _sdk_dead_letters(fake: FakeNamespace) -> list[tuple[int, str]]:
    peeked: list[tuple[int, str]] = []
    with ServiceBusClient.from_connection_string(fake.connection_string) as client, \
            client.get_queue_receiver("q", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        cursor = 0
        while page := dlq.peek_messages(max_message_count=250, sequence_number=cursor):
            peeked.extend((m.sequence_number, str(m.message_id)) for m in page)
            cursor = page[-1].sequence_number + 1  # type: ignore[operator]
    return peeked


@pytest.mark.realtime("each run is a process with a JVM of its own, killed while it streams; "
                      "three runs in a row")
def test_killed_stream_restarts_without_duplicates_or_gaps(
    spark: Any, namespace: FakeNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _user_env(tmp_path / "bin")
    _other_python3(tmp_path / "bin")
    out, log = tmp_path / "audit", tmp_path / "example.log"
    seed = int.from_bytes(os.urandom(4), "big")
    chance = random.Random(seed)
    delays = []
    feeder = DeadLetterer(namespace)
    feeder.start()
    try:
        for _ in range(KILLS):
            run = _run(env, namespace, out, log)
            assert run.stdout is not None
            assert run.stdout.readline().startswith("following"), log.read_text()[-3000:]
            delays.append(_kill_at_random_point(run, out, chance, log))
            run.stdout.close()
    finally:
        feeder.stopping.set()
        feeder.join()
    assert feeder.error is None, feeder.error
    batches = _committed(out)
    capsys.readouterr()
    audit = load_example("dlq_audit_stream")
    audit.main([namespace.connection_string, "q", str(out), "--available-now"])
    summary = capsys.readouterr().out
    context = (f"seed {seed}, kills {delays} s after a commit, {batches} batches committed "
               f"before the last run; example log:\n{log.read_text()[-3000:]}")
    table = spark.read.parquet(str(out / "dead_letters")).select(
        "sequence_number", "message_id", "dead_letter_reason").collect()
    rows = sorted((r.sequence_number, r.message_id) for r in table)
    expected = _sdk_dead_letters(namespace)
    assert len(expected) == feeder.sent > 0
    assert rows == expected, context  # no duplicates, no gaps
    counts = {reason: sum(r.dead_letter_reason == reason for r in table) for reason in REASONS}
    assert [line.split() for line in summary.splitlines()[1:]] == [
        [str(count), reason] for reason, count in
        sorted(counts.items(), key=lambda item: (-item[1], item[0]))], summary
    assert (out / "reasons.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_workers_run_the_driver_interpreter_or_fail_at_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = spark.sparkContext
    monkeypatch.setattr(context, "pythonExec", "python3")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    use_driver_python(spark)  # a local master: the driver's interpreter
    assert context.pythonExec == sys.executable
    stub = _other_python3(tmp_path / "bin")
    monkeypatch.setenv("PYSPARK_PYTHON", str(stub))
    with pytest.raises(WorkerPythonError) as caught:
        use_driver_python(spark)
    message = str(caught.value)
    assert "\n" not in message
    assert f"set PYSPARK_PYTHON to {sys.executable!r}" in message
    assert str(stub) in message
