"""Messages to and from complete AMQP 1.0 wire bytes.

:class:`Message` is what a caller sends (schedule-message); :class:`ReceivedMessage`
is what peek and receive-by-sequence-number return. Both are encoded section by
section (AMQP 1.0 part 3 §3.2: header, delivery-annotations, message-annotations,
properties, application-properties, body, footer) by :mod:`sbmgmt._encode` (the bytes
of proton's ``Data`` codec) and decoded by :mod:`sbmgmt._decode`.
Service Bus annotations are typed fields; everything else is kept as it came.
"""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from proton import Described, symbol, timestamp, ubyte, uint, ulong
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._amqp import datetime_from_ms, ms_from_datetime
from ._decode import decode_described
from ._encode import encode_value
from .errors import ProtocolError

__all__ = [
    "BodyType",
    "Message",
    "MessageState",
    "ReceivedMessage",
    "lock_token_from_delivery_tag",
]

# AMQP 1.0 part 3 §3.2 section descriptors.
_HEADER = 0x70
_DELIVERY_ANNOTATIONS = 0x71
_MESSAGE_ANNOTATIONS = 0x72
_PROPERTIES = 0x73
_APPLICATION_PROPERTIES = 0x74
_DATA = 0x75
_AMQP_SEQUENCE = 0x76
_AMQP_VALUE = 0x77
_FOOTER = 0x78

# Service Bus message annotations and application properties.
SEQUENCE_NUMBER = "x-opt-sequence-number"
ENQUEUED_TIME = "x-opt-enqueued-time"
LOCKED_UNTIL = "x-opt-locked-until"
SCHEDULED_ENQUEUE_TIME = "x-opt-scheduled-enqueue-time"
MESSAGE_STATE = "x-opt-message-state"
DEAD_LETTER_SOURCE = "x-opt-deadletter-source"
PARTITION_KEY = "x-opt-partition-key"
VIA_PARTITION_KEY = "x-opt-via-partition-key"
ENQUEUE_SEQUENCE_NUMBER = "x-opt-enqueue-sequence-number"
LOCK_TOKEN = "x-opt-lock-token"
DEAD_LETTER_REASON = "DeadLetterReason"
DEAD_LETTER_DESCRIPTION = "DeadLetterErrorDescription"



class MessageState(enum.IntEnum):
    """``x-opt-message-state``."""

    ACTIVE = 0
    DEFERRED = 1
    SCHEDULED = 2


BodyType = Literal["data", "value", "sequence"]


def lock_token_from_delivery_tag(tag: bytes) -> uuid.UUID:
    """The lock token of a delivery: its 16-byte tag in .NET GUID byte order."""
    if len(tag) != 16:
        raise ProtocolError(f"a lock token delivery tag has 16 bytes, got {len(tag)}")
    return uuid.UUID(bytes_le=bytes(tag))


_M = TypeVar("_M", bound="Message")

class Message(BaseModel):
    """A message to send or schedule.

    ``body`` is bytes (one data section) by default; a ``str`` body is sent as its
    UTF-8 bytes, as the official SDKs do. ``body_type="value"`` sends any AMQP value as
    an amqp-value section and ``"sequence"`` sends a list as an amqp-sequence section.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    body: Any = b""
    body_type: BodyType = "data"
    message_id: str | None = None
    session_id: str | None = None
    correlation_id: str | None = None
    subject: str | None = None
    content_type: str | None = None
    content_encoding: str | None = None
    to: str | None = None
    reply_to: str | None = None
    reply_to_session_id: str | None = None
    user_id: bytes | None = None
    partition_key: str | None = None
    via_partition_key: str | None = None
    time_to_live: timedelta | None = None
    scheduled_enqueue_time: datetime | None = None
    absolute_expiry_time: datetime | None = None
    creation_time: datetime | None = None
    group_sequence: int | None = None
    durable: bool | None = None
    priority: int | None = Field(default=None, ge=0, le=255)
    first_acquirer: bool | None = None
    delivery_count: int | None = Field(default=None, ge=0)
    application_properties: dict[str, Any] = Field(default_factory=dict)
    annotations: dict[str, Any] = Field(default_factory=dict)
    delivery_annotations: dict[str, Any] = Field(default_factory=dict)
    footer: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content_type", "content_encoding")
    @classmethod
    def _ascii_symbol(cls, value: str | None) -> str | None:
        if value is not None and not value.isascii():
            raise ValueError("must be ASCII (it travels as an AMQP symbol)")
        return value

    def to_bytes(self) -> bytes:
        """The complete AMQP 1.0 encoding of this message."""
        return _encode(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> Message:
        """Decode complete AMQP 1.0 message bytes (raises ProtocolError if malformed)."""
        return cls._construct(_decode(data, _decoding(cls)))

    @classmethod
    def _construct(cls: type[_M], fields: dict[str, Any]) -> _M:
        """``model_construct`` for a complete set of decoded fields, without its overhead.

        ``_decode`` sets every field, in declaration order (as ``model_construct``
        puts them, for ``repr``), so there are no defaults to fill in and the dict is
        the instance's ``__dict__`` as it is.
        """
        instance = cls.__new__(cls)
        object.__setattr__(instance, "__dict__", fields)
        object.__setattr__(instance, "__pydantic_fields_set__", set(fields))
        object.__setattr__(instance, "__pydantic_extra__", None)
        object.__setattr__(instance, "__pydantic_private__", None)
        return instance

    def body_bytes(self) -> bytes:
        """The body as bytes: data sections as they are, a string value UTF-8 encoded."""
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body)
        if isinstance(self.body, str):
            return self.body.encode()
        if self.body_type == "data" and isinstance(self.body, list):
            return b"".join(bytes(part) for part in self.body)
        return repr(self.body).encode()


class ReceivedMessage(Message):
    """A message as peek or receive-by-sequence-number returns it."""

    sequence_number: int | None = None
    enqueued_time: datetime | None = None
    locked_until: datetime | None = None
    lock_token: uuid.UUID | None = None
    state: MessageState = MessageState.ACTIVE
    dead_letter_reason: str | None = None
    dead_letter_description: str | None = None
    dead_letter_source: str | None = None

    @classmethod
    def from_bytes(cls, data: bytes, *, lock_token: uuid.UUID | None = None) -> ReceivedMessage:
        fields = _decode(data, _decoding(cls))
        if fields["sequence_number"] is None:
            raise ProtocolError(f"a received message has no {SEQUENCE_NUMBER} annotation")
        if lock_token is not None:
            fields["lock_token"] = lock_token
        return cls._construct(fields)

    @property
    def raw_annotations(self) -> dict[str, Any]:
        """Every message annotation, the typed ones included, as on the wire."""
        raw = dict(self.annotations)
        for key, value in _service_annotations(self).items():
            raw[str(key)] = value
        return raw


# --- encoding ----------------------------------------------------------------


def _described(code: int, value: Any) -> Described:
    return Described(ulong(code), value)


def _trimmed(values: list[Any]) -> list[Any]:
    while values and values[-1] is None:
        values.pop()
    return values


def _optional_ts(value: datetime | None) -> timestamp | None:
    return None if value is None else timestamp(ms_from_datetime(value))


def _service_annotations(message: Message) -> dict[symbol, Any]:
    out: dict[symbol, Any] = {}
    if message.partition_key is not None:
        out[symbol(PARTITION_KEY)] = message.partition_key
    if message.via_partition_key is not None:
        out[symbol(VIA_PARTITION_KEY)] = message.via_partition_key
    if message.scheduled_enqueue_time is not None:
        out[symbol(SCHEDULED_ENQUEUE_TIME)] = _optional_ts(message.scheduled_enqueue_time)
    if isinstance(message, ReceivedMessage):
        if message.sequence_number is not None:
            out[symbol(SEQUENCE_NUMBER)] = message.sequence_number
        if message.enqueued_time is not None:
            out[symbol(ENQUEUED_TIME)] = _optional_ts(message.enqueued_time)
        if message.locked_until is not None:
            out[symbol(LOCKED_UNTIL)] = _optional_ts(message.locked_until)
        if message.state is not MessageState.ACTIVE:
            out[symbol(MESSAGE_STATE)] = int(message.state)
        if message.dead_letter_source is not None:
            out[symbol(DEAD_LETTER_SOURCE)] = message.dead_letter_source
    return out


def _application_properties(message: Message) -> dict[str, Any]:
    props = dict(message.application_properties)
    if isinstance(message, ReceivedMessage):
        if message.dead_letter_reason is not None:
            props[DEAD_LETTER_REASON] = message.dead_letter_reason
        if message.dead_letter_description is not None:
            props[DEAD_LETTER_DESCRIPTION] = message.dead_letter_description
    return props


def _symbol_map(values: dict[str, Any], section: str) -> dict[symbol, Any]:
    """Annotation and footer keys are AMQP symbols: ASCII only."""
    for key in values:
        if not key.isascii():
            raise ValueError(f"{section} key {key!r} is not ASCII (AMQP symbols are ASCII)")
    return {symbol(k): v for k, v in values.items()}


def _encode(message: Message) -> bytes:
    sections: list[Described] = []
    header = _trimmed([
        message.durable,
        None if message.priority is None else ubyte(message.priority),
        None if message.time_to_live is None
        else uint(message.time_to_live // timedelta(milliseconds=1)),
        message.first_acquirer,
        None if message.delivery_count is None else uint(message.delivery_count),
    ])
    if header:
        sections.append(_described(_HEADER, header))
    if message.delivery_annotations:
        sections.append(_described(
            _DELIVERY_ANNOTATIONS,
            _symbol_map(message.delivery_annotations, "delivery-annotations"),
        ))
    annotations = _symbol_map(message.annotations, "message-annotations")
    annotations.update(_service_annotations(message))
    if annotations:
        sections.append(_described(_MESSAGE_ANNOTATIONS, annotations))
    properties = _trimmed([
        message.message_id,
        message.user_id,
        message.to,
        message.subject,
        message.reply_to,
        message.correlation_id,
        None if message.content_type is None else symbol(message.content_type),
        None if message.content_encoding is None else symbol(message.content_encoding),
        _optional_ts(message.absolute_expiry_time),
        _optional_ts(message.creation_time),
        message.session_id,
        None if message.group_sequence is None else uint(message.group_sequence),
        message.reply_to_session_id,
    ])
    if properties:
        sections.append(_described(_PROPERTIES, properties))
    app_props = _application_properties(message)
    if app_props:
        sections.append(_described(_APPLICATION_PROPERTIES, app_props))
    _body_sections(sections, message)
    if message.footer:
        sections.append(_described(_FOOTER, _symbol_map(message.footer, "footer")))
    return b"".join([encode_value(section) for section in sections])


def _body_sections(sections: list[Described], message: Message) -> None:
    body = message.body
    if message.body_type == "value":
        sections.append(_described(_AMQP_VALUE, body))
    elif message.body_type == "sequence":
        if not isinstance(body, list):
            raise ValueError("body_type 'sequence' needs a list body")
        sections.append(_described(_AMQP_SEQUENCE, body))
    elif isinstance(body, list):
        for part in body:
            sections.append(_described(_DATA, bytes(part)))
    else:
        chunk = body.encode() if isinstance(body, str) else body
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise ValueError("a 'data' body must be bytes, str or a list of bytes")
        sections.append(_described(_DATA, bytes(chunk)))


# --- decoding ----------------------------------------------------------------


def _sections(raw: bytes) -> list[tuple[int, Any]]:
    if type(raw) is not bytes:
        if not isinstance(raw, (bytearray, memoryview)):
            raise ProtocolError(
                f"a wire-encoded message must be binary, got {type(raw).__name__}")
        raw = bytes(raw)
    out: list[tuple[int, Any]] = []
    offset = 0
    end = len(raw)
    while offset < end:
        if raw[offset] != 0x00:
            raise ProtocolError(f"malformed AMQP message: no section at byte {offset}")
        try:
            code, value, after = decode_described(raw, offset)
        except ProtocolError as exc:
            raise ProtocolError(f"malformed AMQP message at byte {offset}: {exc}") from None
        # Any integer type, or a symbol, names a section: a plain string does not.
        section = (_SECTION_CODES.get(code) if isinstance(code, int) or type(code) is symbol
                   else None)
        if section is None:
            raise ProtocolError(f"malformed AMQP message: unknown section {code!r}")
        out.append((section, value))
        offset = after
    if not out:
        raise ProtocolError("malformed AMQP message: no sections")
    return out


_SECTION_CODES: dict[Any, int] = {
    **{code: code for code in range(_HEADER, _FOOTER + 1)},
    "amqp:header:list": _HEADER,
    "amqp:delivery-annotations:map": _DELIVERY_ANNOTATIONS,
    "amqp:message-annotations:map": _MESSAGE_ANNOTATIONS,
    "amqp:properties:list": _PROPERTIES,
    "amqp:application-properties:map": _APPLICATION_PROPERTIES,
    "amqp:data:binary": _DATA,
    "amqp:amqp-sequence:list": _AMQP_SEQUENCE,
    "amqp:amqp-value:*": _AMQP_VALUE,
    "amqp:footer:map": _FOOTER,
}


def _at(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None


def _text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        raise ProtocolError(f"malformed AMQP message: {what} is binary")
    return str(value)


def _time(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"malformed AMQP message: {what} is not a timestamp")
    try:
        return datetime_from_ms(int(value))
    except (OverflowError, ValueError):
        raise ProtocolError(f"malformed AMQP message: {what} is out of range") from None


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"malformed AMQP message: {what} is not an integer")
    return int(value)


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(f"malformed AMQP message: {what} is not a map")
    return {str(k): v for k, v in value.items()}


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError(f"malformed AMQP message: {what} is not a list")
    return value


def _state(value: Any, what: str) -> MessageState:
    state = _count(value, what)
    if state is None:
        return MessageState.ACTIVE
    found = _STATES.get(state)
    if found is None:
        raise ProtocolError(f"unknown {MESSAGE_STATE} {state}")
    return found


def _binary(value: Any, what: str) -> bytes | None:
    if value is not None and not isinstance(value, bytes):
        raise ProtocolError(f"malformed AMQP message: {what} is not binary")
    return value


_STATES = {int(state): state for state in MessageState}

_Reader = Callable[[Any, str], Any]

#: The properties list (message-id .. reply-to-group-id): (field, reader, wire name).
_PROPERTY_FIELDS: tuple[tuple[str, _Reader, str], ...] = (
    ("message_id", _text, "message-id"),
    ("user_id", _binary, "user-id"),
    ("to", _text, "to"),
    ("subject", _text, "subject"),
    ("reply_to", _text, "reply-to"),
    ("correlation_id", _text, "correlation-id"),
    ("content_type", _text, "content-type"),
    ("content_encoding", _text, "content-encoding"),
    ("absolute_expiry_time", _time, "absolute-expiry-time"),
    ("creation_time", _time, "creation-time"),
    ("session_id", _text, "group-id"),
    ("group_sequence", _count, "group-sequence"),
    ("reply_to_session_id", _text, "reply-to-group-id"),
)

#: The Service Bus annotations every message has as fields: key -> (field, reader).
_ANNOTATION_FIELDS: dict[str, tuple[str, _Reader]] = {
    PARTITION_KEY: ("partition_key", _text),
    VIA_PARTITION_KEY: ("via_partition_key", _text),
    SCHEDULED_ENQUEUE_TIME: ("scheduled_enqueue_time", _time),
}
#: ... and those a ReceivedMessage has as well.
_RECEIVED_ANNOTATION_FIELDS: dict[str, tuple[str, _Reader]] = {
    **_ANNOTATION_FIELDS,
    SEQUENCE_NUMBER: ("sequence_number", _count),
    ENQUEUED_TIME: ("enqueued_time", _time),
    LOCKED_UNTIL: ("locked_until", _time),
    DEAD_LETTER_SOURCE: ("dead_letter_source", _text),
    MESSAGE_STATE: ("state", _state),
}


@dataclass(frozen=True, slots=True)
class _Decoding:
    """How to decode into one message class."""

    #: Every field as if its section were absent, in declaration order.
    defaults: dict[str, Any]
    #: The annotations that are typed fields of the class.
    annotations: dict[str, tuple[str, _Reader]]
    #: Whether the dead-letter application properties are typed fields of the class.
    dead_letter: bool


@functools.cache
def _decoding(cls: type[Message]) -> _Decoding:
    names = cls.model_fields
    defaults: dict[str, Any] = dict.fromkeys(names)
    defaults.update(
        body=b"", body_type="data", application_properties={}, annotations={},
        delivery_annotations={}, footer={},
    )
    if "state" in names:
        defaults["state"] = MessageState.ACTIVE
    received = "sequence_number" in names
    return _Decoding(
        defaults=defaults,
        annotations=_RECEIVED_ANNOTATION_FIELDS if received else _ANNOTATION_FIELDS,
        dead_letter="dead_letter_reason" in names,
    )


def _decode(raw: bytes, decoding: _Decoding) -> dict[str, Any]:
    fields = decoding.defaults.copy()
    data_parts: list[bytes] = []
    for code, value in _sections(raw):
        if code == _DATA:
            if type(value) is not bytes:
                raise ProtocolError("malformed AMQP message: a data section is not binary")
            data_parts.append(value)
        elif code == _MESSAGE_ANNOTATIONS:
            _read_annotations(value, fields, decoding.annotations)
        elif code == _PROPERTIES:
            _read_properties(_list(value, "properties"), fields)
        elif code == _HEADER:
            _read_header(_list(value, "header"), fields)
        elif code == _APPLICATION_PROPERTIES:
            _read_application_properties(_mapping(value, "application-properties"), fields,
                                         decoding.dead_letter)
        elif code == _DELIVERY_ANNOTATIONS:
            fields["delivery_annotations"] = _mapping(value, "delivery-annotations")
        elif code == _AMQP_SEQUENCE:
            fields["body"], fields["body_type"] = _list(value, "amqp-sequence"), "sequence"
        elif code == _AMQP_VALUE:
            fields["body"], fields["body_type"] = value, "value"
        else:
            fields["footer"] = _mapping(value, "footer")
    if data_parts:
        fields["body"] = data_parts[0] if len(data_parts) == 1 else data_parts
    return fields


def _read_header(header: list[Any], fields: dict[str, Any]) -> None:
    fields["durable"] = _at(header, 0)
    fields["priority"] = _count(_at(header, 1), "priority")
    ttl = _count(_at(header, 2), "ttl")
    fields["time_to_live"] = None if ttl is None else timedelta(milliseconds=ttl)
    fields["first_acquirer"] = _at(header, 3)
    fields["delivery_count"] = _count(_at(header, 4), "delivery-count")


def _read_properties(props: list[Any], fields: dict[str, Any]) -> None:
    # A properties list longer than the thirteen fields has nothing more to read.
    for (name, read, what), value in zip(_PROPERTY_FIELDS, props, strict=False):
        if value is not None:
            fields[name] = read(value, what)


def _read_annotations(
    annotations: Any, fields: dict[str, Any], typed: dict[str, tuple[str, _Reader]]
) -> None:
    """The typed annotations into their fields, the others (keys as ``str``) into
    ``annotations``."""
    if not isinstance(annotations, dict):
        raise ProtocolError("malformed AMQP message: message-annotations is not a map")
    rest: dict[str, Any] = {}
    for raw_key, value in annotations.items():
        key = str(raw_key)
        spec = typed.get(key)
        if spec is None:
            rest[key] = value
        else:
            fields[spec[0]] = spec[1](value, key)
    fields["annotations"] = rest


def _read_application_properties(
    props: dict[str, Any], fields: dict[str, Any], dead_letter: bool
) -> None:
    if dead_letter:
        fields["dead_letter_reason"] = _text(props.pop(DEAD_LETTER_REASON, None),
                                             DEAD_LETTER_REASON)
        fields["dead_letter_description"] = _text(
            props.pop(DEAD_LETTER_DESCRIPTION, None), DEAD_LETTER_DESCRIPTION
        )
    fields["application_properties"] = props
