"""``sbmgmt peek --max N``: "at most N" has one name on the command line (issue 57);
``--count``, its old name, is a hidden alias for one release."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt import Message
from sbmgmt.cli import app
from sbmgmt.cli._exit import ExitCode

from .conftest import Cli, sequence_numbers


def _send(fake: FakeNamespace, count: int) -> None:
    fake.send("q", *(Message(body=f"m{i}".encode(), message_id=f"id{i}")
                     for i in range(count)))


@pytest.mark.parametrize("option", ["--max", "--count"])
def test_max_and_its_old_name_count_peek_at_most_n(cli: Cli, fake: FakeNamespace,
                                                   option: str) -> None:
    _send(fake, 120)
    assert sequence_numbers(cli.json("peek", "q", option, "3")) == [1, 2, 3]
    # More than a page (100): the pages stop at N.
    assert sequence_numbers(cli.json("peek", "q", "--from", "5", option, "110")) == list(
        range(5, 115))


def test_max_and_count_together_is_a_usage_error(cli: Cli) -> None:
    both = cli.run("peek", "q", "--max", "1", "--count", "2")
    assert both.exit_code == ExitCode.BAD_ARGUMENTS, both.stderr
    assert "give --max once" in " ".join(both.stderr.split())


@pytest.mark.parametrize("option", ["--max", "--count"])
def test_max_and_all_together_names_the_option_given(cli: Cli, option: str) -> None:
    result = cli.run("peek", "q", option, "2", "--all")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert f"give {option} or --all, not both" in " ".join(result.stderr.split())


def test_help_shows_max_not_count() -> None:
    shown = CliRunner().invoke(app, ["peek", "--help"], env={"COLUMNS": "120"}).stdout
    assert "--max" in shown and "--count" not in shown
