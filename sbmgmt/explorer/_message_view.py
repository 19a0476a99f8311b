"""A message as the page shows it: its body in the form that fits, every field as text.

Nothing here is markup: every value becomes a ``str`` that the templates escape
(Jinja2's autoescape), so a body or a property holding ``<script>`` is shown as those
characters. The body's form is chosen from what it is, not only from what it claims:

- an amqp-value or amqp-sequence body: the value, as JSON where it fits, else its repr;
- a data body that parses as JSON (whatever its content type): JSON, indented;
- one that parses as XML and starts with ``<``: XML, indented (expat, which fetches no
  external entity; a body with a document type, which could declare entities that expand
  a billion times, is not parsed; bodies over :data:`MAX_PRETTY` are not re-indented);
- UTF-8 text without control characters (tab and newlines allowed): text;
- anything else: a hex dump (offset, hex, ASCII), of the first :data:`MAX_HEX` bytes.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from xml.dom import minidom
from xml.parsers.expat import ExpatError

from .._wording import utc_time
from ..amqp.values import datetime_from_ms
from ..message import ReceivedMessage

__all__ = ["MAX_HEX", "MAX_PRETTY", "BodyKind", "BodyView", "Field", "body_view", "fields_of",
           "system_fields", "type_name", "utf8_text", "value_text"]

#: The most bytes re-indented as JSON or XML; a larger body is shown as text.
MAX_PRETTY = 1 << 20
#: The most bytes of a hex dump.
MAX_HEX = 64 * 1024

# What a Python value decoded from AMQP is called on the wire (proton's typed values,
# int32, ulong, symbol..., keep their own class names).
_AMQP_NAMES = {bool: "boolean", int: "long", float: "double", str: "string", bytes: "binary",
               uuid.UUID: "uuid", datetime: "timestamp", list: "list", dict: "map",
               type(None): "null", timedelta: "duration"}


class BodyKind(str, enum.Enum):
    """How a body is shown."""

    JSON = "json"
    XML = "xml"
    TEXT = "text"
    HEX = "hex"
    VALUE = "value"


@dataclasses.dataclass(frozen=True)
class BodyView:
    """A body ready to show: its kind, its text, its size in bytes, and whether the text
    stops short of the whole body (a hex dump of a large body)."""

    kind: BodyKind
    text: str
    size: int
    truncated: bool = False


@dataclasses.dataclass(frozen=True)
class Field:
    """One named value, as text, with its AMQP type's name."""

    name: str
    value: str
    type: str


def type_name(value: Any) -> str:
    """The AMQP type's name of a decoded value (``string``, ``long``, ``int32``, ...)."""
    if isinstance(value, enum.Enum):
        return "enum"
    for kind, name in _AMQP_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


def value_text(value: Any) -> str:
    """Any decoded value as text (bytes as hex, times in UTC to the millisecond, as
    ``2026-11-26 09:30:00.250 UTC``)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex(" ")
    if isinstance(value, datetime):
        return f"{utc_time(value, milliseconds=True)} UTC"
    if isinstance(value, int) and type(value).__name__ == "timestamp":  # proton's, in ms
        return f"{utc_time(datetime_from_ms(int(value)), milliseconds=True)} UTC"
    if isinstance(value, enum.Enum):
        return value.name.lower()
    return str(value)


def body_view(message: ReceivedMessage) -> BodyView:
    """The message's body in the form that fits (see the module's docstring).

    Args:
        message: A peeked message.

    Returns:
        The body's kind, text and size.
    """
    data = message.body_bytes()
    if message.body_type != "data":
        try:
            shown = json.dumps(message.body, indent=2, ensure_ascii=False, default=value_text)
        except (TypeError, ValueError):
            shown = repr(message.body)
        return BodyView(BodyKind.VALUE, shown, len(data))
    text = utf8_text(data)
    if text is not None and len(data) <= MAX_PRETTY:
        pretty = _json(text)
        if pretty is not None:
            return BodyView(BodyKind.JSON, pretty, len(data))
        pretty = _xml(text)
        if pretty is not None:
            return BodyView(BodyKind.XML, pretty, len(data))
    if text is not None and _printable(text):
        return BodyView(BodyKind.TEXT, text, len(data))
    return BodyView(BodyKind.HEX, _hex_dump(data[:MAX_HEX]), len(data), len(data) > MAX_HEX)


def utf8_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8, else None."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json(text: str) -> str | None:
    if not text.strip() or text.lstrip()[:1] not in '{["':
        return None
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _xml(text: str) -> str | None:
    if not text.lstrip().startswith("<") or "<!DOCTYPE" in text or "<!ENTITY" in text:
        return None  # a document type may declare entities: never expanded here
    try:
        document = minidom.parseString(text.strip())
    except (ExpatError, ValueError):
        return None
    lines = document.toprettyxml(indent="  ").splitlines()
    return "\n".join(line for line in lines[1:] if line.strip())


def _printable(text: str) -> bool:
    return all(ch.isprintable() or ch in "\t\r\n" for ch in text)


def _hex_dump(data: bytes) -> str:
    rows = []
    for offset in range(0, len(data), 16):
        chunk = data[offset:offset + 16]
        ascii_text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        rows.append(f"{offset:08x}  {chunk.hex(' '):<47}  {ascii_text}")
    return "\n".join(rows)


def fields_of(values: Mapping[str, Any]) -> list[Field]:
    """Named values as text with their types, in their order.

    Args:
        values: Application properties, annotations, or any map of decoded values.

    Returns:
        One [Field][sbmgmt.explorer._message_view.Field] each.
    """
    return [Field(str(name), value_text(value), type_name(value))
            for name, value in values.items()]


_SYSTEM = ("message_id", "session_id", "correlation_id", "subject", "content_type",
           "content_encoding", "to", "reply_to", "reply_to_session_id", "user_id",
           "partition_key", "via_partition_key", "time_to_live", "scheduled_enqueue_time",
           "absolute_expiry_time", "creation_time", "group_sequence", "durable", "priority",
           "first_acquirer", "delivery_count", "sequence_number", "enqueued_time",
           "locked_until", "state", "dead_letter_reason", "dead_letter_description",
           "dead_letter_source", "body_type")


def system_fields(message: ReceivedMessage) -> list[Field]:
    """Every property of the message that is set (the header, the properties section and
    what the service adds), as text with its type.

    Args:
        message: A peeked message.

    Returns:
        One [Field][sbmgmt.explorer._message_view.Field] per property that is not None.
    """
    values = {name: getattr(message, name) for name in _SYSTEM}
    return fields_of({name: value for name, value in values.items() if value is not None})
