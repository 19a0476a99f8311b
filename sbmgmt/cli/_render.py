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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..amqp.values import datetime_from_ms
from ..message import ReceivedMessage
from ..rules import CorrelationFilter, FalseFilter, RuleDescription, SqlFilter, TrueFilter

__all__ = [
    "MESSAGE_COLUMNS",
    "RULE_COLUMNS",
    "Column",
    "OutputFormat",
    "Record",
    "Renderer",
    "base64_text",
    "filter_summary",
    "iso_time",
    "json_value",
    "message_record",
    "rule_record",
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
        "message_id": message.message_id,
        "session_id": message.session_id,
        "correlation_id": message.correlation_id,
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


@dataclass(frozen=True)
class Column:
    """A table column: a header, and the cell text of a record."""

    header: str
    cell: Callable[[Record], Any]

    @classmethod
    def of(cls, key: str, header: str | None = None) -> Column:
        """A column that shows one field of the record."""
        return cls(header or key.replace("_", " "), lambda record: record.get(key))


MESSAGE_COLUMNS = (
    Column.of("sequence_number", "seq"),
    Column.of("message_id"),
    Column.of("enqueued_time", "enqueued"),
    Column.of("state"),
    Column.of("session_id", "session"),
    Column.of("subject"),
    Column.of("lock_token"),
    Column("body", _body_preview),
)

RULE_COLUMNS = (
    Column.of("name"),
    Column("filter", filter_summary),
    Column.of("action"),
    Column.of("created_at", "created"),
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


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
        table = Table(*(column.header for column in columns))
        for record in collected:
            table.add_row(*(_cell(column.cell(record)) for column in columns))
        Console().print(table)

    def record(self, record: Record, columns: Sequence[Column]) -> None:
        """Print one record: a JSON object, one NDJSON line, or a one-row table."""
        if self.output is OutputFormat.JSON:
            self._write(json.dumps(record, indent=2))
        else:
            self.records([record], columns)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A progress bar on stderr when it is a terminal; yields ``advance(n)``.

        stdout is never touched: records written while the bar shows go where stdout
        goes (rich's default would send them to the bar's console, stderr). NDJSON
        streamed to a terminal is its own progress, and a bar would tear its lines:
        none is shown then.
        """
        console = Console(stderr=True)
        streams_to_terminal = self.output is OutputFormat.NDJSON and sys.stdout.isatty()
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=console, transient=True,
            redirect_stdout=False, redirect_stderr=False,
            disable=not console.is_terminal or streams_to_terminal,
        ) as bar:
            task = bar.add_task(description, total=total)
            yield lambda count: bar.advance(task, count)
