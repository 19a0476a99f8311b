"""Export: messages to a file and back, one JSON object a line, with everything they carry.

The format (version 1, ``export_schema.json`` beside this module; docs/export-format.md):
each line is one message, an object with the message's sections as AMQP 1.0 part 3 §3.2
names them: ``header``, ``delivery_annotations``, ``message_annotations``, ``properties``,
``application_properties``, ``body`` and ``footer``, and ``broker``: what the service
added to it (sequence number, enqueued time, state, lock, dead-letter source). Values keep
their AMQP types: a string, a boolean and null are themselves, anything else is an object
of one key, the type's name (``{"int": 5}``, ``{"symbol": "x"}``, ``{"binary": "<base64>"}``,
``{"timestamp": <ms since the epoch>}``, ``{"list": [...]}``, ``{"map": [[key, value], ...]}``
...: :func:`value_to_json`). A data body is the exact bytes of each data section, base64.

:func:`write_messages` writes (:func:`message_to_json`, one message);
:func:`read_messages` reads back what it wrote as messages ready to send
(:func:`message_from_json`): [Message][sbmgmt.Message]s that encode the same sections,
without what the broker owns (the ``broker`` object, its annotations, the header's
delivery count). :func:`export_entity` peeks an entity (or its dead-letter queue) into a
file; peeking changes nothing.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import IO, Any

from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from ..amqp.values import ms_from_datetime
from ..client import EntityClient
from ..errors import ExportFormatError, ProtocolError
from ..message import Message, ReceivedMessage

__all__ = [
    "BROKER_ANNOTATIONS",
    "FORMAT_VERSION",
    "ExportReport",
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


# --- values ---------------------------------------------------------------------------

def _float_to_json(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _float_from_json(value: Any) -> float:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.lower().replace("infinity", "inf"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def _int_from_json(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not an integer")
    return value


def _bool_from_json(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not a boolean")
    return value


def _text_from_json(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a string")
    return value


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _bytes_from_json(value: Any) -> bytes:
    try:
        return base64.b64decode(_text_from_json(value), validate=True)
    except (ValueError, TypeError):
        raise ValueError(f"{value!r} is not base64") from None


#: The AMQP types that are a JSON number or text under their name: type -> (name, to JSON).
_SCALARS: dict[type, tuple[str, Callable[[Any], Any]]] = {
    ubyte: ("ubyte", int), ushort: ("ushort", int), uint: ("uint", int),
    ulong: ("ulong", int), byte: ("byte", int), short: ("short", int), int32: ("int", int),
    int: ("long", int), float32: ("float", _float_to_json), float: ("double", _float_to_json),
    timestamp: ("timestamp", int), decimal32: ("decimal32", int),
    decimal64: ("decimal64", int), decimal128: ("decimal128", lambda v: bytes(v).hex()),
    char: ("char", str), symbol: ("symbol", str), uuid.UUID: ("uuid", str),
    bytes: ("binary", _b64),
}

#: Name -> what makes the AMQP value of its JSON.
_FROM_JSON: dict[str, Callable[[Any], Any]] = {
    "ubyte": lambda v: ubyte(_int_from_json(v)),
    "ushort": lambda v: ushort(_int_from_json(v)),
    "uint": lambda v: uint(_int_from_json(v)),
    "ulong": lambda v: ulong(_int_from_json(v)),
    "byte": lambda v: byte(_int_from_json(v)),
    "short": lambda v: short(_int_from_json(v)),
    "int": lambda v: int32(_int_from_json(v)),
    "long": _int_from_json,
    "float": lambda v: float32(_float_from_json(v)),
    "double": _float_from_json,
    "timestamp": lambda v: timestamp(_int_from_json(v)),
    "decimal32": lambda v: decimal32(_int_from_json(v)),
    "decimal64": lambda v: decimal64(_int_from_json(v)),
    "decimal128": lambda v: decimal128(bytes.fromhex(_text_from_json(v))),
    "char": lambda v: char(_text_from_json(v)),
    "symbol": lambda v: symbol(_text_from_json(v)),
    "uuid": lambda v: uuid.UUID(_text_from_json(v)),
    "binary": _bytes_from_json,
}

#: An array's element type: proton's code <-> its name in the format.
_ARRAY_TYPES = {getattr(Data, name.upper()): name for name in (
    "bool", "ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long", "float",
    "double", "decimal32", "decimal64", "decimal128", "char", "timestamp", "uuid", "binary",
    "string", "symbol", "list", "map", "array", "described", "null")}
_ARRAY_CODES = {name: code for code, name in _ARRAY_TYPES.items()}
#: An array of a scalar type has its elements as that type's JSON, without the type's name.
_ELEMENT_TO_JSON: dict[str, Callable[[Any], Any]] = {
    **{name: convert for name, convert in _SCALARS.values()}, "string": str, "bool": bool}
_ELEMENT_FROM_JSON: dict[str, Callable[[Any], Any]] = {
    **_FROM_JSON, "string": _text_from_json, "bool": _bool_from_json}


def value_to_json(value: Any) -> Any:
    """An AMQP value (as sbmgmt decodes it) as the format's JSON value.

    A string, a boolean and null are themselves; every other value is an object of one key,
    its AMQP type's name: ``ubyte``, ``ushort``, ``uint``, ``ulong``, ``byte``, ``short``,
    ``int``, ``long`` (numbers), ``float``, ``double`` (numbers, or ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``), ``timestamp`` (milliseconds since the Unix epoch),
    ``decimal32`` / ``decimal64`` (their bits as an unsigned number), ``decimal128`` (hex),
    ``char``, ``symbol``, ``uuid`` (text), ``binary`` (base64), ``list`` (an array of
    values), ``map`` (an array of ``[key, value]`` pairs), ``array`` (``{"type": ...,
    "elements": [...]}``, each element as its type's JSON without the name when the type is
    not a compound, and ``"descriptor"`` if described) and ``described``
    (``{"descriptor": ..., "value": ...}``).

    Args:
        value: The value: proton's typed values, ``int`` (long), ``float`` (double),
            ``str``, ``bytes``, ``uuid.UUID``, ``bool``, ``None``, lists, dicts.

    Returns:
        Its JSON (what ``json.dumps`` takes).

    Raises:
        TypeError: The value has no AMQP type (a ``set``, a ``datetime``...).
    """
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return {scalar[0]: scalar[1](value)}
    if kind is list or kind is tuple:
        return {"list": [value_to_json(item) for item in value]}
    if kind is dict:
        return {"map": [[value_to_json(k), value_to_json(v)] for k, v in value.items()]}
    if kind is Array:
        name = _ARRAY_TYPES[value.type]
        element = _ELEMENT_TO_JSON.get(name, value_to_json)
        array: dict[str, Any] = {"type": name,
                                 "elements": [element(item) for item in value.elements]}
        if value.descriptor is not UNDESCRIBED:
            array["descriptor"] = value_to_json(value.descriptor)
        return {"array": array}
    if kind is Described:
        return {"described": {"descriptor": value_to_json(value.descriptor),
                              "value": value_to_json(value.value)}}
    if kind is bytearray or kind is memoryview:
        return {"binary": _b64(bytes(value))}
    raise TypeError(f"{kind.__name__} is not an AMQP value")


def value_from_json(value: Any) -> Any:
    """The AMQP value of the format's JSON value (:func:`value_to_json`'s inverse).

    Args:
        value: The JSON value.

    Returns:
        The AMQP value, of the type the JSON names.

    Raises:
        ValueError: The JSON is not a value of the format (an unknown type name, a number
            where text belongs...).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"{json.dumps(value)[:80]} is not a typed value (an object of one "
                         "key, the AMQP type)")
    ((name, inner),) = value.items()
    convert = _FROM_JSON.get(name)
    if convert is not None:
        try:
            return convert(inner)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"{name}: {exc}") from None
    if name == "list" and isinstance(inner, list):
        return [value_from_json(item) for item in inner]
    if name == "map" and isinstance(inner, list):
        return _map_from_json(inner)
    if name == "array" and isinstance(inner, dict):
        code = _ARRAY_CODES.get(inner.get("type"))  # type: ignore[arg-type]
        if code is None or not isinstance(inner.get("elements"), list):
            raise ValueError(f"array: {json.dumps(inner)[:80]} has no known type and elements")
        # (proton's stubs type the descriptor as data; UNDESCRIBED is its documented marker)
        descriptor: Any = (value_from_json(inner["descriptor"]) if "descriptor" in inner
                           else UNDESCRIBED)
        element = _ELEMENT_FROM_JSON.get(inner["type"], value_from_json)
        return Array(descriptor, code, *(element(e) for e in inner["elements"]))
    if name == "described" and isinstance(inner, dict) and {"descriptor", "value"} <= inner.keys():
        return Described(value_from_json(inner["descriptor"]), value_from_json(inner["value"]))
    raise ValueError(f"unknown type {name!r}, or its value is not what the type takes")


def _map_from_json(pairs: list[Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError("map: each entry is a [key, value] pair")
        out[value_from_json(pair[0])] = value_from_json(pair[1])
    return out


def _typed_map(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value_to_json(value) for key, value in values.items()}


def _typed_map_from(values: Any, what: str) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError(f"{what} is not an object")
    out = {}
    for key, value in values.items():
        try:
            out[key] = value_from_json(value)
        except ValueError as exc:
            raise ValueError(f"{what}[{key!r}]: {exc}") from None
    return out


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
        return int(found)
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
    # Checked by the model, then through its bytes: the annotations that are fields of the
    # model (partition keys, scheduled enqueue time) become those fields, as in a peek.
    return Message.from_bytes(Message(**fields).to_bytes())


def _body_from_json(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or len(body) != 1:
        raise ValueError("body is an object of one key: data, sequence or value")
    ((kind, sections),) = body.items()
    try:
        if kind == "data" and isinstance(sections, list) and sections:
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
    """Write messages to a text file, one line each (:func:`message_to_json`).

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
        out.write(json.dumps(message_to_json(message), ensure_ascii=False,
                             separators=(",", ":")))
        out.write("\n")
        count += 1
    return count


def read_messages(lines: Iterable[str]) -> Iterator[Message]:
    """The messages of an export file, in its order, ready to send (:func:`message_from_json`).

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


# --- the action ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_entity` did.

    Attributes:
        entity: The path peeked (with ``/$DeadLetterQueue`` for a dead-letter queue).
        exported: How many messages were written.
        first_sequence_number: The first one's sequence number (None if none).
        last_sequence_number: The last one's.
    """

    entity: str
    exported: int
    first_sequence_number: int | None
    last_sequence_number: int | None


def export_entity(
    entity: EntityClient, out: IO[str], *, from_sequence_number: int = 1,
    max_count: int | None = None, session_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> ExportReport:
    """Peek an entity's messages into ``out`` (:func:`write_messages`): nothing changes on
    the entity (peeking takes no lock).

    Args:
        entity: The entity's client (a queue, a subscription, or either's dead-letter queue:
            ``client.entity("q/$DeadLetterQueue")``).
        out: A text file open for writing.
        from_sequence_number: The first sequence number to export.
        max_count: The most messages to export; None: every one to the end.
        session_id: Only this session's messages (a session-enabled entity).
        progress: Called with the number of messages written so far, after each one.
        cancelled: Asked before each message; True stops the export there (what was written
            stays written and is counted).

    Returns:
        What was exported.

    Raises:
        sbmgmt.errors.ServiceBusManagementError: A peek failed (the subclass says why); what
            was written before stays written.
    """
    first: int | None = None
    last: int | None = None
    count = 0
    for message in entity.peek_all(from_sequence_number, session_id=session_id):
        if (max_count is not None and count >= max_count) or (cancelled and cancelled()):
            break
        write_messages((message,), out)
        count += 1
        first = message.sequence_number if first is None else first
        last = message.sequence_number
        if progress is not None:
            progress(count)
    return ExportReport(entity.path, count, first, last)
