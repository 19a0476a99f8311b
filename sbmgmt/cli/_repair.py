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

import contextlib
import functools
import inspect
import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from .._wording import counted
from ..actions.entities import admin_client, entity_properties
from ..actions.export import read_messages
from ..actions.import_file import ImportReport, import_messages
from ..actions.import_file import refuse_duplicates as refuse_import
from ..actions.repair import (
    DEAD_LETTER_SUFFIX,
    DEFAULT_IN_FLIGHT,
    RepairPlan,
    RepairReport,
    Selection,
    plan_move,
    plan_resubmit,
    refuse_duplicates,
    repair,
)
from ..actions.targets import Describe, IfDuplicate, TargetCheck, check_target
from ..client import ManagementClient
from ..errors import ExportFormatError, ServiceBusManagementError
from ..message import MessageId, ReceivedMessage
from ._command import command
from ._confirm import confirm
from ._exit import ExitCode, UsageProblem
from ._find import narrowed_by_lines
from ._input import entity_path
from ._messages import DryRun, Entity
from ._render import Column, Record, iso_time
from ._state import CliState, _default_credential
from ._times import parse_time

__all__ = ["register"]

_IMPORT_COLUMNS = (Column.of("number", "#"), Column.of("message_id"), Column.of("subject"),
                   Column.of("target"))
_PLAN_COLUMNS = (Column.of("sequence_number", "seq"), Column.of("message_id"),
                 Column.of("target"), Column.of("may_be_dropped", "duplicate?"),
                 Column.of("dead_letter_reason"), Column.time("enqueued_time"))

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
    "--batch-size", min=1, max=1000, help="Messages per batch (one transaction each: at "
    "most 100, the service's quota; up to 1,000 with --no-transaction).")]
ImportBatchOption = Annotated[int, typer.Option(
    "--batch-size", min=1, max=1000, help="Messages sent together (no transaction: each "
    "message's outcome is counted).")]
IfDuplicateOption = Annotated[IfDuplicate, typer.Option(
    "--if-duplicate", case_sensitive=False,
    help="When the target detects duplicates, what to do with copies it may drop (they keep "
    "their MessageId): refuse the run (default), new-id (a new MessageId, the old one in "
    "the property OriginalMessageId), leave (not sent, left where they are), send (as "
    "they are: you know the target never saw those ids).")]
HttpPortOption = Annotated[int | None, typer.Option(
    "--http-port", min=1, max=65535, envvar="EMULATOR_HTTP_PORT", show_default=False,
    help="An emulator's HTTP port, to read the target's duplicate detection (the admin "
    "extra); against Azure its administration API is used.")]
InFlightOption = Annotated[int, typer.Option(
    "--in-flight", min=1, max=64, help="Batches moving at once.")]
FromStdinOption = Annotated[bool, typer.Option(
    "--from-stdin", help="Only the messages the export lines on stdin name (sbmgmt find -o "
    "ndjson, sbmgmt export), each by its sequence number and MessageId; with other "
    "criteria, those of them that also meet them.")]
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
    if_duplicate: IfDuplicateOption = IfDuplicate.REFUSE
    batch_size: BatchOption = 100
    in_flight: InFlightOption = DEFAULT_IN_FLIGHT
    http_port: HttpPortOption = None
    dry_run: DryRun = False
    yes: YesOption = False
    from_stdin: FromStdinOption = False

    def selection(self) -> Selection:
        """The messages the options select."""
        chosen = _selection(self.sequence_numbers, self.reason, self.where, self.before,
                            self.after, self.max_count)
        return narrowed_by_lines(chosen, sys.stdin) if self.from_stdin else chosen


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


def _plan_record(item: Any, plan: RepairPlan) -> Record:
    return {
        "sequence_number": item.sequence_number,
        "message_id": _id(item.message_id),
        "target": item.target,
        "may_be_dropped": item.sequence_number in plan.at_risk,
        "dead_letter_reason": item.dead_letter_reason,
        "enqueued_time": None if item.enqueued_time is None else iso_time(item.enqueued_time),
    }


@contextlib.contextmanager
def _describer(state: CliState, http_port: int | None) -> Iterator[Describe]:
    """Reads an entity's properties through the administration API (the ``admin`` extra),
    for a target's duplicate detection; where it cannot be used, each call raises why,
    which the target's check reports as ``unread`` (the run is not refused for it)."""
    def unavailable(reason: str) -> Describe:
        def describe(_path: str) -> Any:
            raise ServiceBusManagementError(reason)
        return describe

    emulator = state.emulator or (
        state.connection_string is not None
        and "usedevelopmentemulator=true" in state.connection_string.replace(" ", "").lower())
    if emulator and http_port is None:
        yield unavailable("an emulator's HTTP port was not given (--http-port or "
                          "EMULATOR_HTTP_PORT)")
        return
    try:
        credential = None if state.connection_string else _default_credential()
        admin = admin_client(connection_string=state.connection_string,
                             namespace=state.namespace, credential=credential,
                             http_port=http_port, timeout=state.timeout)
    except (ImportError, ValueError, UsageProblem) as error:
        yield unavailable(str(error))
        return
    with admin:
        yield functools.partial(entity_properties, admin)


def _warnings(plan_checks: Mapping[str, TargetCheck]) -> list[str]:
    """What the question and the dry run say about targets whose duplicate detection was
    not read."""
    return [f"the duplicate detection of {check.path} was not read ({check.unread}): if it "
            "is on, copies whose MessageId it saw within its window are dropped "
            "(--if-duplicate new-id sends them with a new one)"
            for check in plan_checks.values() if check.unread is not None]


def _where(plan: RepairPlan) -> str:
    targets = plan.targets
    if len(targets) == 1:
        return next(iter(targets))
    return ", ".join(f"{name} ({count})" for name, count in targets.items()) or "nowhere"


def _held(plan: RepairPlan) -> str:
    if not plan.held:
        return ""
    return (f"; {counted(plan.held, 'other message')} of {plan.source} (not selected, ahead "
            "of the selected ones) will be locked while it runs and given back unchanged "
            "(AMQP released: not a delivery attempt)")


def _at_risk_note(plan: RepairPlan, choice: IfDuplicate) -> str:
    if not plan.at_risk:
        return ""
    what = {IfDuplicate.NEW_ID: "will get a new MessageId (the old one in OriginalMessageId)",
            IfDuplicate.LEAVE: "will be left in the source",
            IfDuplicate.SEND: "will be sent as they are (the target may drop them)",
            IfDuplicate.REFUSE: "are refused"}[choice]
    return (f"; {counted(len(plan.at_risk), 'copy', 'copies')} the target's duplicate "
            f"detection may drop {what}")


def _duplicate_parts(left_words: str, left: int, renamed: int, maybe_dropped: int) -> str:
    """What a run did with the copies its target's duplicate detection may drop."""
    return ((f"; {left} {left_words} (the target detects duplicates)" if left else "")
            + (f"; {renamed} sent with a new MessageId" if renamed else "")
            + (f"; {maybe_dropped} sent with a MessageId the target may have seen: the "
               "service may have dropped them" if maybe_dropped else ""))


def _summary(verb: str, plan: RepairPlan, report: RepairReport | None) -> Record:
    """The one JSON shape of a run, whatever happened (nothing planned included)."""
    return {
        "action": verb,
        "source": plan.source,
        "targets": plan.targets,
        "planned": len(plan.items) if report is None else report.planned,
        "moved": 0 if report is None else len(report.moved),
        "failed": [] if report is None else [
            {"sequence_number": f.sequence_number, "message_id": _id(f.message_id),
             "reason": f.reason} for f in report.failed],
        "not_found": [] if report is None else report.not_found,
        "not_in_source": list(plan.not_found),
        "duplicates": [] if report is None else [_id(d) for d in report.duplicates],
        "duplicate_detection": {path: check.duplicate_detection
                                for path, check in plan.checks.items()},
        "left": [] if report is None else report.left,
        "maybe_dropped": [] if report is None else [_id(d) for d in report.maybe_dropped],
        "new_message_ids": {} if report is None else {
            str(number): new for number, new in report.new_message_ids.items()},
        "held": plan.held,
        "transactional": True if report is None else report.transactional,
        "cancelled": False if report is None else report.cancelled,
        "complete": report is None or report.complete,
    }


def _carry_out(state: CliState, client: ManagementClient, plan: RepairPlan, verb: str,
               options: _RunOptions) -> None:
    properties = _properties(options.set_pairs)
    renderer = state.renderer
    planned = counted(len(plan.items), "message")
    notes = [*_warnings(plan.checks)]
    if plan.not_found:
        notes.append(f"not in {plan.source}: {', '.join(map(str, plan.not_found))}")
    if options.dry_run:
        renderer.records((_plan_record(item, plan) for item in plan.items), _PLAN_COLUMNS,
                         empty=f"no messages of {plan.source} to {verb}")
        if plan.items:
            sys.stderr.write(f"dry run: would {verb} {planned} of {plan.source} to "
                             f"{_where(plan)}{_held(plan)}"
                             f"{_at_risk_note(plan, options.if_duplicate)}; nothing was "
                             "changed\n")
        for note in notes:
            sys.stderr.write(f"{note}\n")
        return
    if not plan.items:
        nothing = f"{verb}: no messages of {plan.source} to {verb}" + (
            f"; not in it: {', '.join(map(str, plan.not_found))}" if plan.not_found else "")
        renderer.done(nothing, _summary(verb, plan, None))
        return
    for note in notes:
        sys.stderr.write(f"{note}\n")
    refuse_duplicates(plan, options.if_duplicate)
    confirm(f"{verb.capitalize()} {planned} of {plan.source} to {_where(plan)}"
            f"{_held(plan)}{_at_risk_note(plan, options.if_duplicate)}?", yes=options.yes,
            refusal=f"refused to {verb} {planned}",
            declined="nothing was moved: not confirmed")
    cancel = threading.Event()
    with renderer.progress_done(verb, len(plan.items)) as reached:
        try:
            report = repair(client, plan, set_properties=properties,
                            keep_dead_letter_fields=options.keep_dead_letter_fields,
                            if_duplicate=options.if_duplicate,
                            transactional=not options.no_transaction,
                            batch_size=options.batch_size, in_flight=options.in_flight,
                            progress=lambda done, _total: reached(done), cancel=cancel)
        except KeyboardInterrupt:
            cancel.set()
            raise
    of_planned = f"of {counted(report.planned, 'message')}"
    sentence = (f"{verb}: {len(report.moved)} {of_planned} of "
                f"{report.source} moved to {_where(plan)}"
                + (f"; {len(report.failed)} failed" if report.failed else "")
                + (f"; {len(report.not_found)} not found" if report.not_found else "")
                + (f"; not in the source: {', '.join(map(str, plan.not_found))}"
                   if plan.not_found else "")
                + _duplicate_parts("left in the source", len(report.left),
                                   len(report.new_message_ids), len(report.maybe_dropped))
                + (f"; {len(report.duplicates)} possibly sent twice (same MessageId)"
                   if report.duplicates else "")
                + ("" if report.transactional else " (without transactions)"))
    renderer.done(sentence, _summary(verb, plan, report))
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

    Each batch moves in one transaction: all of it moves, or none. The target is checked
    first; copies its duplicate detection may drop are refused unless --if-duplicate says
    what to do. Messages not selected but ahead of the selected ones are locked while it
    runs and given back unchanged (AMQP released: no delivery counted).

    Example: sbmgmt resubmit orders --reason Poison --set fixed=true --dry-run
    """
    state = CliState.of(ctx)
    entity = entity_path(entity)
    source = entity if entity.endswith(DEAD_LETTER_SUFFIX) else entity + DEAD_LETTER_SUFFIX
    selection = options.selection()
    client = state.client(source)
    with _describer(state, options.http_port) as describe:
        plan = plan_resubmit(client, source, selection, describe=describe)
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

    Each batch moves in one transaction: all of it moves, or none. TARGET is checked
    first; copies its duplicate detection may drop are refused unless --if-duplicate says
    what to do. Messages not selected but ahead of the selected ones are locked while it
    runs and given back unchanged (AMQP released: no delivery counted).

    Example: sbmgmt move orders archive --dead-letter --before -7d --yes
    """
    state = CliState.of(ctx)
    source, target = entity_path(source), entity_path(target)
    path = source + DEAD_LETTER_SUFFIX if dead_letter and not source.endswith(
        DEAD_LETTER_SUFFIX) else source
    selection = options.selection()
    client = state.client(path)
    with _describer(state, options.http_port) as describe:
        plan = plan_move(client, path, target, selection, describe=describe)
    _carry_out(state, client, plan, "move", options)


def import_file(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="An export file (one JSON message a line; "
                                         "- for stdin).", allow_dash=True)],
    entity: Annotated[str, typer.Argument(help="The queue or topic to send them to.")],
    set_pairs: SetOption = None,
    if_duplicate: IfDuplicateOption = IfDuplicate.REFUSE,
    batch_size: ImportBatchOption = 100,
    in_flight: InFlightOption = 8,
    http_port: HttpPortOption = None,
    dry_run: DryRun = False,
    yes: YesOption = False,
) -> None:
    """Send the messages of an export file (sbmgmt export's format) to an entity.

    Example: sbmgmt import - orders --set replayed=true --dry-run
    """
    state = CliState.of(ctx)
    entity = entity_path(entity)
    properties = _properties(set_pairs)
    lines = sys.stdin if str(file) == "-" else file.open(encoding="utf-8")
    with lines:
        try:
            messages = list(read_messages(lines))  # every line checked before any is sent
        except ExportFormatError as error:
            raise UsageProblem(f"{file}: {error}") from None
    renderer = state.renderer
    read = counted(len(messages), "message")
    client = state.client(entity)
    with _describer(state, http_port) as describe:
        check = check_target(client, entity, describe=describe)
    risky = bool(check.duplicate_detection) and any(m.message_id is not None
                                                     for m in messages)
    at_risk = (f"; {entity} detects duplicates: the messages with a MessageId "
               + {IfDuplicate.NEW_ID: "get a new one (the old one in OriginalMessageId)",
                  IfDuplicate.LEAVE: "are left out",
                  IfDuplicate.SEND: "are sent as they are (it may drop them)",
                  IfDuplicate.REFUSE: "are refused"}[if_duplicate]) if risky else ""
    for note in _warnings({entity: check}):
        sys.stderr.write(f"{note}\n")
    if dry_run:
        renderer.records(({"number": i, "message_id": _id(m.message_id), "subject": m.subject,
                           "target": entity} for i, m in enumerate(messages, start=1)),
                         _IMPORT_COLUMNS, empty=f"no messages in {file}")
        if messages:
            sys.stderr.write(f"dry run: would send {read} of {file} to {entity}{at_risk}; "
                             "nothing was sent\n")
        return
    if messages:  # an empty file sends nothing: its summary says so, nothing is asked
        if risky:
            refuse_import(check, if_duplicate)
        confirm(f"Send {read} of {file} to {entity}{at_risk}?", yes=yes,
                refusal=f"refused to send {read}",
                declined="nothing was sent: not confirmed")
    report = ImportReport(entity=entity)
    if messages:
        with renderer.progress_done("import", len(messages)) as reached:
            report = import_messages(client, entity, messages, set_properties=properties,
                                     batch_size=batch_size, in_flight=in_flight,
                                     on_progress=lambda now: reached(now.done),
                                     if_duplicate=if_duplicate, check=check)
    renderer.done(
        f"import: {report.sent} of {read} of {file} sent to {entity}"
        + (f"; {len(report.failed)} failed" if report.failed else "")
        + _duplicate_parts("left out", len(report.left), len(report.new_message_ids),
                           len(report.maybe_dropped)),
        {"entity": entity, "file": str(file), "read": len(messages), "sent": report.sent,
         "failed": [{"number": f.index + 1, "message_id": _id(f.message_id),
                     "reason": f.reason} for f in report.failed],
         "duplicate_detection": check.duplicate_detection,
         "left": [index + 1 for index in report.left],
         "maybe_dropped": [_id(d) for d in report.maybe_dropped],
         "new_message_ids": {str(index + 1): new
                             for index, new in report.new_message_ids.items()}})
    for failure in report.failed[:20]:
        sys.stderr.write(f"not sent: message {failure.index + 1} "
                         f"({_id(failure.message_id)}): {failure.reason}\n")
    if report.failed:
        raise typer.Exit(int(ExitCode.TRANSIENT))


def register(app: typer.Typer) -> None:
    """Add ``resubmit``, ``move`` and ``import`` to the root command."""
    command(app, "resubmit")(resubmit)
    command(app, "move")(move)
    command(app, "import")(import_file)
