"""Dead-letter repair commands: ``resubmit`` (dead letters back to where they came from) and
``move`` (messages of any entity to another), both on :mod:`sbmgmt.actions.repair`; and
``import`` (an export file's messages sent to an entity, :mod:`sbmgmt.actions.import_file`).

Each plans first (a peek: nothing changes), prints the plan with ``--dry-run`` and stops,
asks on a terminal (refuses without ``--yes`` when stdin is not one: exit code 11), shows
progress on a terminal, and ends with what it did, counted: moved, failed and why, not found,
possible duplicates. A run that did not move everything exits with 7 (transient): what was
not moved is still in the source, and running the command again moves it.
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from .._wording import counted
from ..actions.export import read_messages
from ..actions.import_file import import_messages
from ..actions.repair import (
    DEAD_LETTER_SUFFIX,
    DEFAULT_IN_FLIGHT,
    RepairPlan,
    RepairReport,
    Selection,
    plan_move,
    plan_resubmit,
    repair,
)
from ..client import ManagementClient
from ..errors import ExportFormatError
from ..message import MessageId, ReceivedMessage
from ._command import command
from ._confirm import confirm
from ._exit import ExitCode, UsageProblem
from ._messages import DryRun, Entity
from ._render import Column, Record, iso_time
from ._state import CliState
from ._times import parse_time

__all__ = ["register"]

_IMPORT_COLUMNS = (Column.of("index"), Column.of("message_id"), Column.of("subject"),
                   Column.of("target"))
_PLAN_COLUMNS = (Column.of("sequence_number", "seq"), Column.of("message_id"),
                 Column.of("target"), Column.of("dead_letter_reason"),
                 Column.time("enqueued_time"))

SequenceOption = Annotated[list[int] | None, typer.Option(
    "--sequence-number", "-s", min=0, help="Only this sequence number (repeatable).")]
ReasonOption = Annotated[str | None, typer.Option(
    "--reason", help="Only messages dead-lettered for this reason (DeadLetterReason).")]
WhereOption = Annotated[str | None, typer.Option(
    "--where", help="Only messages this SQL filter expression selects, as a subscription "
    "rule would (e.g. \"Region = 'eu' AND sys.Label LIKE 'order%'\").")]
BeforeOption = Annotated[str | None, typer.Option(
    "--before", help="Only messages enqueued before this time (ISO 8601 or relative, -1d).")]
AfterOption = Annotated[str | None, typer.Option(
    "--after", help="Only messages enqueued after this time (ISO 8601 or relative, -1d).")]
MaxOption = Annotated[int | None, typer.Option(
    "--max", min=1, help="At most this many messages (the oldest first).")]
SetOption = Annotated[list[str] | None, typer.Option(
    "--set", help="Set an application property on every copy: KEY=VALUE (a JSON number, "
    "true, false or null is taken as such, anything else as a string); repeatable.")]
KeepOption = Annotated[bool, typer.Option(
    "--keep-reason", help="Keep the dead-letter reason and description on the copies "
    "(cleared by default).")]
NoTransactionOption = Annotated[bool, typer.Option(
    "--no-transaction", help="Send, then complete, without a transaction: a cut in between "
    "leaves a copy in both places (reported; a target with duplicate detection drops it).")]
BatchOption = Annotated[int, typer.Option(
    "--batch-size", min=1, max=1000, help="Messages per batch (one transaction each).")]
InFlightOption = Annotated[int, typer.Option(
    "--in-flight", min=1, max=64, help="Batches moving at once.")]
YesOption = Annotated[bool, typer.Option(
    "--yes", "-y", help="Do not ask (needed when stdin is not a terminal).")]


@dataclass(frozen=True)
class _RunOptions:
    """The selection and run options ``resubmit`` and ``move`` share: each field is a
    command-line option (its type says which), added to both commands by
    :func:`_with_run_options`."""

    sequence_numbers: SequenceOption = None
    reason: ReasonOption = None
    where: WhereOption = None
    before: BeforeOption = None
    after: AfterOption = None
    max_count: MaxOption = None
    set_pairs: SetOption = None
    keep_dead_letter_fields: KeepOption = False
    no_transaction: NoTransactionOption = False
    batch_size: BatchOption = 100
    in_flight: InFlightOption = DEFAULT_IN_FLIGHT
    dry_run: DryRun = False
    yes: YesOption = False

    def selection(self) -> Selection:
        """The messages the options select."""
        return _selection(self.sequence_numbers, self.reason, self.where, self.before,
                          self.after, self.max_count)


def _with_run_options(run: Callable[..., None]) -> Callable[..., None]:
    """``run`` (whose last parameter is ``options: _RunOptions``) as a command taking its
    own parameters, then each of :class:`_RunOptions`' fields as an option (typer reads
    the signature made here)."""
    own = [p for p in inspect.signature(run, eval_str=True).parameters.values()
           if p.name != "options"]
    hints = get_type_hints(_RunOptions, include_extras=True)
    shared = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=f.default, annotation=hints[f.name])
              for f in fields(_RunOptions)]

    @functools.wraps(run)
    def command_function(**values: Any) -> None:
        options = _RunOptions(**{f.name: values.pop(f.name) for f in fields(_RunOptions)})
        run(**values, options=options)

    parameters = [*own, *shared]
    command_function.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command_function.__annotations__ = {p.name: p.annotation for p in parameters}
    return command_function


def _selection(sequence_numbers: list[int] | None, reason: str | None, where: str | None,
               before: str | None, after: str | None, max_count: int | None) -> Selection:
    predicate = None
    if where is not None:
        from fakes.sql import SqlSyntaxError, parse_filter  # the project's SQL filter engine

        try:
            program = parse_filter(where)
        except SqlSyntaxError as error:
            raise UsageProblem(f"--where: {error}") from None

        def predicate(message: ReceivedMessage) -> bool:
            return program.matches(message)
    return Selection(
        sequence_numbers=None if not sequence_numbers else frozenset(sequence_numbers),
        reason=reason, where=predicate,
        enqueued_before=None if before is None else parse_time(before),
        enqueued_after=None if after is None else parse_time(after),
        max_count=max_count)


def _properties(pairs: list[str] | None) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageProblem(f"--set takes KEY=VALUE, got {pair!r}")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        if isinstance(value, (list, dict)):
            value = text
        properties[key] = value
    return properties


def _id(value: MessageId | None) -> str | int | None:
    """A MessageId for a record or a line: a str or an int as it is, a uuid as text, bytes
    as hex."""
    if value is None or isinstance(value, (str, int)):
        return value
    return value.hex() if isinstance(value, bytes) else str(value)


def _plan_record(item: Any) -> Record:
    return {
        "sequence_number": item.sequence_number,
        "message_id": _id(item.message_id),
        "target": item.target,
        "dead_letter_reason": item.dead_letter_reason,
        "enqueued_time": None if item.enqueued_time is None else iso_time(item.enqueued_time),
    }


def _where(plan: RepairPlan) -> str:
    targets = plan.targets
    return ", ".join(f"{name} ({count})" for name, count in targets.items()) or "nowhere"


def _summary(verb: str, report: RepairReport) -> Record:
    return {
        "source": report.source,
        "planned": report.planned,
        "moved": len(report.moved),
        "failed": [{"sequence_number": f.sequence_number, "message_id": _id(f.message_id),
                    "reason": f.reason} for f in report.failed],
        "not_found": report.not_found,
        "duplicates": [_id(d) for d in report.duplicates],
        "transactional": report.transactional,
        "cancelled": report.cancelled,
        "complete": report.complete,
        "action": verb,
    }


def _carry_out(state: CliState, client: ManagementClient, plan: RepairPlan, verb: str,
               options: _RunOptions) -> None:
    properties = _properties(options.set_pairs)
    renderer = state.renderer
    planned = counted(len(plan.items), "message")
    if options.dry_run or not plan.items:
        renderer.records((_plan_record(item) for item in plan.items), _PLAN_COLUMNS,
                         empty=f"no messages of {plan.source} to {verb}")
        if plan.items:
            sys.stderr.write(f"dry run: would {verb} {planned} of "
                             f"{plan.source} to {_where(plan)}; nothing was changed\n")
        return
    confirm(f"{verb.capitalize()} {planned} of {plan.source} to "
            f"{_where(plan)}?", yes=options.yes,
            refusal=f"refused to {verb} {planned}",
            declined="nothing was moved: not confirmed")
    cancel = threading.Event()
    with renderer.progress_done(verb, len(plan.items)) as reached:
        try:
            report = repair(client, plan, set_properties=properties,
                            keep_dead_letter_fields=options.keep_dead_letter_fields,
                            transactional=not options.no_transaction,
                            batch_size=options.batch_size, in_flight=options.in_flight,
                            progress=lambda done, _total: reached(done), cancel=cancel)
        except KeyboardInterrupt:
            cancel.set()
            raise
    summary = _summary(verb, report)
    of_planned = f"of {counted(report.planned, 'message')}"
    sentence = (f"{verb}: {len(report.moved)} {of_planned} of "
                f"{report.source} moved to {_where(plan)}"
                + (f"; {len(report.failed)} failed" if report.failed else "")
                + (f"; {len(report.not_found)} not found" if report.not_found else "")
                + (f"; {len(report.duplicates)} possibly sent twice (same MessageId)"
                   if report.duplicates else "")
                + ("" if report.transactional else " (without transactions)"))
    renderer.done(sentence, summary)
    for failure in report.failed[:20]:
        sys.stderr.write(f"not moved: {failure.sequence_number} ({_id(failure.message_id)}): "
                         f"{failure.reason}\n")
    if not report.complete:
        sys.stderr.write(f"not moved: {report.planned - len(report.moved)} {of_planned} "
                         "(still in the source): run "
                         "the command again\n")
        raise typer.Exit(int(ExitCode.TRANSIENT))


@_with_run_options
def resubmit(ctx: typer.Context, entity: Entity, options: _RunOptions) -> None:
    """Send dead letters back to where they came from and remove them from the queue.

    Each batch moves in one transaction: all of it moves, or none.

    Example: sbmgmt resubmit orders --reason Poison --set fixed=true --dry-run
    """
    state = CliState.of(ctx)
    source = entity if entity.endswith(DEAD_LETTER_SUFFIX) else entity + DEAD_LETTER_SUFFIX
    client = state.client(source)
    plan = plan_resubmit(client, source, options.selection())
    _carry_out(state, client, plan, "resubmit", options)


@_with_run_options
def move(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="The entity to take messages from (a queue, "
                                           "a subscription, or a path ending in "
                                           "/$DeadLetterQueue).")],
    target: Annotated[str, typer.Argument(help="The queue or topic to send them to.")],
    dead_letter: Annotated[bool, typer.Option(
        "--dead-letter", help="Take them from SOURCE's dead-letter queue.")] = False,
    *, options: _RunOptions,
) -> None:
    """Move messages: each is sent to TARGET and removed from SOURCE.

    Each batch moves in one transaction: all of it moves, or none.

    Example: sbmgmt move orders archive --dead-letter --before -7d --yes
    """
    state = CliState.of(ctx)
    path = source + DEAD_LETTER_SUFFIX if dead_letter and not source.endswith(
        DEAD_LETTER_SUFFIX) else source
    client = state.client(path)
    plan = plan_move(client, path, target, options.selection())
    _carry_out(state, client, plan, "move", options)


def import_file(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="An export file (one JSON message a line; "
                                         "- for stdin).", allow_dash=True)],
    entity: Annotated[str, typer.Argument(help="The queue or topic to send them to.")],
    set_pairs: SetOption = None,
    batch_size: BatchOption = 100,
    in_flight: InFlightOption = 8,
    dry_run: DryRun = False,
    yes: YesOption = False,
) -> None:
    """Send the messages of an export file (sbmgmt export's format) to an entity.

    Example: sbmgmt import - orders --set replayed=true --dry-run
    """
    state = CliState.of(ctx)
    properties = _properties(set_pairs)
    lines = sys.stdin if str(file) == "-" else file.open(encoding="utf-8")
    with lines:
        try:
            messages = list(read_messages(lines))  # every line checked before any is sent
        except ExportFormatError as error:
            raise UsageProblem(f"{file}: {error}") from None
    renderer = state.renderer
    read = counted(len(messages), "message")
    if dry_run or not messages:
        renderer.records(({"index": i, "message_id": _id(m.message_id), "subject": m.subject,
                           "target": entity} for i, m in enumerate(messages)),
                         _IMPORT_COLUMNS, empty=f"no messages in {file}")
        if messages:
            sys.stderr.write(f"dry run: would send {read} of {file} to {entity}; nothing was "
                             "sent\n")
        return
    confirm(f"Send {read} of {file} to {entity}?", yes=yes,
            refusal=f"refused to send {read}",
            declined="nothing was sent: not confirmed")
    client = state.client(entity)
    with renderer.progress_done("import", len(messages)) as reached:
        report = import_messages(client, entity, messages, set_properties=properties,
                                 batch_size=batch_size, in_flight=in_flight,
                                 progress=reached)
    renderer.done(
        f"import: {report.sent} of {read} of {file} sent to {entity}"
        + (f"; {len(report.failed)} failed" if report.failed else ""),
        {"entity": entity, "file": str(file), "read": len(messages), "sent": report.sent,
         "failed": [{"index": f.index, "message_id": _id(f.message_id), "reason": f.reason}
                    for f in report.failed]})
    for failure in report.failed[:20]:
        sys.stderr.write(f"not sent: line {failure.index + 1} ({_id(failure.message_id)}): "
                         f"{failure.reason}\n")
    if report.failed:
        raise typer.Exit(int(ExitCode.TRANSIENT))


def register(app: typer.Typer) -> None:
    """Add ``resubmit``, ``move`` and ``import`` to the root command."""
    command(app, "resubmit")(resubmit)
    command(app, "move")(move)
    command(app, "import")(import_file)
