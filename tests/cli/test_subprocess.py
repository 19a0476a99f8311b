"""Real ``python -m sbmgmt.cli`` processes: --emulator end to end, fake serve, exit codes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sbmgmt.cli import ExitCode
from tests._waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60  # seconds any one process may take before the test fails


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SERVICEBUS_CONNECTION_STRING", "SERVICEBUS_NAMESPACE")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextlib.contextmanager
def reaped(process: subprocess.Popen[Any]) -> Iterator[subprocess.Popen[Any]]:
    """``process``, killed if it still runs when the block ends, and waited for, its pipes
    read and closed: a failed test leaves no process behind (whose ``Popen``, collected
    in a later test of the worker, would warn that it is still running)."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=LIMIT)


def interrupted_once_under_way(process: subprocess.Popen[Any],
                               under_way: Callable[[], bool]) -> int:
    """Ctrl-C (SIGINT) to ``process`` once ``under_way()`` says its work has begun; its exit
    code. It must still run then; it is killed and reaped if it outlives the block."""
    with reaped(process):
        assert wait_until(lambda: under_way() or process.poll() is not None, LIMIT)
        assert process.poll() is None, "it ended before it was under way"
        process.send_signal(signal.SIGINT)
        return process.wait(LIMIT)


def sbmgmt(*args: str, stdin: str | None = None,
           conn: str | None = None) -> subprocess.CompletedProcess[str]:
    env = environment()
    if conn is not None:
        env["SERVICEBUS_CONNECTION_STRING"] = conn
    return subprocess.run(
        [sys.executable, "-m", "sbmgmt.cli", *args], input=stdin, capture_output=True,
        text=True, env=env, cwd=ROOT, timeout=LIMIT, check=False,
    )


def fake_serve_once(*args: str, cwd: Path = ROOT) -> tuple[str, str]:
    """``sbmgmt fake serve ARGS`` in its own process until its first stdout line; returns
    that line and what it wrote on stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sbmgmt.cli", "fake", "serve", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=environment(), cwd=cwd)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=LIMIT)
    return line, stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sbmgmt fake serve --config`` in its own process, one for the module (its tests
    leave ``jobs`` as they found it: empty); yields its connection string."""
    config = {"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns",
        "Queues": [{"Name": "jobs", "Properties": {}}],
        "Topics": [{"Name": "news", "Properties": {},
                    "Subscriptions": [{"Name": "all", "Properties": {}, "Rules": []}]}],
    }], "Logging": {"Type": "Console"}}}
    path = tmp_path_factory.mktemp("fake-serve") / "Config.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [sys.executable, "-m", "sbmgmt.cli", "fake", "serve", "--config", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(), cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("Endpoint=sb://127.0.0.1:"), line
        yield line
    finally:
        process.terminate()
        try:  # communicate, not wait: it reads and closes the pipes (no unclosed file)
            process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=LIMIT)


def test_emulator_end_to_end_schedule() -> None:
    result = sbmgmt("--emulator", "-o", "json", "schedule", "orders", "--at", "+10m",
                    "--body", "a", "--body", "b")
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert [r["sequence_number"] for r in records] == [1, 2]
    assert result.stderr == ""


def test_emulator_end_to_end_peek_ndjson_is_quiet_on_pipes() -> None:
    result = sbmgmt("--emulator", "-o", "ndjson", "peek", "orders", "--all")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == ""


def test_against_fake_serve_stdin_ndjson_then_peek(served: str) -> None:
    lines = "".join(json.dumps({"body": f"job {i}", "application_properties": {"i": i}}) + "\n"
                    for i in range(3))
    scheduled = sbmgmt("-o", "ndjson", "schedule", "jobs", "--at", "+1h", stdin=lines,
                       conn=served)
    assert scheduled.returncode == 0, scheduled.stderr
    seqs = [json.loads(line)["sequence_number"] for line in scheduled.stdout.splitlines()]
    assert len(seqs) == 3

    peeked = sbmgmt("-o", "json", "peek", "jobs", conn=served)
    assert peeked.returncode == 0, peeked.stderr
    records = json.loads(peeked.stdout)
    assert [r["body_text"] for r in records] == ["job 0", "job 1", "job 2"]
    assert [r["application_properties"] for r in records] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert {r["state"] for r in records} == {"scheduled"}

    cancelled = sbmgmt("-o", "json", "cancel", "jobs", *map(str, seqs), conn=served)
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(sbmgmt("-o", "json", "peek", "jobs", conn=served).stdout) == []


def test_against_fake_serve_rules(served: str) -> None:
    listed = sbmgmt("-o", "json", "rules", "list", "news/all", conn=served)
    assert listed.returncode == 0, listed.stderr
    assert [r["name"] for r in json.loads(listed.stdout)] == ["$Default"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["rules", "remove", "news/all", "missing"], ExitCode.NOT_FOUND),
        (["peek", "nosuch"], ExitCode.NOT_FOUND),
        (["locks", "renew", "jobs", "00000000-0000-0000-0000-000000000001"],
         ExitCode.LOCK_LOST),
        (["schedule", "jobs", "--at", "someday", "--body", "x"], ExitCode.BAD_ARGUMENTS),
        (["peek", "jobs", "--count", "zero"], ExitCode.BAD_ARGUMENTS),
    ],
)
def test_exit_codes_of_real_processes(served: str, args: list[str], code: ExitCode) -> None:
    result = sbmgmt(*args, conn=served)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_auth_failure_in_a_real_process_hides_the_key(served: str) -> None:
    wrong = served.replace("SharedAccessKey=SAS_KEY_VALUE", "SharedAccessKey=TOPSECRETKEY")
    for extra in ([], ["--debug"]):
        result = sbmgmt(*extra, "peek", "jobs", conn=wrong)
        assert result.returncode == ExitCode.AUTH, result.stderr
        assert "TOPSECRETKEY" not in result.stderr
    assert "Traceback" in result.stderr


def test_refused_endpoint_fails_at_once_naming_it_and_is_transient() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        # the default --timeout (30 s): only the refusal can end this before LIMIT
        result = sbmgmt("peek", "q", conn=(
            f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=k;SharedAccessKey=b;"
            "UseDevelopmentEmulator=true"))
    assert result.returncode == ExitCode.TRANSIENT, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"cannot connect to 127.0.0.1:{port}: connection refused" in result.stderr
    assert "***" not in result.stderr  # the key "b" is not hidden inside words


def test_unknown_host_name_fails_at_once_with_the_endpoint_exit_code() -> None:
    result = sbmgmt("peek", "q", conn=(
        "Endpoint=sb://nohost.invalid/;SharedAccessKeyName=k;SharedAccessKey=secret"))
    assert result.returncode == ExitCode.ENDPOINT, result.stderr
    assert "cannot connect to nohost.invalid:5671: the host name was not found" in (
        result.stderr)
