"""Fixtures for CLI tests: a runner bound to the suite's fake namespace (``fake``,
tests/conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
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


@pytest.fixture
def cli(fake: FakeNamespace) -> Cli:
    return Cli(fake.connection_string)


def sequence_numbers(records: Sequence[dict[str, Any]]) -> list[int]:
    return [record["sequence_number"] for record in records]
