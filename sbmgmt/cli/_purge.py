"""``sbmgmt purge``: delete an entity's messages with batch deletes (sbmgmt.actions.purge).

The command fixes the cutoff and counts what it would delete (the action's plan, a running
count on a terminal from the start), says so (and stops there with ``--dry-run``), asks on a
terminal (refuses without ``--yes`` when stdin is not one), then runs the purge through the
CLI's one helper for long commands (:func:`sbmgmt.cli._long.run_long`): progress on a
terminal, Ctrl-C stops it cleanly (nothing more is sent, the requests in flight are
counted), the report of exactly what was deleted, exit code 130 when cancelled.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .._wording import counted, utc_time
from ..actions import purge as action
from ..actions.contract import Outcome
from ..entity_paths import dead_letter_path
from ._command import command
from ._confirm import confirm
from ._exit import exit_code_for
from ._long import run_long
from ._render import Record, iso_time, outcome
from ._state import CliState
from ._times import parse_time

__all__ = ["purge", "purge_record", "register"]


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
        int | None, typer.Option(min=1, help="Messages per request. Default: 500, every "
                                             "tier's quota (Premium takes 4000).")
    ] = None,
    in_flight: Annotated[
        int | None, typer.Option("--in-flight", min=1,
                                 help="Batch deletes on the wire at once. Default: 32.")
    ] = None,
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
    path = dead_letter_path(entity) if dead_letter else entity
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
        nothing = action.PurgeReport(entity=path, session_id=session, before=job.before)
        state.renderer.done(f"nothing to delete in {where} {enqueued}",
                            purge_record(job, nothing, dry_run=False))
        return
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        escape(f"about to delete {eligible} of {where} {enqueued}"))
    confirm("Delete them?", yes=yes, refusal=f"refused to delete {eligible}",
            declined="nothing deleted: not confirmed")
    run_long(ctx, "purging",
             lambda on_progress, cancel: action.purge(
                 client, job, batch_size=batch_size, in_flight=in_flight,
                 on_progress=on_progress, cancel=cancel),
             render=lambda report: _sentence(report, where), total=job.eligible,
             record=lambda report: purge_record(job, report, dry_run=False),
             exit_code=_exit_code)


def _sentence(report: action.PurgeReport, where: str) -> str:
    """``deleted 4170 messages from orders``, and how it ended when it did not finish."""
    sentence = f"deleted {counted(report.deleted, 'message')} from {where}"
    if report.outcome is Outcome.FINISHED:
        return sentence
    ended = report.outcome.value
    if report.uncertain_requests:
        ended += (f"; {report.uncertain_requests} requests had an unknown outcome and may "
                  "have deleted more")
    return f"{sentence} ({ended})"


def _exit_code(report: action.PurgeReport) -> int:
    """A failed purge exits with its error's code (7 for a lost connection); else 0."""
    if report.outcome is not Outcome.FAILED:
        return 0
    return int(exit_code_for(report.failure)) if report.failure is not None else 1


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
        "error": None if report is None else report.error,
    }


def register(app: typer.Typer) -> None:
    """Add ``purge`` to the root app."""
    command(app, "purge")(purge)
