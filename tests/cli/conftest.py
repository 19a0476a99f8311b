"""Fixtures for CLI tests: a runner bound to the suite's fake namespace (``fake``,
tests/conftest.py), and :func:`in_process`, a command run here as a real process is run."""

from __future__ import annotations

import json
import subprocess
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from fakes import FakeNamespace
from sbmgmt.cli import app


@dataclass
class Cli:
    """Runs ``sbmgmt`` in-process against one connection string."""

    connection_string: str

    def run(self, *args: str, input: str | None = None, output: str = "json") -> Result:
        runner = CliRunner()
        return runner.invoke(
            app,
            ["-c", self.connection_string, "--timeout", "10", "-o", output, *args],
            input=input,
        )

    def json(self, *args: str, input: str | None = None) -> Any:
        """Run with ``-o json``; assert success and return the parsed stdout."""
        result = self.run(*args, input=input)
        assert result.exit_code == 0, (result.exit_code, result.stderr, result.exception)
        return json.loads(result.stdout)

    def ndjson(self, *args: str) -> list[Any]:
        result = self.run(*args, output="ndjson")
        assert result.exit_code == 0, (result.exit_code, result.stderr)
        return [json.loads(line) for line in result.stdout.splitlines()]


def in_process(*args: str, stdin: str | None = None, conn: str | None = None,
               env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """``sbmgmt ARGS`` in this process (typer's runner, the app the console script runs),
    answered as ``tests/cli/test_subprocess.sbmgmt`` answers for a ``python -m sbmgmt.cli``
    process: its exit code, stdout and stderr (an exception that escaped the command is
    written there as a traceback, as Python would); stdin is not a terminal, the
    connection string ``conn`` or none. For a test that is about the command's words, exit
    codes and effects, not the process (signals, a terminal, the interpreter's start)."""
    result = CliRunner().invoke(
        app, list(args), input=stdin, prog_name="sbmgmt",
        env={"SERVICEBUS_CONNECTION_STRING": conn, "SERVICEBUS_NAMESPACE": None, **(env or {})})
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["sbmgmt", *args], result.exit_code, result.stdout,
                                       stderr)


@pytest.fixture
def cli(fake: FakeNamespace) -> Cli:
    return Cli(fake.connection_string)


def sequence_numbers(records: Sequence[dict[str, Any]]) -> list[int]:
    return [record["sequence_number"] for record in records]
