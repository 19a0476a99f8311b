"""Export: messages to a file and back, one JSON object a line, with everything they carry.

The format (version 1, ``export_schema.json`` beside this module; docs/export-format.md):
each line is one message, an object with the message's sections as AMQP 1.0 part 3 §3.2
names them: ``header``, ``delivery_annotations``, ``message_annotations``, ``properties``,
``application_properties``, ``body`` and ``footer``, and ``broker``: what the service
added to it (sequence number, enqueued time, state, lock, dead-letter source). Values keep
their AMQP types: a string, a boolean and null are themselves, anything else is an object
of one key, the type's name (``{"int": 5}``, ``{"symbol": "x"}``, ``{"binary": "<base64>"}``,
``{"timestamp": <ms since the epoch>}``, ``{"list": [...]}``, ``{"map": [[key, value], ...]}``
...: [value_to_json][sbmgmt.actions.export.value_to_json]). A data body is the exact bytes
of each data section, base64.

[write_messages][sbmgmt.actions.export.write_messages] writes
([message_to_json][sbmgmt.actions.export.message_to_json], one message);
[read_messages][sbmgmt.actions.export.read_messages] reads back what it wrote as messages
ready to send ([message_from_json][sbmgmt.actions.export.message_from_json]):
[Message][sbmgmt.Message]s that encode the same sections, without what the broker owns (the
``broker`` object, its annotations, the header's delivery count).

[Exporter][sbmgmt.actions.export.Exporter] is the one export loop (peeked messages to
lines, counted, until a ``max_count``, the end or a cancel):
[export_entity][sbmgmt.actions.export.export_entity] peeks an entity (or its dead-letter
queue) through it into a file, and the deferred messages' export and the explorer's
download run through it too. Peeking changes nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import IO, Any

from proton import timestamp, ulong

from ..amqp.values import ms_from_datetime
from ..client import EntityClient
from ..errors import ExportFormatError, ProtocolError
from ..message import Message, ReceivedMessage
from ._export_values import (
    ULONG_KEY,
    _b64,
    _bool_from_json,
    _bytes_from_json,
    _int_from_json,
    _text_from_json,
    _typed_map,
    _typed_map_from,
    value_from_json,
    value_to_json,
)
from .contract import ActionReport, CancelToken, OnProgress, Outcome, Progress, is_cancelled

__all__ = [
    "BROKER_ANNOTATIONS",
    "FORMAT_VERSION",
    "ULONG_KEY",
    "ExportReport",
    "Exporter",
    "export_entity",
    "export_schema",
    "message_from_json",
    "message_to_json",
    "read_messages",
    "value_from_json",
    "value_to_json",
    "write_messages",
]

#: The version of the format this module writes and reads (each line's ``version``).
FORMAT_VERSION = 1

#: The message annotations the broker sets (written under ``broker``, never sent back).
BROKER_ANNOTATIONS = frozenset({
    "x-opt-sequence-number", "x-opt-enqueued-time", "x-opt-locked-until",
    "x-opt-message-state", "x-opt-deadletter-source", "x-opt-enqueue-sequence-number",
    "x-opt-lock-token",
})

_MESSAGE_STATES = ("active", "deferred", "scheduled")


# --- times ----------------------------------------------------------------------------

def _time_to_json(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _time_from_json(value: Any) -> datetime | None:
    if value is None:
        return None
    text = _text_from_json(value)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


# --- messages ---------------------------------------------------------------------------

#: The properties section's fields: (name in the format, the model's field, kind).
_PROPERTIES: tuple[tuple[str, str, str], ...] = (
    ("message_id", "message_id", "id"), ("user_id", "user_id", "binary"),
    ("to", "to", "text"), ("subject", "subject", "text"), ("reply_to", "reply_to", "text"),
    ("correlation_id", "correlation_id", "id"), ("content_type", "content_type", "text"),
    ("content_encoding", "content_encoding", "text"),
    ("absolute_expiry_time", "absolute_expiry_time", "time"),
    ("creation_time", "creation_time", "time"), ("group_id", "session_id", "text"),
    ("group_sequence", "group_sequence", "int"),
    ("reply_to_group_id", "reply_to_session_id", "text"),
)
#: The header's fields: (name in the format, the model's field, kind); the delivery count is
#: the broker's.
_HEADER: tuple[tuple[str, str, str], ...] = (
    ("durable", "durable", "bool"), ("priority", "priority", "int"),
    ("ttl", "time_to_live", "ms"), ("first_acquirer", "first_acquirer", "bool"),
    ("delivery_count", "delivery_count", "int"),
)

def _id_to_json(value: Any) -> Any:
    return value_to_json(ulong(value) if type(value) is int else value)  # an int id: a ulong


_TO_JSON: dict[str, Callable[[Any], Any]] = {
    "id": _id_to_json, "binary": _b64, "text": str, "time": _time_to_json, "int": int,
    "bool": bool, "ms": lambda v: v // timedelta(milliseconds=1),
}


def _id_from_json(value: Any) -> Any:
    found = value_from_json(value)
    if type(found) is ulong:
        return int(found)  # the model's int id: a ulong
    if not isinstance(found, (str, uuid.UUID, bytes)):
        raise ValueError(f"{json.dumps(value)[:40]} is none of ulong, uuid, binary, string")
    return found


_FIELD_FROM_JSON: dict[str, Callable[[Any], Any]] = {
    "id": _id_from_json, "binary": _bytes_from_json, "text": _text_from_json,
    "time": _time_from_json, "int": _int_from_json, "bool": _bool_from_json,
    "ms": lambda v: timedelta(milliseconds=_int_from_json(v)),
}


def _fields_to_json(message: Message,
                    table: tuple[tuple[str, str, str], ...]) -> dict[str, Any]:
    out = {}
    for name, field, kind in table:
        value = getattr(message, field)
        if value is not None:
            out[name] = _TO_JSON[kind](value)
    return out


def _body_to_json(message: Message) -> dict[str, Any]:
    sections = message.body_sections()
    if message.body_type == "data":
        return {"data": [_b64(part) for part in sections]}
    if message.body_type == "sequence":
        return {"sequence": [[value_to_json(item) for item in items] for items in sections]}
    return {"value": value_to_json(message.body)}


def message_to_json(message: Message) -> dict[str, Any]:
    """One message as a line of the format (an object, before ``json.dumps``).

    Args:
        message: The message (a [ReceivedMessage][sbmgmt.ReceivedMessage] also has its
            ``broker`` object: sequence number, enqueued time, state...).

    Returns:
        The object: ``version``, then each section the message has.

    Raises:
        TypeError: A value of the message has no AMQP type.
    """
    annotations = {**message.annotations, **_typed_annotations(message)}
    out: dict[str, Any] = {"version": FORMAT_VERSION}
    if isinstance(message, ReceivedMessage):
        out["broker"] = _broker(message)
    header = _fields_to_json(message, _HEADER)
    if header:
        out["header"] = header
    if message.delivery_annotations:
        out["delivery_annotations"] = _typed_map(message.delivery_annotations)
    kept = {k: v for k, v in annotations.items() if k not in BROKER_ANNOTATIONS}
    if kept:
        out["message_annotations"] = _typed_map(kept)
    properties = _fields_to_json(message, _PROPERTIES)
    if properties:
        out["properties"] = properties
    if message.application_properties:
        out["application_properties"] = _typed_map(message.application_properties)
    out["body"] = _body_to_json(message)
    if message.footer:
        out["footer"] = _typed_map(message.footer)
    return out


def _typed_annotations(message: Message) -> dict[str, Any]:
    """The annotations a sender may set that are fields of the model, as on the wire."""
    out: dict[str, Any] = {}
    if message.partition_key is not None:
        out["x-opt-partition-key"] = message.partition_key
    if message.via_partition_key is not None:
        out["x-opt-via-partition-key"] = message.via_partition_key
    if message.scheduled_enqueue_time is not None:
        out["x-opt-scheduled-enqueue-time"] = timestamp(
            ms_from_datetime(message.scheduled_enqueue_time))
    return out


def _broker(message: ReceivedMessage) -> dict[str, Any]:
    broker: dict[str, Any] = {"sequence_number": message.sequence_number,
                              "state": _MESSAGE_STATES[int(message.state)]}
    for name in ("enqueued_time", "locked_until"):
        value = getattr(message, name)
        if value is not None:
            broker[name] = _time_to_json(value)
    if message.dead_letter_source is not None:
        broker["dead_letter_source"] = message.dead_letter_source
    return broker


def message_from_json(record: Any) -> Message:
    """The message a line of the format describes, ready to send: a [Message][sbmgmt.Message]
    with the line's sections, without what the broker owns (``broker``, the broker's
    annotations, the header's delivery count).

    Args:
        record: The line's object (after ``json.loads``).

    Returns:
        The message.

    Raises:
        ValueError: The object is not a message of the format (its version, a field of the
            wrong kind, an unknown type...); the text says where.
        TypeError: A value has no AMQP encoding.
        sbmgmt.errors.ProtocolError: A value is out of its AMQP type's range.
    """
    if not isinstance(record, dict):
        raise ValueError("a line is a JSON object")
    version = record.get("version")
    if version != FORMAT_VERSION:
        raise ValueError(f"version {version!r}: this sbmgmt reads version {FORMAT_VERSION}")
    fields: dict[str, Any] = {}
    for section, table in (("header", _HEADER), ("properties", _PROPERTIES)):
        values = record.get(section) or {}
        if not isinstance(values, dict):
            raise ValueError(f"{section} is not an object")
        known = {name for name, _, _ in table}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{section}: unknown field {unknown[0]!r}")
        for name, field, kind in table:
            if values.get(name) is not None and name != "delivery_count":
                try:
                    fields[field] = _FIELD_FROM_JSON[kind](values[name])
                except ValueError as exc:
                    raise ValueError(f"{section}.{name}: {exc}") from None
    fields["delivery_annotations"] = _typed_map_from(
        record.get("delivery_annotations"), "delivery_annotations")
    annotations = _typed_map_from(record.get("message_annotations"), "message_annotations")
    fields["annotations"] = {k: v for k, v in annotations.items()
                             if k not in BROKER_ANNOTATIONS}
    fields["application_properties"] = _typed_map_from(
        record.get("application_properties"), "application_properties")
    fields["footer"] = _typed_map_from(record.get("footer"), "footer")
    fields.update(_body_from_json(record.get("body")))
    # Checked by the model (the maps apart: a ulong key is no str), then through its bytes:
    # the annotations that are fields of the model (partition keys, scheduled enqueue
    # time) become those fields, as in a peek.
    maps = {name: fields.pop(name) for name in _MAPS}
    return Message.from_bytes(Message(**fields).model_copy(update=maps).to_bytes())


_MAPS = ("delivery_annotations", "annotations", "footer")


def _body_from_json(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or len(body) != 1:
        raise ValueError("body is an object of one key: data, sequence or value")
    ((kind, sections),) = body.items()
    try:
        if kind == "data" and isinstance(sections, list):  # none: a message without a body
            parts = [_bytes_from_json(part) for part in sections]
            return {"body": parts[0] if len(parts) == 1 else parts, "body_type": "data"}
        if kind == "sequence" and isinstance(sections, list) and sections and all(
                isinstance(items, list) for items in sections):
            lists = [[value_from_json(item) for item in items] for items in sections]
            return {"body": lists[0] if len(lists) == 1 else tuple(lists),
                    "body_type": "sequence"}
        if kind == "value":
            return {"body": value_from_json(sections), "body_type": "value"}
    except ValueError as exc:
        raise ValueError(f"body.{kind}: {exc}") from None
    raise ValueError(f"body: {kind!r} is not data, sequence or value with its sections")


# --- files ------------------------------------------------------------------------------

def write_messages(messages: Iterable[Message], out: IO[str]) -> int:
    """Write messages to a text file, one line each
    ([message_to_json][sbmgmt.actions.export.message_to_json]).

    Args:
        messages: The messages, written in their order.
        out: A text file open for writing.

    Returns:
        How many messages were written.

    Raises:
        TypeError: A value of a message has no AMQP type.
    """
    count = 0
    for message in messages:
        out.write(_line(message))
        count += 1
    return count


def _line(message: Message) -> str:
    """One message as a line of the format, its newline included."""
    return json.dumps(message_to_json(message), ensure_ascii=False, separators=(",", ":")) + "\n"


def read_messages(lines: Iterable[str]) -> Iterator[Message]:
    """The messages of an export file, in its order, ready to send
    ([message_from_json][sbmgmt.actions.export.message_from_json]).

    Blank lines are skipped.

    Args:
        lines: The file's lines (a text file open for reading).

    Yields:
        Each line's message.

    Raises:
        sbmgmt.errors.ExportFormatError: A line is not JSON or not a message of the format;
            its ``line`` says which (counted from 1).
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExportFormatError(f"line {number}: not JSON ({exc.msg})", line=number) from None
        try:
            yield message_from_json(record)
        except (ValueError, TypeError, ProtocolError) as exc:
            raise ExportFormatError(f"line {number}: {exc}", line=number) from None


def export_schema() -> dict[str, Any]:
    """The format's JSON Schema (``sbmgmt/actions/export_schema.json``).

    Returns:
        The schema, parsed.
    """
    text = resources.files(__package__).joinpath("export_schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


# --- the action: the one export loop ------------------------------------------------------

@dataclass(kw_only=True)
class ExportReport(ActionReport):
    """What an export did ([export_entity][sbmgmt.actions.export.export_entity],
    [export_deferred][sbmgmt.actions.deferred.export_deferred], the explorer's download).

    Attributes:
        exported: How many messages were written.
        first_sequence_number: The first one's sequence number (None if none).
        last_sequence_number: The last one's.
    """

    exported: int = 0
    first_sequence_number: int | None = None
    last_sequence_number: int | None = None

    def counts(self) -> dict[str, int]:
        """``{"exported": n}``."""
        return {"exported": self.exported}

    def details(self) -> dict[str, Any]:
        """The first and last sequence numbers written."""
        return {"first_sequence_number": self.first_sequence_number,
                "last_sequence_number": self.last_sequence_number}


class Exporter:
    """The one export loop: peeked messages in, lines of the format out, counted.

    Every export runs through it: [export_entity][sbmgmt.actions.export.export_entity], the
    deferred messages' ([export_deferred][sbmgmt.actions.deferred.export_deferred] and its
    asyncio twin) and the explorer's download (which sends ``lines`` in pieces as they
    come). Each
    message read is one step: the cancel token is checked first (set: the report says
    CANCELLED and nothing more is read), then ``keep`` chooses whether it is exported;
    an exported one is one line, counted, told to ``on_progress``, and the loop ends as
    soon as ``max_count`` are written (no message more is read).

    Args:
        entity: The path read, for the report.
        max_count: The most messages to write (1 or more); None: every one to the end.
        keep: Which messages read are exported (the others are read past); None: all.
        on_progress: Told after each message written: ``Progress(written, None,
            {"exported": written})``.
        cancel: Stops the export between two messages; what was written is counted.

    Raises:
        ValueError: ``max_count`` is not a positive int.
    """

    def __init__(self, entity: str, *, max_count: int | None = None,
                 keep: Callable[[ReceivedMessage], bool] | None = None,
                 on_progress: OnProgress | None = None,
                 cancel: CancelToken | None = None) -> None:
        if max_count is not None and (isinstance(max_count, bool)
                                      or not isinstance(max_count, int) or max_count < 1):
            raise ValueError(f"max_count must be a positive int, got {max_count!r}")
        self.report = ExportReport(entity=entity)
        self._max_count, self._keep = max_count, keep
        self._on_progress, self._cancel = on_progress, cancel

    def _step(self, message: ReceivedMessage) -> tuple[str | None, bool]:
        """One message read: its line (None: not exported), and whether to read on."""
        if is_cancelled(self._cancel):
            self.report.outcome = Outcome.CANCELLED
            return None, False
        if self._keep is not None and not self._keep(message):
            return None, True
        line = _line(message)
        report = self.report
        report.exported += 1
        if report.first_sequence_number is None:
            report.first_sequence_number = message.sequence_number
        report.last_sequence_number = message.sequence_number
        if self._on_progress is not None:
            self._on_progress(Progress(report.exported, None, report.counts()))
        return line, report.exported != self._max_count

    def lines(self, messages: Iterable[ReceivedMessage]) -> Iterator[str]:
        """The lines of the messages exported (each ends with a newline); ``report``
        counts them as they are taken."""
        for message in messages:
            line, more = self._step(message)
            if line is not None:
                yield line
            if not more:
                return

    def write(self, messages: Iterable[ReceivedMessage], out: IO[str]) -> ExportReport:
        """Write the messages exported to ``out``; the report."""
        for line in self.lines(messages):
            out.write(line)
        return self.report

    async def write_async(self, messages: AsyncIterable[ReceivedMessage],
                          out: IO[str]) -> ExportReport:
        """``write`` over an asyncio client's messages (``out`` is written on the event
        loop); the messages' iterator is closed at the end."""
        try:
            async for message in messages:
                line, more = self._step(message)
                if line is not None:
                    out.write(line)
                if not more:
                    break
        finally:
            close = getattr(messages, "aclose", None)
            if close is not None:
                await close()
        return self.report


def export_entity(
    entity: EntityClient, out: IO[str], *, from_sequence_number: int = 1,
    max_count: int | None = None, session_id: str | None = None,
    on_progress: OnProgress | None = None, cancel: CancelToken | None = None,
) -> ExportReport:
    """Peek an entity's messages into ``out`` (one line each, through the one export loop,
    [Exporter][sbmgmt.actions.export.Exporter]): nothing changes on the entity (peeking
    takes no lock).

    Args:
        entity: The entity's client (a queue, a subscription, or either's dead-letter queue:
            ``client.entity("q/$DeadLetterQueue")``).
        out: A text file open for writing.
        from_sequence_number: The first sequence number to export.
        max_count: The most messages to export (1 or more); None: every one to the end.
        session_id: Only this session's messages (a session-enabled entity).
        on_progress: Told after each message written (the count so far).
        cancel: Checked before each message; set, the export stops there (what was written
            stays written and is counted; the report's outcome is CANCELLED).

    Returns:
        What was exported.

    Raises:
        ValueError: ``max_count`` below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (the subclass says why); what
            was written before stays written.
    """
    exporter = Exporter(entity.path, max_count=max_count, on_progress=on_progress,
                        cancel=cancel)
    return exporter.write(entity.peek_all(from_sequence_number, session_id=session_id), out)
