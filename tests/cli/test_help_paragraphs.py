"""Every command's help at 80 columns (a pipe, most terminals) reads as paragraphs: no line
of a description is broken short by a newline of the source's docstring (issue 59: purge,
explore, deferred list / purge / export printed "... Without a terminal on stdin it" /
"refuses unless ...")."""

from __future__ import annotations

import itertools

import pytest
from typer.testing import CliRunner

from sbmgmt.cli import app
from sbmgmt.cli._help import paragraphs

from .test_help_texts import _command_paths

#: A line rich wrapped at 80 columns (78 of text) is longer than this unless its paragraph
#: ends there, or the next word is this long.
SHORTEST_WRAPPED = 50


def _description(help_text: str) -> list[list[str]]:
    """The paragraphs of the text between the usage line and the first panel."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith("╭")),
               len(lines))
    found: list[list[str]] = [[]]
    for line in lines[start:end]:
        if line.strip():
            found[-1].append(line.strip())
        elif found[-1]:
            found.append([])
    return [paragraph for paragraph in found if paragraph]


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "sbmgmt")
def test_no_description_line_is_broken_short(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    ragged = [line for paragraph in _description(result.stdout)
              for line, following in itertools.pairwise(paragraph)
              if len(line) < SHORTEST_WRAPPED and len(line) + len(following.split()[0]) < 77]
    assert ragged == [], f"sbmgmt {' '.join(path)} --help: {ragged}"


def test_paragraphs_are_joined_and_blocks_kept() -> None:
    text = """First line.

    Says how many it is about to delete
    and asks first.

    \b
    keep
    these
    """
    assert paragraphs(text) == ("First line.\n\nSays how many it is about to delete and asks "
                                "first.\n\n\b\nkeep\nthese")
