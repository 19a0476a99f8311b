"""Output: JSON-safe records, and printing them as a table, JSON or NDJSON.

Records are plain dicts with stable field names (docs/cli.md lists them): binary
values as base64, datetimes as ISO 8601 UTC with milliseconds and ``Z``, UUIDs as
strings. Tables are for people; ``json`` and ``ndjson`` are for scripts.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import json
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from proton import Array, Described, timestamp
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from .._wording import utc_time
from ..amqp.values import datetime_from_ms
from ..message import ReceivedMessage, id_text
from ..rules import CorrelationFilter, FalseFilter, RuleDescription, SqlFilter, TrueFilter

__all__ = [
    "DEAD_LETTER_COLUMNS",
    "LOCKED_COLUMNS",
    "LOCK_TOKEN",
    "MESSAGE_COLUMNS",
    "MESSAGE_ID",
    "RULE_COLUMNS",
    "SEQUENCE",
    "Column",
    "OutputFormat",
    "Record",
    "Renderer",
    "base64_text",
    "filter_summary",
    "iso_time",
    "json_value",
    "message_record",
    "outcome",
    "rule_record",
    "table",
    "table_time",
    "utf8_text",
]

Record = dict[str, Any]
_PREVIEW = 60


class OutputFormat(str, enum.Enum):
    """How results are printed."""

    TABLE = "table"
    JSON = "json"
    NDJSON = "ndjson"


def iso_time(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and a ``Z`` (naive datetimes are taken as UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    text = value.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def base64_text(value: bytes) -> str:
    """Bytes as base64 text."""
    return base64.b64encode(value).decode("ascii")


def json_value(value: Any) -> Any:
    """Any decoded AMQP or Python value as something :func:`json.dumps` takes."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, timestamp):
        return iso_time(datetime_from_ms(int(value)))
    if isinstance(value, enum.Enum):
        return json_value(value.value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64_text(bytes(value))
    if isinstance(value, datetime):
        return iso_time(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (uuid.UUID, Decimal)):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, Array):
        return [json_value(item) for item in value.elements]
    if isinstance(value, Described):
        return {"descriptor": json_value(value.descriptor), "value": json_value(value.value)}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return str(value)


def utf8_text(value: bytes) -> str | None:
    """Bytes as text when they are valid UTF-8, else None."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def message_record(message: ReceivedMessage) -> Record:
    """A peeked or received message as a record (see docs/cli.md, "message")."""
    is_data = message.body_type == "data"
    body = message.body_bytes() if is_data else None
    return {
        "sequence_number": message.sequence_number,
        # (an id of another type than string as its text: sbmgmt.message.id_text)
        "message_id": None if message.message_id is None else id_text(message.message_id),
        "session_id": message.session_id,
        "correlation_id": (None if message.correlation_id is None
                           else id_text(message.correlation_id)),
        "subject": message.subject,
        "content_type": message.content_type,
        "to": message.to,
        "reply_to": message.reply_to,
        "partition_key": message.partition_key,
        "state": message.state.name.lower(),
        "enqueued_time": iso_time(message.enqueued_time),
        "scheduled_enqueue_time": iso_time(message.scheduled_enqueue_time),
        "locked_until": iso_time(message.locked_until),
        "lock_token": None if message.lock_token is None else str(message.lock_token),
        "delivery_count": message.delivery_count,
        "time_to_live": json_value(message.time_to_live),
        "dead_letter_reason": message.dead_letter_reason,
        "dead_letter_description": message.dead_letter_description,
        "dead_letter_source": message.dead_letter_source,
        "application_properties": json_value(message.application_properties),
        "annotations": json_value(message.annotations),
        "body_type": message.body_type,
        "body_base64": None if body is None else base64_text(body),
        "body_text": None if body is None else utf8_text(body),
        "body_value": None if is_data else json_value(message.body),
    }


def _filter_record(rule_filter: Any) -> Record:
    if isinstance(rule_filter, SqlFilter):
        return {"type": "sql", "expression": rule_filter.expression}
    if isinstance(rule_filter, CorrelationFilter):
        fields = rule_filter.model_dump(exclude={"kind", "properties"}, exclude_none=True)
        return {"type": "correlation", **fields,
                "properties": json_value(rule_filter.properties)}
    if isinstance(rule_filter, TrueFilter):
        return {"type": "true"}
    if isinstance(rule_filter, FalseFilter):
        return {"type": "false"}
    raise TypeError(f"unknown rule filter {type(rule_filter).__name__}")


def rule_record(rule: RuleDescription) -> Record:
    """A subscription rule as a record (see docs/cli.md, "rule")."""
    return {
        "name": rule.name,
        "filter": _filter_record(rule.filter),
        "action": None if rule.action is None else rule.action.expression,
        "created_at": iso_time(rule.created_at),
    }


def _body_preview(record: Record) -> str:
    text = record.get("body_text")
    if text is None:
        if record.get("body_value") is not None:
            text = json.dumps(record["body_value"])
        elif record.get("body_base64") is not None:
            size = len(base64.b64decode(record["body_base64"]))
            return f"<{size} bytes>"
        else:
            return ""
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def filter_summary(record: Record) -> str:
    """A rule's filter in one short line, for tables."""
    rule_filter = record["filter"]
    kind = rule_filter["type"]
    if kind == "sql":
        return str(rule_filter["expression"])
    if kind == "correlation":
        pairs = [f"{k}={v}" for k, v in rule_filter.items() if k not in ("type", "properties")]
        pairs += [f"{k}={v}" for k, v in rule_filter["properties"].items()]
        return "correlation: " + ", ".join(pairs)
    return str(kind).upper()


def table_time(value: Any) -> str | None:
    """An ISO 8601 record time as people read it in a table: ``2026-11-26 09:30:00``
    (UTC, which the column header says; to the second)."""
    if not isinstance(value, str):
        return None
    return utc_time(datetime.fromisoformat(value))


@dataclass(frozen=True)
class Column:
    """A table column: a header, and the cell text of a record.

    No cell is cut short with "…": a long value folds onto the next lines. ``whole``: a
    value the user copies into the next command (a lock token, a sequence number), a time
    or a word: not even folded; the other columns give way. ``whole_up_to``: whole when
    every value is at most this long (a UUID message id), folded when one is longer.
    ``optional``: left out when no record has a value for it (a peek without sessions has
    no session column). ``from_width``: shown only on a terminal at least this wide (at 80
    columns a whole UUID leaves no room for everything: what matters least gives way).
    """

    header: str
    cell: Callable[[Record], Any]
    whole: bool = False
    optional: bool = False
    whole_up_to: int = 0
    from_width: int = 0

    @classmethod
    def of(cls, key: str, header: str | None = None, *, whole: bool = False,
           optional: bool = False, whole_up_to: int = 0, from_width: int = 0) -> Column:
        """A column that shows one field of the record."""
        return cls(header or key.replace("_", " "), lambda record: record.get(key), whole,
                   optional, whole_up_to, from_width)

    @classmethod
    def time(cls, key: str, header: str | None = None, *, from_width: int = 0) -> Column:
        """A column that shows a time field (ISO 8601 in the record) readably, in UTC."""
        title = (header or key.replace("_", " ")) + " (UTC)"
        return cls(title, lambda record: table_time(record.get(key)), whole=True,
                   from_width=from_width)


SEQUENCE = Column.of("sequence_number", "seq", whole=True)
LOCK_TOKEN = Column.of("lock_token", whole=True)

#: A message id as long as a UUID's text (36) or a little longer is never folded.
_ID_WHOLE = 40
MESSAGE_ID = Column.of("message_id", optional=True, whole_up_to=_ID_WHOLE)

#: peek: what is there; a peeked message holds no lock, so there is no lock-token column.
#: Below 100 columns the time gives way to the whole message id.
MESSAGE_COLUMNS = (
    SEQUENCE,
    Column.time("enqueued_time", "enqueued", from_width=100),
    Column.of("state", whole=True),
    MESSAGE_ID,
    Column.of("session_id", "session", optional=True),
    Column.of("subject", optional=True),
    Column("body", _body_preview),
)

#: peek --dead-letter: why each message is there comes first; the message id from 100
#: columns, the time from 120, the body from 140 (the reason and description keep the room).
DEAD_LETTER_COLUMNS = (
    SEQUENCE,
    Column.time("enqueued_time", "enqueued", from_width=120),
    Column.of("message_id", optional=True, whole_up_to=_ID_WHOLE, from_width=100),
    Column.of("dead_letter_reason", "reason"),
    Column.of("dead_letter_description", "description"),
    Column("body", _body_preview, from_width=140),
)

#: deferred receive: the lock token and its expiry, to settle or renew before it passes.
LOCKED_COLUMNS = (
    SEQUENCE,
    LOCK_TOKEN,
    Column.time("locked_until"),
    Column("body", _body_preview),
)

RULE_COLUMNS = (
    Column.of("name", whole=True),
    Column("filter", filter_summary),
    Column.of("action"),
    Column.time("created_at", "created"),
)


def outcome(dry_run: bool, would: str, did: str) -> str:
    """The sentence after a destructive command: what it did, or with ``--dry-run``
    what it would have done."""
    return f"dry run: would {would} (nothing was sent)" if dry_run else did


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def table(records: Sequence[Record], columns: Sequence[Column],
          width: int | None = None) -> Table:
    """The records as a table for a terminal ``width`` columns wide (None: every column);
    a ``whole`` column is as wide as its longest value."""
    columns = [c for c in columns if width is None or width >= c.from_width]
    cells = {column: [_cell(column.cell(record)) for record in records] for column in columns}
    shown = [column for column in columns if not column.optional or any(cells[column])]
    result = Table()
    for column in shown:
        whole = column.whole or 0 < max(map(len, cells[column]), default=0) <= (
            column.whole_up_to)
        if whole:  # the header is a word too: never cut (the demo's "dead-l…")
            widest = max(len(column.header), *map(len, cells[column]))
            result.add_column(column.header, no_wrap=True, overflow="fold", min_width=widest)
        else:
            result.add_column(column.header, overflow="fold")
    for row in zip(*(cells[column] for column in shown), strict=True):
        result.add_row(*row)
    return result


class Renderer:
    """Prints records to stdout in the chosen format; progress goes to stderr on a terminal."""

    def __init__(self, output: OutputFormat) -> None:
        self.output = output

    def _write(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def records(
        self, records: Iterable[Record], columns: Sequence[Column], *, empty: str = "none"
    ) -> None:
        """Print a list of records; NDJSON lines go out as the records arrive.

        A table output of no records prints ``empty`` (what there is none of, in words)
        instead of an empty table; JSON prints ``[]`` and NDJSON nothing.
        """
        if self.output is OutputFormat.NDJSON:
            for record in records:
                self._write(json.dumps(record))
            return
        collected = list(records)
        if self.output is OutputFormat.JSON:
            self._write(json.dumps(collected, indent=2))
            return
        if not collected:
            self._write(empty)
            return
        console = Console()
        console.print(table(collected, columns, console.width))

    def done(self, sentence: str, records: list[Record] | Record) -> None:
        """What a command did: one sentence for people (``table``), the records (a list,
        or one object) for scripts."""
        if self.output is OutputFormat.TABLE:
            self._write(sentence)
        elif isinstance(records, dict):
            self.record(records, ())
        else:
            self.records(records, ())

    def record(self, record: Record, columns: Sequence[Column]) -> None:
        """Print one record: a JSON object, one NDJSON line, or a one-row table."""
        if self.output is OutputFormat.JSON:
            self._write(json.dumps(record, indent=2))
        else:
            self.records([record], columns)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A progress bar on stderr when it is a terminal; yields ``advance(n)``: n more
        done."""
        with self._bar(description, total) as (bar, task):
            yield lambda count: bar.advance(task, count)

    @contextlib.contextmanager
    def progress_done(self, description: str, total: int | None,
                      ) -> Iterator[Callable[[int], None]]:
        """The same bar for an action that reports how many it has done so far (the
        administrator's actions do); yields ``reached(done)``."""
        with self._bar(description, total) as (bar, task):
            yield lambda done: bar.update(task, completed=done)

    @contextlib.contextmanager
    def counting(self, description: str) -> Iterator[Callable[[int], None]]:
        """A turning spinner and a running count on stderr when it is a terminal, for a
        step whose total is not known yet (a purge counting what it would delete); yields
        ``reached(done)``."""
        columns = (SpinnerColumn(), TextColumn("{task.description}: {task.completed:,}"),
                   TimeElapsedColumn())
        with self._bar(description, None, columns) as (bar, task):
            yield lambda done: bar.update(task, completed=done)

    @contextlib.contextmanager
    def _bar(self, description: str, total: int | None,
             columns: tuple[ProgressColumn, ...] = ()) -> Iterator[tuple[Progress, TaskID]]:
        """The bar (or ``columns``): on stderr, and only when stderr is a terminal.

        stdout is never touched: records written while the bar shows go where stdout
        goes (rich's default would send them to the bar's console, stderr). NDJSON
        streamed to a terminal is its own progress, and a bar would tear its lines:
        none is shown then.
        """
        console = Console(stderr=True)
        streams_to_terminal = self.output is OutputFormat.NDJSON and sys.stdout.isatty()
        with Progress(
            *(columns or (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn())), console=console, transient=True,
            redirect_stdout=False, redirect_stderr=False,
            disable=not console.is_terminal or streams_to_terminal,
        ) as bar:
            yield bar, bar.add_task(description, total=total)
