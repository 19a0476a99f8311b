"""One name per thing (issue 57): ``deferred complete`` (``deferred purge``, its old name,
hidden and deprecated for one release, still works), ``--max`` for "at most N" in
``export``, ``deferred list`` and ``deferred export`` (``--count`` a hidden alias)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt.cli import app

from .conftest import Cli, sequence_numbers
from .test_deferred import defer


def test_complete_settles_and_the_old_purge_is_hidden_but_works(cli: Cli,
                                                                 fake: FakeNamespace) -> None:
    numbers = defer(fake, "q", 6)
    done = cli.json("deferred", "complete", "q", *map(str, numbers[:3]), "--yes")
    assert [(r["sequence_number"], r["outcome"]) for r in done] == [
        (n, "completed") for n in numbers[:3]]
    old = cli.run("deferred", "purge", "q", "--yes")
    assert old.exit_code == 0, old.stderr
    assert [r["outcome"] for r in json.loads(old.stdout)] == ["completed"] * 3
    assert "deprecated" in old.stderr.lower()
    assert fake.accounting("q")["deferred"] == 0
    shown = CliRunner().invoke(app, ["deferred", "--help"], env={"COLUMNS": "100"}).stdout
    assert "complete" in shown and "purge" not in shown


@pytest.mark.parametrize("old", ["--max", "--count"])
def test_at_most_is_max_and_count_its_hidden_alias(cli: Cli, fake: FakeNamespace,
                                                   tmp_path: Path, old: str) -> None:
    numbers = defer(fake, "q", 5)
    assert sequence_numbers(cli.json("deferred", "list", "q", old, "2")) == numbers[:2]
    exported = cli.run("deferred", "export", "q", old, "3")
    assert [json.loads(line)["broker"]["sequence_number"]
            for line in exported.stdout.splitlines()] == numbers[:3]
    target = tmp_path / "q.jsonl"
    assert cli.json("export", "q", old, "4", "--file", str(target))["exported"] == 4
    assert len(target.read_text().splitlines()) == 4


def test_max_and_count_together_is_a_usage_error(cli: Cli) -> None:
    for command in (["export", "q"], ["deferred", "list", "q"], ["deferred", "export", "q"]):
        both = cli.run(*command, "--max", "1", "--count", "2")
        assert both.exit_code == 2, both.stderr
        assert "give --max once" in " ".join(both.stderr.split())


def test_help_shows_max_not_count() -> None:
    for command in (["export"], ["deferred", "list"], ["deferred", "export"]):
        shown = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"}).stdout
        assert "--max" in shown and "--count" not in shown
