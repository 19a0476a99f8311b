"""Every script in examples/, run as a user first runs it.

A script that works on a namespace prints its usage without arguments (exit 2, no
traceback) and its help with ``--help`` (exit 0); what it does with arguments is tested in
tests/spark/test_examples.py. A self-contained one (it starts its own fake namespace) runs
as written, shortened by its own options, and says what it made."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests._peers import missing_peer

ROOT = Path(__file__).resolve().parents[2]
#: Examples that start their own fake namespace: they run without arguments.
SELF_CONTAINED = {"observability.py"}
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
ON_A_NAMESPACE = [path for path in EXAMPLES if path.name not in SELF_CONTAINED]


def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("pyspark") is None:
        missing_peer("the examples import pyspark: pip install -e '.[spark]'")
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("script", ON_A_NAMESPACE, ids=lambda path: path.name)
def test_without_arguments_an_example_prints_its_usage(script: Path) -> None:
    result = run(script)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("usage: "), result.stderr
    assert "the following arguments are required: connection_string" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("script", ON_A_NAMESPACE, ids=lambda path: path.name)
def test_help_describes_an_example(script: Path) -> None:
    result = run(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ")
    assert "connection_string" in result.stdout and "entity" in result.stdout
    assert result.stderr == ""


def test_the_self_contained_examples_are_known() -> None:
    assert {path.name for path in EXAMPLES} >= SELF_CONTAINED


def test_the_observability_example_runs_and_draws_its_picture(tmp_path: Path) -> None:
    script = ROOT / "examples" / "observability.py"
    help_text = run(script, "--help")
    assert help_text.returncode == 0 and "--seconds" in help_text.stdout, help_text.stderr
    picture = tmp_path / "margins.png"
    result = subprocess.run(
        [sys.executable, str(script), "--seconds", "4", "--png", str(picture),
         "--no-prometheus"], capture_output=True, text=True, timeout=120, cwd=ROOT,
        check=False)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_the_observability_example_writes_nothing_where_it_runs(tmp_path: Path) -> None:
    script = ROOT / "examples" / "observability.py"
    where = tmp_path / "cwd"
    where.mkdir()
    result = subprocess.run(
        [sys.executable, str(script), "--seconds", "3", "--no-prometheus"],
        capture_output=True, text=True, timeout=120, cwd=where, check=False)
    assert result.returncode == 0, result.stderr
    assert list(where.iterdir()) == []
    [said] = [line for line in result.stdout.splitlines() if line.startswith("picture: ")]
    picture = Path(said.removeprefix("picture: "))
    assert picture.parent != where and picture.read_bytes().startswith(b"\x89PNG")
