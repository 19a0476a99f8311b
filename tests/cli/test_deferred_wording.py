"""What a new user met in ``sbmgmt deferred`` (issue 59, the items in the CLI's deferred,
export and repair commands): numbers not found named in the table, no empty ``{}``
properties column, ``deferred export --file`` like ``export``, a group summary naming its
commands, the short ``TOPIC/SUB`` form, the import dry run numbering rows from 1."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt import Message
from sbmgmt.cli import app

from .conftest import Cli
from .test_deferred import defer


def test_dead_letter_names_the_numbers_not_found_in_the_table(cli: Cli,
                                                              fake: FakeNamespace) -> None:
    (first, *_rest) = defer(fake, "q", 2)
    result = cli.run("deferred", "dead-letter", "q", str(first), "99999", "--yes",
                     output="table")
    assert result.exit_code == 0, result.stderr
    assert "99999" in result.stdout
    assert "dead-lettered 1 deferred message of q" in result.stdout


def test_list_leaves_out_an_empty_properties_column(cli: Cli, fake: FakeNamespace) -> None:
    defer(fake, "q", 2)
    table = cli.run("deferred", "list", "q", output="table")
    assert table.exit_code == 0, table.stderr
    assert "{}" not in table.stdout
    assert {json.dumps(r["application_properties"]) for r in cli.json(
        "deferred", "list", "q")} == {"{}"}  # the record keeps its shape


def test_deferred_export_takes_file(cli: Cli, fake: FakeNamespace, tmp_path: Path) -> None:
    numbers = defer(fake, "q", 3)
    out = tmp_path / "d.jsonl"
    report = cli.json("deferred", "export", "q", "--file", str(out))
    assert report["exported"] == 3
    assert [json.loads(line)["broker"]["sequence_number"]
            for line in out.read_text().splitlines()] == numbers
    both = cli.run("deferred", "export", "q", str(out), "--file", str(out))
    assert both.exit_code == 2 and "give the file once" in " ".join(both.stderr.split())


def test_the_group_summary_names_its_commands() -> None:
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    summary = " ".join(shown.split("deferred", 1)[1].split("│"))
    for name in ("list", "export", "complete", "dead-letter"):
        assert name in summary.split("locks")[0]


def test_every_command_takes_the_short_subscription_form(cli: Cli, fake: FakeNamespace) -> None:
    fake.send("t", Message(body=b"x", message_id="x"))
    assert [r["message_id"] for r in cli.json("peek", "t/s")] == ["x"]
    assert cli.json("deferred", "list", "t/s") == []
    exported = cli.run("export", "t/s")
    assert exported.exit_code == 0 and json.loads(exported.stdout)["properties"][
        "message_id"] == "x"


def test_import_dry_run_numbers_rows_from_one(cli: Cli, fake: FakeNamespace,
                                              tmp_path: Path) -> None:
    fake.send("q", *(Message(body=f"{i}".encode(), message_id=f"m{i}") for i in range(2)))
    out = tmp_path / "q.jsonl"
    cli.json("export", "q", "--file", str(out))
    rows = cli.json("import", str(out), "q", "--dry-run")
    assert [row["number"] for row in rows] == [1, 2]


def test_import_prints_one_object_for_an_empty_file_too(cli: Cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    summary = cli.json("import", str(empty), "q", "--yes")
    assert isinstance(summary, dict) and (summary["read"], summary["sent"]) == (0, 0)
