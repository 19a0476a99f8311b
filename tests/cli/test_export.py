"""``sbmgmt export``: an entity's messages to a file or stdout, one JSON object a line; the
summary says how many; peeking changed nothing."""

from __future__ import annotations

import json
from pathlib import Path

from fakes import FakeNamespace
from sbmgmt.message import Message

from .conftest import Cli


def _fill(fake: FakeNamespace) -> None:
    fake.send("q", Message(body=b"one", message_id=b"\x01"),
              Message(body=([1, "a"], [2, "b"]), body_type="sequence", message_id=7),
              Message(body={"k": "v"}, body_type="value", message_id="three"))


def test_export_to_stdout_writes_a_line_a_message(cli: Cli, fake: FakeNamespace) -> None:
    _fill(fake)
    result = cli.run("export", "q", "--from", "2")
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["broker"]["sequence_number"] for line in lines] == [2, 3]
    assert lines[0]["body"] == {"sequence": [[{"long": 1}, "a"], [{"long": 2}, "b"]]}
    assert lines[0]["properties"]["message_id"] == {"ulong": 7}
    assert result.stderr == ""  # the summary goes to stderr on a terminal only
    assert fake.accounting("q")["active"] == 3


def test_export_to_a_file_reports_what_it_wrote(cli: Cli, fake: FakeNamespace,
                                                tmp_path: Path) -> None:
    _fill(fake)
    target = tmp_path / "q.jsonl"
    report = cli.json("export", "q", "--count", "2", "--file", str(target))
    assert report == {"entity": "q", "exported": 2, "first_sequence_number": 1,
                      "last_sequence_number": 2, "file": str(target)}
    lines = target.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["properties"]["message_id"] == {"binary": "AQ=="}
    assert len(lines) == 2


def test_export_of_an_empty_dead_letter_queue(cli: Cli, fake: FakeNamespace,
                                              tmp_path: Path) -> None:
    target = tmp_path / "dlq.jsonl"
    result = cli.run("export", "q", "--dead-letter", "--file", str(target), output="table")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"exported 0 messages of q/$DeadLetterQueue to {target}"
    assert target.read_text() == ""


def test_export_of_a_missing_entity_exits_4(cli: Cli) -> None:
    result = cli.run("export", "nowhere")
    assert result.exit_code == 4, (result.stdout, result.stderr)
