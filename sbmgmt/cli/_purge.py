"""``sbmgmt purge``: delete an entity's messages with batch deletes (sbmgmt.actions.purge).

The command fixes the cutoff and counts what it would delete (the action's plan, a running
count on a terminal from the start), says so (and stops there with ``--dry-run``), asks on a
terminal (refuses without ``--yes`` when stdin is not one), shows progress on a terminal,
and reports exactly what was deleted. Ctrl-C stops it cleanly: nothing more is
sent, the requests in flight are counted, and the report says how many were deleted.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .._wording import counted, utc_time
from ..actions import purge as action
from ._command import command
from ._confirm import confirm
from ._exit import ExitCode, exit_code_for
from ._render import Record, iso_time, outcome
from ._state import CliState
from ._times import parse_time

__all__ = ["purge", "purge_record", "register"]

_DEAD_LETTER_SUFFIX = "/$DeadLetterQueue"


@contextlib.contextmanager
def _ctrl_c_sets(event: threading.Event) -> Iterator[None]:
    """While the block runs, Ctrl-C sets ``event`` (the purge's cancel) instead of raising."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: event.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def purge(
    ctx: typer.Context,
    entity: Annotated[
        str, typer.Argument(help="Entity path: QUEUE or TOPIC/Subscriptions/SUB.")
    ],
    dead_letter: Annotated[
        bool, typer.Option("--dead-letter", help="Purge the entity's dead-letter queue.")
    ] = False,
    session: Annotated[
        str | None, typer.Option("--session", help="Purge only this session's messages.")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option("--before", help="Only messages enqueued before this time: ISO 8601, "
                                      "'now' or relative (-1d). Default: now."),
    ] = None,
    max_count: Annotated[
        int | None, typer.Option("--max", min=1, help="Delete at most this many.")
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed when stdin is not a "
                                               "terminal).")
    ] = False,
    batch_size: Annotated[
        int, typer.Option(min=1, help="Messages per request (500: every tier's quota; "
                                      "Premium takes 4000).")
    ] = 500,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what it would delete; delete nothing.")
    ] = False,
) -> None:
    """Delete the messages enqueued before a time (default: now), oldest first.

    Says how many it is about to delete and asks first. Without a terminal on stdin it
    refuses unless --yes is given (exit code 11). Locked, deferred and scheduled messages
    stay.

    Example: sbmgmt purge orders --dead-letter --before -1d --yes

    Example: sbmgmt purge orders --dry-run
    """
    state = CliState.of(ctx)
    path = entity + _DEAD_LETTER_SUFFIX if dead_letter else entity
    where = path if session is None else f"{path} (session {session})"
    cutoff = None if before is None else parse_time(before)
    with state.renderer.counting(f"counting the messages of {where}") as looked_at:
        client = state.entity(path, requires_session=session is not None)
        job = action.plan(client, before=cutoff, session_id=session, max_count=max_count,
                          on_looked_at=looked_at)
    enqueued = f"enqueued before {utc_time(job.before)} UTC"
    eligible = counted(job.eligible, "message")
    if dry_run:
        state.renderer.done(outcome(True, f"delete {eligible} from {where} {enqueued}", ""),
                            purge_record(job, None, dry_run=True))
        return
    if job.eligible == 0:
        nothing = action.PurgeReport(path, session, job.before, 0, action.PurgeOutcome.FINISHED)
        state.renderer.done(f"nothing to delete in {where} {enqueued}",
                            purge_record(job, nothing, dry_run=False))
        return
    stderr = Console(stderr=True, highlight=False, soft_wrap=True)
    stderr.print(escape(f"about to delete {eligible} of {where} {enqueued}"))
    confirm("Delete them?", yes=yes, refusal=f"refused to delete {eligible}",
            declined="nothing deleted: not confirmed")
    cancel = threading.Event()
    with _ctrl_c_sets(cancel), state.renderer.progress_done("purging", job.eligible) as done:
        report = action.purge(client, job, batch_size=batch_size, on_progress=done,
                              cancel=cancel)
    sentence = f"deleted {counted(report.deleted, 'message')} from {where}"
    if report.outcome is not action.PurgeOutcome.FINISHED:
        sentence += f" ({report.outcome.value}"
        if report.uncertain_requests:
            sentence += (f"; {report.uncertain_requests} requests had an unknown outcome and "
                         "may have deleted more")
        sentence += ")"
    state.renderer.done(sentence, purge_record(job, report, dry_run=False))
    if report.outcome is action.PurgeOutcome.CANCELLED:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if report.error is not None:
        stderr.print(f"[red]error:[/] {escape(state.scrub(str(report.error)))}")
        raise typer.Exit(int(exit_code_for(report.error)))


def purge_record(job: action.PurgePlan, report: action.PurgeReport | None, *,
                 dry_run: bool) -> Record:
    """``purge``'s one record, whatever happened (docs/cli.md): what was counted, and what
    was deleted (a dry run deletes nothing: its ``outcome`` is null)."""
    return {
        "entity": job.entity,
        "session_id": job.session_id,
        "before": iso_time(job.before),
        "eligible": job.eligible,
        "dry_run": dry_run,
        "deleted": 0 if report is None else report.deleted,
        "outcome": None if report is None else report.outcome.value,
        "uncertain_requests": 0 if report is None else report.uncertain_requests,
        "error": None if report is None or report.error is None else str(report.error),
    }


def register(app: typer.Typer) -> None:
    """Add ``purge`` to the root app."""
    command(app, "purge")(purge)
