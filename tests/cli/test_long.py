"""sbmgmt/cli/_long.py: the one helper every long command runs its action through (progress,
Ctrl-C as a cancel, the report, exit code 130), on a small command of its own."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from typing import Annotated

import pytest
import typer
from rich.progress import Progress as Bar
from rich.progress import ProgressColumn
from typer.testing import CliRunner, Result

from sbmgmt._wording import tally
from sbmgmt.actions.contract import ActionReport, CancelToken, OnProgress, Outcome, Progress
from sbmgmt.cli._command import HandledCommand
from sbmgmt.cli._exit import ExitCode
from sbmgmt.cli._long import Display, ctrl_c_cancels, run_long
from sbmgmt.cli._render import OutputFormat
from sbmgmt.cli._state import CliState

ITEMS = 50


@dataclass(kw_only=True)
class Tally(ActionReport):
    moved: int = 0
    failed: int = 0

    def counts(self) -> dict[str, int]:
        return {"moved": self.moved, "failed": self.failed}


def action(on_progress: OnProgress, cancel: CancelToken, *, interrupt_at: int | None,
           signals: int = 1, fail: bool = False) -> Tally:
    """Moves ITEMS one by one, telling progress; SIGINTs itself ``signals`` times at
    ``interrupt_at`` (as a user's Ctrl-C would arrive); stops when cancelled."""
    report = Tally(entity="q")
    for number in range(ITEMS):
        if cancel.cancelled:
            report.outcome = Outcome.CANCELLED
            return report
        if number == interrupt_at:
            for _ in range(signals):
                os.kill(os.getpid(), signal.SIGINT)
        report.moved += 1
        on_progress(Progress(report.moved, ITEMS, report.counts()))
    if fail:
        report.outcome, report.error = Outcome.FAILED, "the entity went away"
    return report


app = typer.Typer(pretty_exceptions_enable=False)


@app.command(cls=HandledCommand)
def move(ctx: typer.Context,
         interrupt_at: Annotated[int | None, typer.Option()] = None,
         signals: Annotated[int, typer.Option()] = 1,
         fail: Annotated[bool, typer.Option()] = False,
         odd_exit: Annotated[bool, typer.Option()] = False,
         data: Annotated[bool, typer.Option()] = False,
         json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    CliState.of(ctx).output = OutputFormat.JSON if json_output else OutputFormat.TABLE
    report = run_long(
        ctx, "moving",
        lambda on_progress, cancel: action(on_progress, cancel, interrupt_at=interrupt_at,
                                           signals=signals, fail=fail),
        render=lambda tally: f"moved {tally.moved} of {tally.entity}",
        total=ITEMS, to_stderr=data,
        exit_code=(lambda tally: 7 if tally.failed or tally.moved < ITEMS else 0)
        if odd_exit else None)
    typer.echo(f"returned {report.moved}")


@app.command()
def unused() -> None:  # a second command, so typer keeps ``move`` a subcommand
    """Nothing."""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["move", *args])


def test_a_finished_run_prints_its_sentence_and_returns_the_report() -> None:
    result = invoke()
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"moved {ITEMS} of q", f"returned {ITEMS}"]


def test_json_prints_the_reports_record() -> None:
    result = invoke("--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout[:result.stdout.rindex("}") + 1])
    assert record == {"entity": "q", "outcome": "finished",
                      "counts": {"moved": ITEMS, "failed": 0}}


def test_the_first_ctrl_c_cancels_the_run_which_reports_and_exits_130() -> None:
    before = signal.getsignal(signal.SIGINT)  # Python's, or another library's (pyspark's)
    result = invoke("--interrupt-at", "20", "--json")
    assert result.exit_code == int(ExitCode.INTERRUPTED) == 130
    record = json.loads(result.stdout)
    assert record["outcome"] == "cancelled"
    assert record["counts"]["moved"] == 21  # the item under way when Ctrl-C came finished
    assert "cancelled (Ctrl-C)" in result.stderr
    assert "returned" not in result.stdout
    assert signal.getsignal(signal.SIGINT) is before  # given back


def test_a_second_ctrl_c_aborts_at_once() -> None:
    before = signal.getsignal(signal.SIGINT)
    result = invoke("--interrupt-at", "20", "--signals", "2")
    assert result.exit_code == 130
    assert "error: interrupted" in result.stderr
    assert "moved" not in result.stdout  # no report: the run was stopped hard
    assert signal.getsignal(signal.SIGINT) is before


def test_a_failed_run_reports_then_says_why_and_exits_1() -> None:
    result = invoke("--fail")
    assert result.exit_code == int(ExitCode.ERROR) == 1
    assert result.stdout == f"moved {ITEMS} of q\n"
    assert "error: the entity went away" in result.stderr


def test_a_command_chooses_the_exit_code_of_a_run_that_did_not_do_everything() -> None:
    assert invoke("--odd-exit").exit_code == 0
    cancelled = invoke("--odd-exit", "--interrupt-at", "3")
    assert cancelled.exit_code == 130  # cancelled wins over the command's own code


def test_with_data_on_stdout_the_sentence_of_an_unfinished_run_goes_to_stderr() -> None:
    finished = invoke("--data")
    assert finished.stdout == f"returned {ITEMS}\n"
    assert "moved" not in finished.stderr  # not a terminal, and it finished: quiet
    cancelled = invoke("--data", "--interrupt-at", "5")
    assert cancelled.exit_code == 130
    assert cancelled.stdout == ""
    assert "moved 6 of q" in cancelled.stderr


def test_ctrl_c_cancels_only_inside_the_block() -> None:
    # Python's own handler outside the block (a Spark test earlier in the worker leaves
    # pyspark's, which does not raise), put back as it was at the end.
    outside = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        token = CancelToken()
        with ctrl_c_cancels(token):
            os.kill(os.getpid(), signal.SIGINT)
        assert token.cancelled
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, outside)


def test_the_display_draws_a_bar_when_the_total_is_known_and_a_count_otherwise() -> None:
    token = CancelToken()
    with Display("moving", None, token, shown=False) as display:
        bar: Bar = display._bar
        display.show(Progress(1234, None, {"moved": 1200, "failed": 34, "left": 0}))
        task = bar.tasks[0]
        columns = [column for column in bar.columns if isinstance(column, ProgressColumn)]
        assert task.total is None and task.completed == 1234
        amount = columns[2].render(task)
        assert str(amount) == "1,234"
        assert type(columns[1].render(task)).__name__ != "ProgressBar"
        assert task.fields["counts"] == "moved 1,200 · failed 34"
        display.show(Progress(1300, 5000))
        task = bar.tasks[0]
        assert str(columns[2].render(task)) == "1300/5000"
        assert type(columns[1].render(task)).__name__ == "ProgressBar"
        assert str(columns[0].render(task)) == "moving"
        token.cancel()
        assert "stopping" in str(columns[0].render(task))


def test_counts_are_shown_in_words_without_zeros() -> None:
    assert tally({"not_found": 3, "moved": 0, "dead_lettered": 1200}) == (
        "not found 3 · dead lettered 1,200")


def test_a_process_started_with_ctrl_c_ignored_keeps_it_ignored() -> None:
    # nohup, or `cmd &` in a script: SIGINT ignored from the start; the command keeps that.
    outside = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        token = CancelToken()
        with ctrl_c_cancels(token):
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
        assert not token.cancelled
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, outside)
