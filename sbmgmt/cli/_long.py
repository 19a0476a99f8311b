"""The one way a long command runs its action: progress on a terminal, Ctrl-C as a clean
stop, the report of what was done, and exit code 130 when it was cancelled.

Every long command (``purge``, ``resubmit``, ``move``, ``import``, ``export``, ``deferred
complete`` / ``dead-letter`` / ``export``) is written the same way: build the plan (a peek:
nothing changes), say it and ask (:func:`sbmgmt.cli._confirm.confirm`), then hand the run
to :func:`run_long`::

    report = run_long(
        ctx, "moving",
        lambda on_progress, cancel: repair(client, plan, ..., on_progress=on_progress,
                                           cancel=cancel),
        render=lambda report: f"moved {report.moved} of {report.entity}",
        total=len(plan.items))

Theory of operation
-------------------
- **Progress.** The action tells :class:`~sbmgmt.actions.contract.Progress` records to
  ``on_progress`` (from any thread). On a terminal (stderr) they draw a rich bar when the
  total is known (``total=`` before the first record, or the records' own ``total``) and
  a spinner with a running count otherwise, followed by the counts by outcome
  (``moved 90 · failed 2``). Nothing is drawn when stderr is not a terminal, nor when
  NDJSON streams to a terminal (its lines are the progress): the rule of
  :meth:`sbmgmt.cli._render.Renderer.progress`.
- **Ctrl-C.** While the action runs, the first SIGINT calls
  :meth:`~sbmgmt.actions.contract.CancelToken.cancel` and nothing else: the action lets
  the work on the wire finish, starts nothing new and returns its report with outcome
  CANCELLED (the bar says ``stopping``). The handler then gives SIGINT back to Python's
  default, so a second Ctrl-C raises :class:`KeyboardInterrupt` at once (a hard stop:
  ``error: interrupted``, exit code 130, no report). Only the main thread can own a
  signal handler; elsewhere (a test's thread) the token is simply never set by Ctrl-C.
  The handler only sets an :class:`threading.Event`: it never prints (a write from a
  signal handler can meet a write it interrupted).
- **The report.** When the action returns, its report is printed as the command's
  result: ``render(report)``'s sentence for ``-o table``, the record (``record(report)``,
  by default :meth:`~sbmgmt.actions.contract.ActionReport.record`) for JSON and NDJSON.
  A command whose stdout carries data (an export to stdout) passes ``to_stderr=True``:
  the sentence goes to stderr (on a terminal, or whenever the run did not finish).
- **The exit code.** CANCELLED exits 130 (:attr:`ExitCode.INTERRUPTED`) after the report.
  FAILED says ``error: <report.error>`` on stderr and exits with ``exit_code(report)``
  (default 1). FINISHED returns the report to the command, which may exit otherwise
  (a repair that left messages behind exits 7): ``exit_code`` is asked then too, and a
  non-zero answer exits with it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as Bar
from rich.text import Text

from .._wording import tally
from ..actions.contract import ActionReport, CancelToken, OnProgress, Outcome, Progress
from ._exit import ExitCode
from ._render import OutputFormat, Record
from ._state import CliState

__all__ = ["Display", "ctrl_c_cancels", "progress_shown", "run_long"]

R = TypeVar("R", bound=ActionReport)

Run = Callable[[OnProgress, CancelToken], R]
"""The action's call: given the ``on_progress`` and ``cancel`` to pass on, its report."""


class _Title(ProgressColumn):
    """The title, and once Ctrl-C has cancelled the run, that it is stopping."""

    def __init__(self, title: str, cancel: CancelToken) -> None:
        super().__init__()
        self._title, self._cancel = title, cancel

    def render(self, task: Task) -> Text:
        if self._cancel.cancelled:
            return Text(f"{self._title}: stopping (Ctrl-C again aborts)", style="yellow")
        return Text(self._title)


class _Amount(ProgressColumn):
    """``done/total`` when the total is known, the running count ``done`` otherwise."""

    def __init__(self) -> None:
        super().__init__()
        self._of = MofNCompleteColumn()

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text(f"{int(task.completed):,}", style="progress.download")
        return self._of.render(task)


class _Gauge(ProgressColumn):
    """A bar when the total is known, a turning spinner otherwise."""

    def __init__(self) -> None:
        super().__init__()
        self._bar, self._spinner = BarColumn(), SpinnerColumn()

    def render(self, task: Task) -> Any:
        return self._spinner.render(task) if task.total is None else self._bar.render(task)


class Display:
    """Draws :class:`Progress` records on stderr (or nothing, when ``shown`` is false);
    :meth:`show` is the action's ``on_progress``."""

    def __init__(self, title: str, total: int | None, cancel: CancelToken, *,
                 shown: bool) -> None:
        self._bar = Bar(
            _Title(title, cancel), _Gauge(), _Amount(),
            TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
            console=Console(stderr=True), transient=True, redirect_stdout=False,
            redirect_stderr=False, disable=not shown)
        self._task: TaskID = self._bar.add_task(title, total=total, counts="")

    def show(self, progress: Progress) -> None:
        """Draw one record (thread-safe: rich's bar takes its own lock)."""
        changes: dict[str, Any] = {"completed": progress.done,
                                   "counts": tally(progress.counts)}
        if progress.total is not None:
            changes["total"] = progress.total
        self._bar.update(self._task, **changes)

    def __enter__(self) -> Display:
        self._bar.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._bar.stop()


def progress_shown(output: OutputFormat) -> bool:
    """Whether progress is drawn: stderr is a terminal and NDJSON does not stream to one."""
    streams_to_terminal = output is OutputFormat.NDJSON and sys.stdout.isatty()
    return Console(stderr=True).is_terminal and not streams_to_terminal


@contextlib.contextmanager
def ctrl_c_cancels(cancel: CancelToken) -> Iterator[None]:
    """While the block runs, the first Ctrl-C cancels ``cancel`` (and gives SIGINT back to
    Python's default, so a second one raises :class:`KeyboardInterrupt`); the handler
    before is restored after. Outside the main thread it does nothing, nor in a process
    started with SIGINT ignored (``nohup``, ``cmd &`` in a script): Python keeps that
    choice, and so does the command."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return

    def first(_signum: int, _frame: object) -> None:
        cancel.cancel()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _default_exit_code(report: ActionReport) -> int:
    return int(ExitCode.ERROR) if report.outcome is Outcome.FAILED else int(ExitCode.OK)


def _sentence(report: ActionReport) -> str:
    counts = tally(report.counts()) or "nothing done"
    return f"{report.entity}: {counts}"


def run_long(ctx: typer.Context, title: str, run: Run[R], *,
             render: Callable[[R], str] | None = None, total: int | None = None,
             record: Callable[[R], Record | list[Record]] | None = None,
             to_stderr: bool = False, exit_code: Callable[[R], int] | None = None) -> R:
    """Run a long action with progress and Ctrl-C, print its report, exit as it ended.

    Args:
        ctx: The command's context (its :class:`CliState`: the output format, the
            scrubber).
        title: What the bar says, ``-ing`` form: ``"purging"``, ``"moving"``.
        run: Calls the action with the ``on_progress`` and ``cancel`` given; returns its
            report (never raises for a cancellation: the contract).
        render: The report as one sentence for people (default: the entity and its
            counts). Say what was done; :func:`run_long` adds nothing to it.
        total: How many there are, when known before the first record (a plan's size).
        record: The report as the JSON record (default: ``report.record()``), or a list of
            records (a row per item); a command whose JSON shape is documented keeps it
            through this.
        to_stderr: stdout carries data (an export to stdout): the sentence goes to stderr,
            on a terminal or when the run did not finish; no record is printed.
        exit_code: The exit code of a finished or failed report (default: 1 when FAILED,
            0 otherwise); CANCELLED always exits 130.

    Returns:
        The report, when it neither was cancelled nor asks for a non-zero exit code.

    Raises:
        typer.Exit: 130 after a cancelled run's report; ``exit_code(report)`` when that
            is not 0.
    """
    state = CliState.of(ctx)
    cancel = CancelToken()
    with ctrl_c_cancels(cancel), Display(title, total, cancel,
                                         shown=progress_shown(state.output)) as display:
        report = run(display.show, cancel)
    sentence = (render or _sentence)(report)
    if to_stderr:
        if report.outcome is not Outcome.FINISHED or sys.stderr.isatty():
            typer.echo(sentence, err=True)
    else:
        state.renderer.done(sentence, (record or _record)(report))
    stderr = Console(stderr=True, highlight=False, soft_wrap=True)
    if report.outcome is Outcome.CANCELLED:
        stderr.print("cancelled (Ctrl-C): stopped cleanly; the report counts what was done")
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if report.outcome is Outcome.FAILED and report.error is not None:
        stderr.print(f"[red]error:[/] {escape(state.scrub(report.error))}")
    code = (exit_code or _default_exit_code)(report)
    if code:
        raise typer.Exit(code)
    return report


def _record(report: ActionReport) -> Record:
    return report.record()
