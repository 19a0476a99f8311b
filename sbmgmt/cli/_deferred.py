"""Deferred-message commands: ``deferred list``, ``deferred export``, ``deferred
complete``, ``deferred dead-letter`` (beside ``deferred receive`` and ``deferred settle`` of
:mod:`sbmgmt.cli._messages`); ``deferred purge`` is ``complete``'s old name (hidden, kept
one release).

Each is a thin front over :mod:`sbmgmt.actions.deferred`: ``list`` prints what
``find_deferred`` finds; ``export`` writes it in the export format (``export_deferred``,
run as ``sbmgmt export`` is); ``complete`` and ``dead-letter`` choose the messages
(``select_deferred``), say what they will do, ask on a terminal (and refuse without
``--yes`` when stdin is not one), settle them with ``settle_deferred`` through
:func:`sbmgmt.cli._long.run_long` (progress; Ctrl-C stops starting batches, the report
counts what was done, exit code 130), and report each sequence number's outcome.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated

import typer

from ..actions.deferred import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_IN_FLIGHT,
    DeferredAction,
    DeferredReport,
    export_deferred,
    find_deferred,
    select_deferred,
    settle_deferred,
)
from ..message import ReceivedMessage
from ._command import HandledCommand, command
from ._confirm import confirm
from ._exit import UsageProblem
from ._export import CountAlias, MaxOption, at_most, run_export
from ._long import run_long
from ._messages import DryRun, Entity, SessionOption, deferred
from ._render import SEQUENCE, Column, OutputFormat, Record, message_record, outcome
from ._state import CliState

__all__ = ["register"]

#: deferred list: which message, since when it is in the entity, how often it was tried.
DEFERRED_COLUMNS = (
    SEQUENCE,
    Column.time("enqueued_time", "enqueued"),
    Column.of("delivery_count", "deliveries", whole=True),
    Column.of("session_id", "session", optional=True),
    Column.of("message_id", optional=True),
    Column.of("subject", optional=True),
    Column.of("application_properties", "properties", optional=True),
)
#: What complete and dead-letter print per sequence number.
OUTCOME_COLUMNS = (SEQUENCE, Column.of("outcome", whole=True), Column.of("error"))

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking (needed when "
                                   "stdin is not a terminal).")]
FromSequence = Annotated[int, typer.Option("--from", min=0,
                                           help="First sequence number to look at.")]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, max=5000,
                                        help="Sequence numbers per request.")]
InFlight = Annotated[int, typer.Option("--in-flight", min=1, max=64,
                                       help="Batches worked on at once.")]
SequenceNumbers = Annotated[
    list[int] | None,
    typer.Argument(min=0, show_default=False,
                   help="Sequence numbers of deferred messages (default: every one found)."),
]


def _found(state: CliState, client_path: str, session: str | None, start: int,
           limit: int | None = None) -> Iterator[ReceivedMessage]:
    """The deferred messages, with a progress bar while the entity is read."""
    client = state.entity(client_path, requires_session=session is not None)
    with state.renderer.progress("finding deferred messages", None) as advance:
        for count, message in enumerate(find_deferred(client, start, session_id=session), 1):
            advance(1)
            yield message
            if count == limit:
                return


def deferred_list(
    ctx: typer.Context,
    entity: Entity,
    session: SessionOption = None,
    from_sequence: FromSequence = 1,
    max_count: MaxOption = None,
    count: CountAlias = None,
) -> None:
    """List the deferred messages: sequence number, enqueued time, deliveries, properties.

    The whole entity is read (peeked: nothing is locked or changed). The service does not
    say when a message was deferred; the enqueued time and delivery count are what it
    tells.

    Example: sbmgmt deferred list orders -o ndjson
    """
    state = CliState.of(ctx)
    table = state.output is OutputFormat.TABLE
    state.renderer.records(
        (_listed(message_record(m), table)
         for m in _found(state, entity, session, from_sequence, at_most(max_count, count))),
        DEFERRED_COLUMNS, empty=f"no deferred messages in {entity}")


def _listed(record: Record, table: bool) -> Record:
    """A deferred message's record; in a table, no properties is an empty cell (the
    column is left out when no message has any), not ``{}``."""
    if table and not record["application_properties"]:
        record["application_properties"] = None
    return record


def deferred_export(
    ctx: typer.Context,
    entity: Entity,
    old_file: Annotated[
        str | None, typer.Argument(hidden=True, show_default=False, metavar="FILE",
                                   help="Deprecated: use --file.")
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", dir_okay=False,
                                  help="Write here (replaced once the export is whole); "
                                  "default: stdout.")
    ] = None,
    session: SessionOption = None,
    from_sequence: FromSequence = 1,
    max_count: MaxOption = None,
    count: CountAlias = None,
) -> None:
    """Write the deferred messages as JSON lines (the export format), peeked: nothing changes.

    The messages deferred list finds, one JSON object a line with everything each carries
    (docs/export-format.md); sbmgmt import reads the file. Ctrl-C stops it: a --file is
    then left as it was.

    Example: sbmgmt deferred export orders --file deferred.jsonl
    """
    if old_file is not None:  # the positional FILE of 0.x, kept one release
        if file is not None:
            raise UsageProblem("give the file once: --file FILE (a positional FILE is the "
                               "old spelling)")
        file = None if old_file == "-" else Path(old_file)
    state = CliState.of(ctx)
    limit = at_most(max_count, count)
    client = state.entity(entity, requires_session=session is not None)
    run_export(ctx, "exporting deferred messages", file, "deferred message", limit,
               lambda out, on_progress, cancel: export_deferred(
                   client, out, from_sequence_number=from_sequence, max_count=limit,
                   session_id=session, on_progress=on_progress, cancel=cancel),
               span=False)


def _records(report: DeferredReport, absent: list[int], dry_run: bool,
             chosen: list[ReceivedMessage]) -> list[Record]:
    if dry_run:
        return [{"sequence_number": m.sequence_number, "outcome": "dry_run", "error": None}
                for m in chosen] + [{"sequence_number": n, "outcome": "not_found",
                                     "error": None} for n in absent]
    rows: list[Record] = [
        *({"sequence_number": n, "outcome": report.action.past_tense, "error": None}
          for n in report.settled),
        *({"sequence_number": n, "outcome": "not_found", "error": None}
          for n in [*report.not_found, *absent]),
        *({"sequence_number": n, "outcome": "failed", "error": e}
          for n, e in report.failed.items()),
        *({"sequence_number": n, "outcome": "not_attempted", "error": None}
          for n in report.not_attempted),
    ]
    return sorted(rows, key=lambda row: row["sequence_number"])


def _sentence(report: DeferredReport, absent: list[int]) -> str:
    parts = [f"{report.action.past_tense} {len(report.settled)} deferred message"
             f"{'' if len(report.settled) == 1 else 's'} of {report.entity}"]
    missing = sorted([*report.not_found, *absent])
    if missing:
        parts.append(f"not found (not or no longer deferred): "
                     f"{', '.join(map(str, missing))}")
    if report.failed:
        parts.append(f"{len(report.failed)} failed (see -o json for each error)")
    if report.not_attempted:
        parts.append(f"{len(report.not_attempted)} not attempted (interrupted)")
    return "; ".join(parts)


def _settle(ctx: typer.Context, entity: str, action: DeferredAction,
            numbers: Sequence[int] | None, session: str | None, dry_run: bool, yes: bool,
            batch_size: int, in_flight: int, reason: str | None = None,
            description: str | None = None) -> None:
    """Choose, say, ask, settle with progress and Ctrl-C, report: complete and
    dead-letter."""
    state = CliState.of(ctx)
    client = state.entity(entity, requires_session=session is not None)
    with state.renderer.progress_done("finding deferred messages", None) as reached:
        selection = select_deferred(client, numbers, session_id=session,
                                    on_progress=lambda now: reached(now.done))
    chosen, absent = selection.messages, selection.not_found
    verb = "complete (remove)" if action is DeferredAction.COMPLETE else "dead-letter"
    what = f"{verb} {len(chosen)} deferred message{'' if len(chosen) == 1 else 's'} of {entity}"
    if not chosen or dry_run:
        report = DeferredReport(action=action, entity=entity)
        state.renderer.done(outcome(dry_run, what, _sentence(report, absent)),
                            _records(report, absent, dry_run, chosen))
        return
    confirm(f"{what[0].upper()}{what[1:]}?", yes=yes, refusal=f"refused to {what}",
            declined="nothing was done: not confirmed")
    run_long(ctx, "completing" if action is DeferredAction.COMPLETE else "dead-lettering",
             lambda on_progress, cancel: settle_deferred(
                 state.entity(entity), chosen, action, dead_letter_reason=reason,
                 dead_letter_description=description, batch_size=batch_size,
                 in_flight=in_flight, on_progress=on_progress, cancel=cancel),
             render=lambda report: _sentence(report, absent),
             record=lambda report: _records(report, absent, False, chosen),
             total=len(chosen), exit_code=lambda report: 1 if report.failed else 0)


def deferred_complete(
    ctx: typer.Context,
    entity: Entity,
    sequence_numbers: SequenceNumbers = None,
    session: SessionOption = None,
    dry_run: DryRun = False,
    yes: Yes = False,
    batch_size: BatchSize = DEFAULT_BATCH_SIZE,
    in_flight: InFlight = DEFAULT_IN_FLIGHT,
) -> None:
    """Remove deferred messages (complete them): every one found, or those named.

    Finds them (a peek: the whole entity, or from the lowest number named to the highest),
    says how many, asks (--yes to skip; required when stdin is not a terminal), then locks
    and completes them in batches. Session entities: each session's messages are settled
    under its lock. Ctrl-C stops starting batches and reports what was done.

    Example: sbmgmt deferred complete orders --dry-run

    Example: sbmgmt deferred complete orders --yes -o json
    """
    if ctx.info_name == "purge":  # the old name, a hidden alias for one release
        typer.echo("deprecated: 'sbmgmt deferred purge' is now 'sbmgmt deferred complete'; "
                   "the old name goes in the next release", err=True)
    _settle(ctx, entity, DeferredAction.COMPLETE, sequence_numbers, session, dry_run, yes,
            batch_size, in_flight)


def deferred_dead_letter(
    ctx: typer.Context,
    entity: Entity,
    sequence_numbers: SequenceNumbers = None,
    reason: Annotated[str, typer.Option(help="The DeadLetterReason they get.")] = (
        "DeferredMessageRecovered"),
    description: Annotated[
        str | None, typer.Option(help="The DeadLetterErrorDescription they get.")
    ] = None,
    session: SessionOption = None,
    dry_run: DryRun = False,
    yes: Yes = False,
    batch_size: BatchSize = DEFAULT_BATCH_SIZE,
    in_flight: InFlight = DEFAULT_IN_FLIGHT,
) -> None:
    """Move deferred messages to the dead-letter queue with a reason.

    Every deferred message found, or those named; asks as complete does.

    Example: sbmgmt deferred dead-letter orders 17 18 --reason lost-consumer --yes
    """
    _settle(ctx, entity, DeferredAction.DEAD_LETTER, sequence_numbers, session, dry_run, yes,
            batch_size, in_flight, reason, description)


def register(app: typer.Typer) -> None:
    """Add ``list``, ``export``, ``complete`` and ``dead-letter`` to the ``deferred`` group
    (which :func:`sbmgmt.cli._messages.register` adds to ``app``), and ``purge``,
    ``complete``'s old name (hidden, saying so on stderr, kept one release)."""
    del app  # the group is the app's already
    command(deferred, "list")(deferred_list)
    command(deferred, "export")(deferred_export)
    command(deferred, "complete")(deferred_complete)
    deferred.command("purge", cls=HandledCommand, hidden=True)(deferred_complete)
    command(deferred, "dead-letter")(deferred_dead_letter)
