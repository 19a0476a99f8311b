"""Every script in examples/, run as a user first runs it: without arguments it prints its
usage (exit 2, no traceback), and with ``--help`` its help (exit 0). What they do with
arguments is tested in tests/spark/test_examples.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests._peers import missing_peer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("pyspark") is None:
        missing_peer("the examples import pyspark: pip install -e '.[spark]'")
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.name)
def test_without_arguments_an_example_prints_its_usage(script: Path) -> None:
    result = run(script)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("usage: "), result.stderr
    assert "the following arguments are required: connection_string" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.name)
def test_help_describes_an_example(script: Path) -> None:
    result = run(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ")
    assert "connection_string" in result.stdout and "entity" in result.stdout
    assert result.stderr == ""
