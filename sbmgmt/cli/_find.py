"""``sbmgmt find``: the messages of an entity, its dead-letter queue or every entity of the
namespace that meet conditions (:mod:`sbmgmt.actions.search`); peeked, nothing changes.

``-o ndjson`` writes sbmgmt export's format, one message a line as each is found, which
``sbmgmt import`` reads and ``sbmgmt resubmit`` / ``move --from-stdin`` take as a selection
(:func:`sequence_numbers_from`). The count comes at the end (stdout for a table, stderr for
JSON and NDJSON, whose stdout is the messages); progress shows on a terminal.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Annotated, Any

import typer

from .._wording import counted
from ..actions.contract import CancelToken, Outcome
from ..actions.entities import EntityKind, list_entities
from ..actions.export import message_to_json
from ..actions.repair import Selection
from ..actions.search import (
    DEFAULT_IN_FLIGHT,
    ConditionError,
    Conditions,
    Found,
    Matches,
    SearchReport,
    read_found,
    search,
    search_namespace,
)
from ..entity_paths import dead_letter_path
from ..errors import ExportFormatError
from ._command import command
from ._entities import admin_for, port_hinted
from ._exit import ExitCode, UsageProblem
from ._long import Display, ctrl_c_cancels, progress_shown
from ._render import MESSAGE_COLUMNS, Column, OutputFormat, message_record
from ._state import CliState
from ._times import parse_time

__all__ = ["narrowed_by_lines", "register"]

_SEQUENCE = re.compile(r"\d+")
#: A search condition's name -> the option that gives it.
_OPTIONS = {"where": "--where", "body": "--body", "body_regex": "--body-regex",
            "path": "--path", "states": "--state", "sequence numbers": "--from/--to",
            "enqueued time": "--from/--to"}
_ENTITY_COLUMN = Column.of("entity")


class State(str, enum.Enum):
    """A message's state, as ``--state`` takes it."""

    ACTIVE = "active"
    DEFERRED = "deferred"
    SCHEDULED = "scheduled"


def _bound(text: str | None, option: str) -> tuple[int | None, datetime | None]:
    """``--from`` / ``--to``: a sequence number (digits) or a time."""
    if text is None:
        return None, None
    if _SEQUENCE.fullmatch(text.strip()):
        return int(text), None
    try:
        return None, parse_time(text)
    except UsageProblem as problem:
        raise UsageProblem(f"{option}: a sequence number, or {problem}") from None


def _conditions(where: str | None, body: str | None, body_regex: str | None, path: str | None,
                states: list[State] | None, session: str | None, start: str | None,
                end: str | None) -> Conditions:
    first, enqueued_from = _bound(start, "--from")
    last, enqueued_to = _bound(end, "--to")
    conditions = Conditions(
        where=where, body=body, body_regex=body_regex, path=path,
        states=None if not states else frozenset(state.value for state in states),
        session_id=session, enqueued_from=enqueued_from, enqueued_to=enqueued_to,
        from_sequence_number=first, to_sequence_number=last)
    try:
        conditions.matcher()
    except ConditionError as error:
        reason = str(error).removeprefix(f"{error.condition}: ")
        raise UsageProblem(f"{_OPTIONS.get(error.condition, error.condition)}: {reason}") \
            from None
    return conditions


def _searched(state: CliState, http_port: int | None, dead_letter: bool) -> list[str]:
    """Every queue and subscription of the namespace (a topic keeps no messages)."""
    admin = admin_for(state, http_port, "sbmgmt find --all")
    with port_hinted(state, http_port), admin:
        entities = list_entities(admin)
    return [dead_letter_path(e.name) if dead_letter else e.name for e in entities
            if e.kind is not EntityKind.TOPIC]


def _export_line(found: Found) -> str:
    return json.dumps(message_to_json(found.message), ensure_ascii=False,
                      separators=(",", ":"))


def _report(report: SearchReport, where: str) -> str:
    sentence = f"found {counted(report.found, 'message')} in {where} ({report.read} read)"
    if report.failed:
        sentence += f"; {counted(len(report.failed), 'entity', 'entities')} not searched"
    if report.cancelled:
        sentence += " (cancelled: what was found so far)"
    return sentence


def find(
    ctx: typer.Context,
    entity: Annotated[str | None, typer.Argument(
        help="Entity path: QUEUE or TOPIC/Subscriptions/SUB (or either's /$DeadLetterQueue); "
             "none with --all.", show_default=False)] = None,
    all_entities: Annotated[bool, typer.Option(
        "--all", help="Search every queue and subscription of the namespace (listed by the "
        "administration API: the admin extra).")] = False,
    where: Annotated[str | None, typer.Option(
        "--where", help="A SQL filter over system and application properties, as a "
        "subscription rule (e.g. \"sys.Label = 'order' AND Region = 'eu'\").",
        show_default=False)] = None,
    body: Annotated[str | None, typer.Option(
        "--body", help="Text the body contains, case-insensitively, as the explorer shows "
        "it (JSON and XML indented, binary as hex).", show_default=False)] = None,
    body_regex: Annotated[str | None, typer.Option(
        "--body-regex", help="A regular expression (Python's) the shown body matches; "
        "(?i) for any case.", show_default=False)] = None,
    path: Annotated[str | None, typer.Option(
        "--path", help="'$...': a JSONPath query on a JSON body (RFC 9535, e.g. "
        "'$.order[?@.total > 100]'); otherwise an ElementTree path on an XML body; either "
        "may end with a comparison ('$.order.customer.id == 42', \"status == 'failed'\").",
        show_default=False)] = None,
    states: Annotated[list[State] | None, typer.Option(
        "--state", case_sensitive=False, help="Only messages in this state (repeatable).",
        show_default=False)] = None,
    dead_letter: Annotated[bool, typer.Option(
        "--dead-letter", help="Search the dead-letter queue (of each entity, with --all).")
    ] = False,
    session: Annotated[str | None, typer.Option(
        "--session", help="Only this session's messages.", show_default=False)] = None,
    start: Annotated[str | None, typer.Option(
        "--from", help="From this sequence number (digits), or enqueued from this time (ISO "
        "8601, now, -1h...).", show_default=False)] = None,
    end: Annotated[str | None, typer.Option(
        "--to", help="Up to this sequence number, or enqueued up to this time.",
        show_default=False)] = None,
    max_count: Annotated[int | None, typer.Option(
        "--max", min=1, help="Stop after this many matches.", show_default=False)] = None,
    in_flight: Annotated[int, typer.Option(
        "--in-flight", min=1, max=64, help="With --all: entities read at once.")
    ] = DEFAULT_IN_FLIGHT,
    http_port: Annotated[int | None, typer.Option(
        "--http-port", min=1, max=65535, envvar="EMULATOR_HTTP_PORT",
        help="With --all and an emulator connection string: its HTTP port (default 5300).",
        show_default=False)] = None,
) -> None:
    """Find messages by their properties, body and state; peeked: nothing changes.

    Every condition given must hold. -o ndjson writes sbmgmt export's format, one message
    a line as each is found: `sbmgmt import` reads it, and `sbmgmt resubmit --from-stdin`
    takes what it names.

    Example: sbmgmt find orders --body 'order 3' --state deferred
    """
    state = CliState.of(ctx)
    if all_entities == (entity is not None):
        raise UsageProblem("give an ENTITY, or --all for every entity of the namespace")
    conditions = _conditions(where, body, body_regex, path, states, session, start, end)
    cancel = CancelToken()
    found: Iterator[Found]
    with ctrl_c_cancels(cancel), Display("searching", None, cancel,
                                         shown=progress_shown(state.output)) as display:
        if entity is not None:
            source = dead_letter_path(entity) if dead_letter else entity
            where_text = source
            found = search(state.client(source), source, conditions, max_count=max_count,
                           on_progress=display.show, cancel=cancel)
        else:
            paths = _searched(state, http_port, dead_letter)
            where_text = f"{counted(len(paths), 'entity', 'entities')} of the namespace"
            found = iter(()) if not paths else search_namespace(
                state.client(paths[0]), paths, conditions, max_count=max_count,
                in_flight=in_flight, on_progress=display.show, cancel=cancel)
        _print(state.renderer, found, all_entities)
    report = found.report if isinstance(found, Matches) else SearchReport(entity=where_text,
                                                                          entities=0)
    typer.echo(_report(report, where_text), err=state.output is not OutputFormat.TABLE)
    for failed, reason in report.failed:
        typer.echo(f"not searched: {failed}: {reason}", err=True)
    if report.outcome is Outcome.CANCELLED:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if report.failed:
        raise typer.Exit(int(ExitCode.TRANSIENT))


def _print(renderer: Any, found: Iterator[Found], many: bool) -> None:
    """The matches: export lines as they come (NDJSON), else records (a table or JSON)."""
    if renderer.output is OutputFormat.NDJSON:
        out = sys.stdout
        for item in found:
            out.write(_export_line(item) + "\n")
            out.flush()
        return
    records = ({"entity": item.entity, **message_record(item.message)} for item in found)
    columns = (_ENTITY_COLUMN, *MESSAGE_COLUMNS) if many else MESSAGE_COLUMNS
    renderer.records(records, columns, empty="no messages found")


def narrowed_by_lines(selection: Selection, lines: IO[str], what: str = "stdin") -> Selection:
    """``resubmit`` / ``move --from-stdin``: ``selection`` narrowed to the messages that
    export lines (``sbmgmt find -o ndjson``, ``sbmgmt export``) name, by sequence number,
    each with its MessageId (a message now at one of those numbers with another MessageId,
    one of another entity's lines, is not taken). Every line is read and checked first.

    Raises:
        UsageProblem: A line is not a message of the export format or has no sequence
            number, or there is no line.
    """
    try:
        named = read_found(lines).selection()
    except ExportFormatError as error:
        raise UsageProblem(f"{what}: {error}") from None
    assert named.sequence_numbers is not None and named.where is not None
    if not named.sequence_numbers:
        raise UsageProblem(f"{what}: no messages (expected the lines of sbmgmt find -o ndjson "
                           "or sbmgmt export)")
    numbers = named.sequence_numbers if selection.sequence_numbers is None else \
        named.sequence_numbers & selection.sequence_numbers
    same, also = named.where, selection.where
    return dataclasses.replace(
        selection, sequence_numbers=numbers,
        where=same if also is None else (lambda message: same(message) and also(message)))


def register(app: typer.Typer) -> None:
    """Add ``find`` to the root app."""
    command(app, "find")(find)
