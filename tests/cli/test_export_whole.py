"""A failed export leaves the file it was given as it was (issue 56): ``export`` and
``deferred export`` write a temporary file beside the target and rename it only when whole
(``sbmgmt.actions.files.written_whole``, the one helper both use)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fakes import FakeNamespace
from sbmgmt.actions.files import written_whole
from sbmgmt.message import Message

from .conftest import Cli

KEPT = b'{"an": "earlier export"}\n' * 34


def _only_file(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("command", [
    ("export", "ordrs", "--file"),
    ("export", "t/nowhere", "--file"),
    ("deferred", "export", "ordrs", "--file"),
    ("deferred", "export", "ordrs"),  # the positional FILE, kept as a hidden alias
])
def test_a_mistyped_entity_leaves_the_file_byte_identical(
        cli: Cli, tmp_path: Path, command: tuple[str, ...]) -> None:
    keep = tmp_path / "keep.jsonl"
    keep.write_bytes(KEPT)
    os.chmod(keep, 0o640)
    result = cli.run(*command, str(keep))
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert keep.read_bytes() == KEPT
    assert _only_file(tmp_path) == ["keep.jsonl"]  # no temporary file left behind
    assert oct(keep.stat().st_mode & 0o777) == oct(0o640)


def test_a_good_export_replaces_the_file_whole(cli: Cli, fake: FakeNamespace,
                                              tmp_path: Path) -> None:
    fake.send("q", *(Message(body=f"b{i}".encode(), message_id=f"m{i}") for i in range(5)))
    keep = tmp_path / "keep.jsonl"
    keep.write_bytes(KEPT)
    os.chmod(keep, 0o640)
    report = cli.json("export", "q", "--file", str(keep))
    assert report["exported"] == 5
    lines = [json.loads(line) for line in keep.read_text(encoding="utf-8").splitlines()]
    assert [line["properties"]["message_id"] for line in lines] == [f"m{i}" for i in range(5)]
    assert _only_file(tmp_path) == ["keep.jsonl"]
    assert oct(keep.stat().st_mode & 0o777) == oct(0o640)  # the old file's permissions


def test_an_error_inside_the_block_removes_the_temporary_file(tmp_path: Path) -> None:
    keep = tmp_path / "keep.jsonl"
    keep.write_bytes(KEPT)
    with pytest.raises(KeyboardInterrupt), written_whole(keep) as out:
        out.write("half a line")
        raise KeyboardInterrupt
    assert keep.read_bytes() == KEPT
    assert _only_file(tmp_path) == ["keep.jsonl"]


def test_a_new_file_appears_only_when_whole(tmp_path: Path) -> None:
    new = tmp_path / "new.jsonl"
    with written_whole(new) as out:
        out.write("one\n")
        assert not new.exists()
    assert new.read_text() == "one\n"
    with pytest.raises(RuntimeError), written_whole(tmp_path / "never.jsonl") as out:
        raise RuntimeError("cut")
    assert _only_file(tmp_path) == ["new.jsonl"]


def test_a_directory_is_refused_before_anything_is_written(cli: Cli, tmp_path: Path) -> None:
    result = cli.run("export", "q", "--file", str(tmp_path))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "directory" in " ".join(result.stderr.split())
    assert "IsADirectoryError" not in result.stderr
