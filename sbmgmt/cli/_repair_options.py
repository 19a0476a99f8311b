"""What ``resubmit``, ``move`` and ``import`` share: their options (one name per thing:
``--max``, ``--batch-size``, ``--in-flight``), the selection they compile, ``--set``'s
properties, the reading of a target's duplicate detection, and the words for what a run
did with the copies that detection may drop."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Annotated, Any, get_type_hints

import typer

from ..actions.entities import admin_client, entity_properties
from ..actions.repair import DEFAULT_IN_FLIGHT, Selection
from ..actions.targets import Describe, IfDuplicate, TargetCheck
from ..errors import ServiceBusManagementError
from ..message import MessageId, ReceivedMessage
from ._exit import UsageProblem
from ._find import narrowed_by_lines
from ._messages import DryRun
from ._state import CliState, _default_credential
from ._times import parse_time

__all__ = [
    "HttpPortOption",
    "IfDuplicateOption",
    "ImportBatchOption",
    "InFlightOption",
    "RunOptions",
    "SetOption",
    "YesOption",
    "describer",
    "duplicate_parts",
    "id_value",
    "properties",
    "warnings",
    "with_run_options",
]

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
class RunOptions:
    """The selection and run options ``resubmit`` and ``move`` share: each field is a
    command-line option (its type says which), added to both commands by
    :func:`with_run_options`."""

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


def with_run_options(run: Callable[..., None]) -> Callable[..., None]:
    """``run`` (whose last parameter is ``options: RunOptions``) as a command taking its
    own parameters, then each of :class:`RunOptions`' fields as an option (typer reads
    the signature made here)."""
    own = [p for p in inspect.signature(run, eval_str=True).parameters.values()
           if p.name != "options"]
    hints = get_type_hints(RunOptions, include_extras=True)
    shared = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=f.default, annotation=hints[f.name])
              for f in fields(RunOptions)]

    @functools.wraps(run)
    def command_function(**values: Any) -> None:
        options = RunOptions(**{f.name: values.pop(f.name) for f in fields(RunOptions)})
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


def properties(pairs: list[str] | None) -> dict[str, Any]:
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



def id_value(value: MessageId | None) -> str | int | None:
    """A MessageId for a record or a line: a str or an int as it is, a uuid as text, bytes
    as hex."""
    if value is None or isinstance(value, (str, int)):
        return value
    return value.hex() if isinstance(value, bytes) else str(value)



@contextlib.contextmanager
def describer(state: CliState, http_port: int | None) -> Iterator[Describe]:
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


def warnings(plan_checks: Mapping[str, TargetCheck]) -> list[str]:
    """What the question and the dry run say about targets whose duplicate detection was
    not read."""
    return [f"the duplicate detection of {check.path} was not read ({check.unread}): if it "
            "is on, copies whose MessageId it saw within its window are dropped "
            "(--if-duplicate new-id sends them with a new one)"
            for check in plan_checks.values() if check.unread is not None]



def duplicate_parts(left_words: str, left: int, renamed: int, maybe_dropped: int) -> str:
    """What a run did with the copies its target's duplicate detection may drop."""
    return ((f"; {left} {left_words} (the target detects duplicates)" if left else "")
            + (f"; {renamed} sent with a new MessageId" if renamed else "")
            + (f"; {maybe_dropped} sent with a MessageId the target may have seen: the "
               "service may have dropped them" if maybe_dropped else ""))


