"""``sbmgmt entities``: every queue, topic and subscription with its message counts, or one
entity's properties.

The listing and the properties are library code (:mod:`sbmgmt.actions.entities`: the
official administration client, the emulator's plain-HTTP port, azure-core's errors as
sbmgmt's), shared with the explorer; this module chooses, sorts and renders them.
``entities`` is a group: alone (or with the listing's options) it runs ``entities list``;
:mod:`._entity_admin` adds ``create``, ``update`` and ``delete`` to it.
"""

from __future__ import annotations

import contextlib
import enum
import fnmatch
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Annotated, Any

import typer
from rich.console import Console

from ..actions.entities import (
    ADMIN_EXTRA,
    EMULATOR_HTTP_PORT,
    EntityKind,
    admin_client,
    admin_connection_string,
    entity_properties,
    list_entities,
    plain_http_transport,
)
from ..actions.watch import DEFAULT_INTERVAL
from ..errors import TransportError
from ._command import HelpfulGroup, command
from ._exit import UsageProblem
from ._render import Column, OutputFormat, Record, iso_time, json_value, table_time
from ._state import CliState
from ._watch import watch

__all__ = ["EMULATOR_HTTP_PORT", "HttpPort", "admin_connection_string", "admin_for",
           "entities", "entities_group", "entity_columns", "entity_records", "port_hinted",
           "plain_http_transport", "register"]

#: The kind (a word) and the counts are whole at any width; a long name folds.
ENTITY_COLUMNS = (
    Column.of("kind", whole=True),
    Column.of("name"),
    Column.of("active", whole=True),
    Column.of("dead_letter", "dead-letter", whole=True),
    Column.of("scheduled", whole=True),
    Column.of("total", whole=True),
    Column.of("size_in_bytes", "bytes", whole=True),
)
class SortKey(str, enum.Enum):
    """What ``--sort`` orders by: the name, or a count (largest first)."""

    NAME = "name"
    ACTIVE = "active"
    DEAD_LETTER = "dead-letter"
    SCHEDULED = "scheduled"
    TOTAL = "total"
    SIZE = "size"


#: Below this many columns the table leaves out total and bytes (but the one --sort orders
#: by), so that at 80 a name like ``events/Subscriptions/audit`` is not folded.
_WIDE = 100
_NARROW = ("kind", "name", "active", "dead-letter", "scheduled")


def entity_columns(width: int, sort: SortKey = SortKey.NAME) -> tuple[Column, ...]:
    """The entity table's columns for a terminal ``width`` columns wide."""
    if width >= _WIDE:
        return ENTITY_COLUMNS
    shown = {*_NARROW, {SortKey.TOTAL: "total", SortKey.SIZE: "bytes"}.get(sort)}
    return tuple(column for column in ENTITY_COLUMNS if column.header in shown)


#: ``--http-port``: every command that reaches the administration API takes it.
HttpPort = Annotated[
    int | None,
    typer.Option("--http-port", min=1, max=65535, envvar="EMULATOR_HTTP_PORT",
                 help=f"The emulator's HTTP port (default {EMULATOR_HTTP_PORT}); used "
                 "with an emulator connection string only.", show_default=False),
]

_SORT_FIELDS = {SortKey.ACTIVE: "active", SortKey.DEAD_LETTER: "dead_letter",
                SortKey.SCHEDULED: "scheduled", SortKey.TOTAL: "total",
                SortKey.SIZE: "size_in_bytes"}


def admin_for(state: CliState, http_port: int | None, command: str = "sbmgmt entities") -> Any:
    """The administration client of the namespace the global options name (``command``,
    in the messages, is what needs it)."""
    if state.emulator:
        raise UsageProblem(f"{command} works on an existing namespace: pass "
                           "--connection-string (an emulator's, or the fake's) or --namespace")
    if not state.connection_string and not state.namespace:
        raise UsageProblem("no namespace: pass --connection-string (or set "
                           "SERVICEBUS_CONNECTION_STRING) or --namespace with Entra ID")
    credential = None
    if state.connection_string:
        if state.connection_settings().use_development_emulator:
            state.scrub.add(admin_connection_string(state.connection_string,
                                                    http_port or EMULATOR_HTTP_PORT))
    else:
        from ._state import _default_credential

        credential = _default_credential()
    try:
        return admin_client(connection_string=state.connection_string,
                            namespace=state.namespace, credential=credential,
                            http_port=http_port, timeout=state.timeout)
    except ImportError as missing:
        raise UsageProblem(f"{command} uses azure-servicebus's administration client: "
                           f"{ADMIN_EXTRA}") from missing


#: The name sbmgmt/cli/_find.py imports (``admin_for`` with the ``sbmgmt entities`` wording).
_client = admin_for


def entity_records(client: Any) -> list[Record]:
    """Every queue, topic and subscription with its counts (a topic's subscriptions after it)."""
    return [counts.as_record() for counts in list_entities(client)]


def _selected(records: list[Record], kinds: list[EntityKind] | None, match: str | None,
              dead_lettered: bool, sort: SortKey) -> list[Record]:
    wanted = {kind.value for kind in kinds} if kinds else None
    chosen = [r for r in records
              if (wanted is None or r["kind"] in wanted)
              and (match is None or fnmatch.fnmatchcase(r["name"].lower(), match.lower()))
              and (not dead_lettered or (r["dead_letter"] or 0) > 0)]
    if sort is SortKey.NAME:
        return sorted(chosen, key=lambda r: str(r["name"]).lower())
    field = _SORT_FIELDS[sort]
    return sorted(chosen, key=lambda r: (-(r[field] or 0), str(r["name"]).lower()))


def _show(state: CliState, client: Any, entity: str) -> None:
    """One entity's properties and runtime counts, by its path: a JSON object (or NDJSON
    line), or a table of property and value as people read it."""
    found = entity_properties(client, entity)
    record = found.counts.as_record()
    if state.output is OutputFormat.TABLE:
        rows = [{"property": key, "value": value} for key, value in record.items()]
        rows += [{"property": key, "value": _readable(value)}
                 for key, value in found.properties.items()]
        state.renderer.records(rows, (Column.of("property", whole=True), Column.of("value")))
        return
    for key, value in found.properties.items():
        record[key] = json_value(value)
    state.renderer.record(record, ENTITY_COLUMNS)


#: ``--interval``'s default: the explorer's (seconds).
_INTERVAL = DEFAULT_INTERVAL

#: .NET's TimeSpan.MaxValue in seconds: what the service sends for "never" (an entity that is
#: never deleted when idle, messages that never expire).
_NEVER_SECONDS = 922_337_203_685


def _readable(value: Any) -> Any:
    """A property's value in the table: durations in seconds or ``never``, times as every
    other table shows them (``2026-11-26 09:30:00 UTC``)."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        return "never" if seconds >= _NEVER_SECONDS else f"{seconds:g} s"
    if isinstance(value, datetime):
        return f"{table_time(iso_time(value))} UTC"
    return json_value(value)


def entities(
    ctx: typer.Context,
    entity: Annotated[
        str | None,
        typer.Argument(help="QUEUE, TOPIC or TOPIC/Subscriptions/SUB (or TOPIC/SUB): show "
                       "its properties instead of the list.", show_default=False),
    ] = None,
    kind: Annotated[
        list[EntityKind] | None,
        typer.Option("--kind", "-k", case_sensitive=False,
                     help="Only this kind (repeatable).", show_default=False),
    ] = None,
    match: Annotated[
        str | None,
        typer.Option("--match", "-m", help="Only names matching this glob (case-insensitive, "
                     "e.g. 'orders*').", show_default=False),
    ] = None,
    dead_lettered: Annotated[
        bool, typer.Option("--dead-lettered", help="Only entities with dead-lettered "
                           "messages.")
    ] = False,
    sort: Annotated[
        SortKey, typer.Option("--sort", case_sensitive=False,
                              help="Order by name, or by a count (largest first).")
    ] = SortKey.NAME,
    http_port: HttpPort = None,
    watching: Annotated[
        bool, typer.Option("--watch", "-w", help="Sample the counts again and again: a table "
                           "that redraws in place, with the change since the start and the "
                           "rates in and out (-o ndjson: a line per entity and sample). "
                           "Ctrl-C ends it.")
    ] = False,
    interval: Annotated[
        float, typer.Option("--interval", min=0.1, help="Seconds between two samples of "
                            "--watch.")
    ] = _INTERVAL,
    samples: Annotated[
        int | None, typer.Option("--samples", min=1, help="End --watch after this many "
                                 "samples (default: at Ctrl-C).", show_default=False)
    ] = None,
) -> None:
    """List queues, topics and subscriptions with their counts, or one entity's properties.

    The counts are of active, dead-letter and scheduled messages; both come from the
    administration API (the admin extra).

    Also: sbmgmt entities create | update | delete (see their --help).

    Example: sbmgmt entities --dead-lettered --sort dead-letter

    Example: sbmgmt entities --watch --interval 1 --samples 3
    """
    state = CliState.of(ctx)
    if not watching and (samples is not None or interval != _INTERVAL):
        raise UsageProblem("--samples and --interval go with --watch")
    if watching and entity is not None:
        raise UsageProblem("--watch watches the list: choose its entities with --match, "
                           "--kind or --dead-lettered, not by naming one")
    client = admin_for(state, http_port)
    with port_hinted(state, http_port), client:
        if watching:
            watch(state, client, lambda found: _selected(found, kind, match, dead_lettered, sort),
                  interval=interval, samples=samples)
            return
        if entity is not None:
            _show(state, client, entity)
            return
        records = _selected(entity_records(client), kind, match, dead_lettered, sort)
    state.renderer.records(records, entity_columns(Console().width, sort), empty="no entities")


@contextlib.contextmanager
def port_hinted(state: CliState, http_port: int | None) -> Iterator[None]:
    """An emulator's administration API that did not answer, said with the port tried."""
    try:
        yield
    except TransportError as error:
        raise _with_port_hint(error, state, http_port) from None


def _with_port_hint(error: TransportError, state: CliState,
                    http_port: int | None) -> TransportError:
    """An emulator's administration API that did not answer: say which port was tried and
    how to give another (a fake on a free port prints its HTTP port second)."""
    emulator = bool(state.connection_string) and state.connection_settings(
        ).use_development_emulator
    if not emulator or "--http-port" in str(error):
        return error
    tried = (f"the default {EMULATOR_HTTP_PORT}, the emulator's" if http_port is None
             else f"{http_port}, as given")
    return TransportError(
        f"{error} (the HTTP port tried was {tried}: give the administration API's port with "
        "--http-port N or EMULATOR_HTTP_PORT=N; `python -m fakes` prints it in its second "
        "line, http://localhost:N)")


class _ListingGroup(HelpfulGroup):
    """A group that runs ``list`` when its first word names none of its commands
    (``sbmgmt entities``, ``sbmgmt entities orders``, ``sbmgmt entities --kind queue``), so
    the listing keeps its words while ``create``, ``update`` and ``delete`` join it."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands:
            args = ["list", *args]
        result: list[str] = super().parse_args(ctx, args)
        return result


#: ``sbmgmt entities``: the listing, and (:mod:`._entity_admin`) create, update, delete.
entities_group = typer.Typer(name="entities", cls=_ListingGroup, pretty_exceptions_enable=False,
                             help="List queues, topics and subscriptions with their counts "
                             "(sbmgmt entities [ENTITY] runs entities list), or create, "
                             "update and delete one.")


def register(app: typer.Typer) -> None:
    """Add ``entities`` (its ``list``) to the root app."""
    command(entities_group, "list")(entities)
    app.add_typer(entities_group)
