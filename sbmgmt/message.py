"""Messages to and from complete AMQP 1.0 wire bytes: the models.

:class:`Message` is what a caller sends (schedule-message); :class:`ReceivedMessage`
is what peek and receive-by-sequence-number return. Both are encoded section by
section (AMQP 1.0 part 3 §3.2: header, delivery-annotations, message-annotations,
properties, application-properties, body, footer) by :mod:`sbmgmt._messages.encoder` (the
head by :mod:`sbmgmt._messages.broker_head`, the values by :mod:`sbmgmt.amqp.encode`: the
bytes of proton's ``Data`` codec) and decoded by :mod:`sbmgmt._messages.common_decoder` (the
common encodings in one pass) or :mod:`sbmgmt._messages.section_decoder` (any message,
section by section); :mod:`sbmgmt._messages.fields` holds what the two share.
Service Bus annotations are typed fields; everything else is kept as it came.

What a broker keeps of a message it was sent (the fake's entities) is here too, beside the
models' slots it writes: :func:`as_received`, :func:`same_encoding`,
:func:`encoded_as_now`; :class:`BrokerHead` and :func:`encode_sections` are the
encoder's, named here for it with the models' types (the encoder, below the models, knows a
message by the fields it reads).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._messages.broker_head import BrokerHead as _BrokerHead
from ._messages.broker_head import service_annotations
from ._messages.common_decoder import _decode
from ._messages.common_decoder import decoding as _decoding
from ._messages.encoder import Source as _Source
from ._messages.encoder import encode as _encode
from ._messages.encoder import encode_sections as _encode_sections
from ._messages.fields import (
    _DEAD_LETTER_VIEWS,
    NO_SEQUENCE_NUMBER,
    Decoding,
    MessageState,
)
from ._messages.lazy_decoder import LazyFields
from .errors import ProtocolError

__all__ = [
    "BodyType",
    "BrokerHead",
    "Message",
    "MessageId",
    "MessageState",
    "ReceivedMessage",
    "id_text",
    "as_received",
    "encode_sections",
    "encoded_as_now",
    "lock_token_from_delivery_tag",
    "same_encoding",
]


BodyType = Literal["data", "value", "sequence"]

#: A message-id or correlation-id: any of the four types AMQP 1.0 allows (part 3 §3.2.5):
#: ``str`` (message-id-string), ``int`` (message-id-ulong: 0 to 2**64 - 1), ``uuid.UUID``
#: (message-id-uuid) or ``bytes`` (message-id-binary). A decoded one keeps its type.
MessageId: TypeAlias = (
    str | Annotated[int, Field(ge=0, le=2**64 - 1, strict=True)] | uuid.UUID | bytes)


def id_text(value: str | int | uuid.UUID | bytes) -> str:
    """A message-id or correlation-id as text, where only text fits (a management request's
    ``message-id``, a table cell): a string as it is, a ulong in decimal, a uuid in its
    canonical form, binary as the UTF-8 text it encodes (as the official Python SDK shows it)
    or, if it is not UTF-8, in hex.

    Args:
        value: The id, of any of its four types.

    Returns:
        Its text.
    """
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return bytes(value).hex()
    if isinstance(value, int):
        return str(int(value))  # proton's ulong has its own repr
    return str(value)


def lock_token_from_delivery_tag(tag: bytes) -> uuid.UUID:
    """The lock token of a delivery: its 16-byte tag in .NET GUID byte order."""
    if len(tag) != 16:
        raise ProtocolError(f"a lock token delivery tag has 16 bytes, got {len(tag)}")
    return uuid.UUID(bytes_le=bytes(tag))


#: A message model: a function that takes one returns the same kind.
MessageT = TypeVar("MessageT", bound="Message")

# The instance slots of a pydantic model, set by Message._construct and nowhere else.
_set_dict = vars(BaseModel)["__dict__"].__set__
_set_fields_set = vars(BaseModel)["__pydantic_fields_set__"].__set__
_set_extra = vars(BaseModel)["__pydantic_extra__"].__set__
_set_private = vars(BaseModel)["__pydantic_private__"].__set__

class Message(BaseModel):
    """A message to send or schedule (frozen: ``model_copy(update=...)`` makes a changed copy).

    ``body`` is bytes (one data section) by default, or a list of bytes (a data section each);
    a ``str`` body is sent as its UTF-8 bytes, as the official SDKs do. ``body_type="value"``
    sends any AMQP value as an amqp-value section and ``"sequence"`` sends a list as an
    amqp-sequence section, or a tuple of lists as one amqp-sequence section each (a decoded
    message has its body as its sections were: several data sections as a list of bytes, none
    as an empty list, several amqp-sequence sections as a tuple of lists;
    [body_sections][sbmgmt.Message.body_sections] lists them for any kind). Values keep their
    AMQP types (proton's ``ubyte``, ``symbol``, ``timestamp``... as decoded). Every field is a
    keyword argument; an unknown one, or a value out of range, raises pydantic's
    ``ValidationError`` (a ``ValueError``).

    Attributes:
        body: The payload: bytes, a str (sent as UTF-8), or with ``body_type`` any AMQP value or
            a list.
        body_type: ``"data"`` (default), ``"value"`` or ``"sequence"``: the body section kind.
        message_id: properties.message-id: a str, an int (ulong), a ``uuid.UUID`` or bytes
            ([MessageId][sbmgmt.message.MessageId]); ``schedule_messages`` gives one without it
            a uuid4.
        session_id: properties.group-id: the session the message belongs to.
        correlation_id: properties.correlation-id, of the same four types.
        subject: properties.subject (the SDKs' label).
        content_type: properties.content-type (ASCII).
        content_encoding: properties.content-encoding (ASCII).
        to: properties.to.
        reply_to: properties.reply-to.
        reply_to_session_id: properties.reply-to-group-id.
        user_id: properties.user-id.
        partition_key: The ``x-opt-partition-key`` annotation.
        via_partition_key: The ``x-opt-via-partition-key`` annotation.
        time_to_live: header.ttl, a ``timedelta``.
        scheduled_enqueue_time: The ``x-opt-scheduled-enqueue-time`` annotation
            (``schedule_messages`` sets it).
        absolute_expiry_time: properties.absolute-expiry-time.
        creation_time: properties.creation-time.
        group_sequence: properties.group-sequence.
        durable: header.durable.
        priority: header.priority (0 to 255).
        first_acquirer: header.first-acquirer.
        delivery_count: header.delivery-count (0 or more).
        application_properties: The application properties (string keys).
        annotations: Other message annotations, as on the wire (a ulong key, which AMQP
            reserves, decoded as proton's ``ulong``).
        delivery_annotations: The delivery annotations, as on the wire.
        footer: The footer, as on the wire.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    # The bytes a message was decoded from and the fields they decoded to (set by from_bytes
    # and same_encoding, carried by model_copy): to_bytes writes each section whose fields are
    # still those objects as those bytes. Not a field: not compared, dumped or pickled.
    __slots__ = ("__weakref__", "_source")

    body: Any = b""
    body_type: BodyType = "data"
    message_id: MessageId | None = None
    session_id: str | None = None
    correlation_id: MessageId | None = None
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
        """The complete AMQP 1.0 encoding of this message (header, annotations, properties,
        application properties, body).

        Returns:
            The bytes, as a sender would transfer them.

        Raises:
            TypeError: A value (an application property, the body) has no AMQP encoding.
        """
        # The instance dict first: a lazily decoded message is decoded whole (its bytes
        # become its source), so that an unchanged one is written as the bytes it came as.
        return _encode(self, self.__dict__, _source(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> Message:
        """Decode a complete AMQP 1.0 message.

        Args:
            data: The message's bytes (as [to_bytes][sbmgmt.Message.to_bytes] makes them).

        Returns:
            The message.

        Raises:
            sbmgmt.errors.ProtocolError: ``data`` is not a well-formed AMQP message.
        """
        decoding = _decoding(cls)
        message = cls._construct(_decode(data, decoding), decoding)
        _set_source(message, (data, _instance_fields(message)))
        return message

    def model_copy(self: MessageT, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> MessageT:
        """A copy, with ``update``'s fields changed (not validated, as pydantic's).

        A copy of a decoded message encodes the sections whose fields it did not change as
        the bytes they were decoded from ([same_encoding][sbmgmt.message.same_encoding]).

        Args:
            update: The fields to change, by name.
            deep: Copy the field values too (then every section is encoded anew).

        Returns:
            The copy.

        Raises:
            sbmgmt.errors.ProtocolError: A [ReceivedMessage][sbmgmt.ReceivedMessage] decoded
                lazily whose fields do not decode (as any read of them).
        """
        if deep:
            copied = super().model_copy(update=update, deep=True)
        else:  # pydantic's shallow copy, written out: its generic one costs four times more
            copied = type(self).__new__(type(self))
            fields = {**self.__dict__, **update} if update else self.__dict__.copy()
            _set_dict(copied, fields)
            _set_extra(copied, None)  # extra="forbid": never any
            _set_private(copied, None)  # no private attributes
            _set_fields_set(copied, self.model_fields_set | update.keys() if update
                            else set(self.model_fields_set))
        source = _source(self)
        if source is not None:
            _set_source(copied, source)
        return copied

    @classmethod
    def _construct(cls: type[MessageT], fields: dict[str, Any], decoding: Decoding,
                   pending: bytes | None = None) -> MessageT:
        """``model_construct`` for a complete set of decoded fields, without its overhead.

        The one place that writes pydantic's instance slots (``__dict__``,
        ``__pydantic_fields_set__``, ``__pydantic_extra__``, ``__pydantic_private__``)
        directly: ``model_construct`` itself costs about 12 µs per received message
        against 0.8 µs here, on a decode of about 14 µs in all (issue 16; timeit on the
        fields of a 1 KB message). ``_decode`` sets every field, in declaration order (as
        ``model_construct`` puts them, for ``repr``), so there are no defaults to fill in
        and the dict is the instance's ``__dict__`` as it is. The slots are set through
        their descriptors (``object.__setattr__`` looks each one up first).
        ``tests/unit/test_message.py`` holds the result equal to ``model_construct``'s.

        With ``pending`` (a ReceivedMessage decoded lazily, :mod:`sbmgmt._messages.lazy_decoder`),
        ``fields`` are only those decoded at once and ``pending`` is the message's wire
        bytes, kept in the ReceivedMessage slot ``_pending`` until the rest is decoded
        (:mod:`sbmgmt._messages.lazy_decoder` then puts the complete fields in place of these),
        and its fields set is made at its first read (one set fewer per message).
        """
        instance = cls.__new__(cls)
        _set_dict(instance, fields)
        _set_extra(instance, None)
        _set_private(instance, None)
        if pending is None:
            _set_fields_set(instance, decoding.names.copy())
        else:
            _set_pending(instance, pending)
        return instance

    def body_sections(self) -> list[Any]:
        """The body as its sections carry it, one item per section, in order: the bytes of
        each data section, the list of each amqp-sequence section, or the one amqp-value.

        Returns:
            The sections' values.
        """
        body = self.body
        if self.body_type == "value":
            return [body]
        if self.body_type == "sequence":
            return list(body) if isinstance(body, tuple) else [body]
        if isinstance(body, list):
            return [bytes(part) for part in body]
        return [body.encode() if isinstance(body, str) else bytes(body)]

    def body_bytes(self) -> bytes:
        """The body as bytes: data sections as they are, a string value UTF-8 encoded, any other
        value as its ``repr``.

        Returns:
            The body's bytes.
        """
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body)
        if isinstance(self.body, str):
            return self.body.encode()
        if self.body_type == "data" and isinstance(self.body, list):
            return b"".join(bytes(part) for part in self.body)
        return repr(self.body).encode()


class ReceivedMessage(LazyFields, Message):
    """A message as peek or receive-by-sequence-number returns it: a [Message][sbmgmt.Message] with
    what the service adds.

    ``dead_letter_reason`` and ``dead_letter_description`` are views of the application
    properties ``DeadLetterReason`` and ``DeadLetterErrorDescription``, which stay in
    ``application_properties`` as on the wire (as the official SDKs keep them); a value given for
    a view is written to its property.

    The messages of a peek or receive-by-sequence-number reply are decoded as they are read: the
    structure of the bytes, ``sequence_number`` and ``lock_token`` when the reply arrives, the
    rest at the first read of any other field (the values are those
    [from_bytes][sbmgmt.ReceivedMessage.from_bytes] gives). If the rest cannot be decoded, that
    read raises [ProtocolError][sbmgmt.errors.ProtocolError] naming the field, and so does every
    later one and anything that reads every field (``==``, ``repr``, ``model_dump``, copies,
    pickling). ``from_bytes`` decodes at once.

    Attributes:
        sequence_number: The ``x-opt-sequence-number`` the service gave it.
        enqueued_time: ``x-opt-enqueued-time`` (UTC).
        locked_until: ``x-opt-locked-until`` (UTC): when its lock expires (peek-lock).
        lock_token: Its lock token (receive-by-sequence-number in peek-lock mode); None when
            peeked.
        state: ``x-opt-message-state``: [MessageState][sbmgmt.MessageState] ``ACTIVE``,
            ``DEFERRED`` or ``SCHEDULED``.
        dead_letter_reason: The ``DeadLetterReason`` application property.
        dead_letter_description: The ``DeadLetterErrorDescription`` application property.
        dead_letter_source: ``x-opt-deadletter-source``: the entity it was dead-lettered from.
    """

    __slots__ = ("_pending",)  # a lazily decoded message's wire bytes, until decoded

    sequence_number: int | None = None
    enqueued_time: datetime | None = None
    locked_until: datetime | None = None
    lock_token: uuid.UUID | None = None
    state: MessageState = MessageState.ACTIVE
    dead_letter_reason: str | None = None
    dead_letter_description: str | None = None
    dead_letter_source: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _dead_letter_views(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        values = dict(data)
        props = dict(values.get("application_properties") or {})
        for name, key in _DEAD_LETTER_VIEWS:
            if values.get(name) is not None:
                props[key] = values[name]
            elif key in props:
                values[name] = props[key]
        values["application_properties"] = props
        return values

    @classmethod
    def from_bytes(cls, data: bytes, *, lock_token: uuid.UUID | None = None) -> ReceivedMessage:
        """Decode a complete AMQP 1.0 message as the service delivers it.

        Args:
            data: The message's bytes; they must carry ``x-opt-sequence-number``.
            lock_token: The lock token it came with (peek-lock), if any.

        Returns:
            The message.

        Raises:
            sbmgmt.errors.ProtocolError: ``data`` is not a well-formed AMQP message, or it has no
                sequence number.
        """
        decoding = _decoding(cls)
        fields = _decode(data, decoding)
        if fields["sequence_number"] is None:
            raise ProtocolError(NO_SEQUENCE_NUMBER)
        if lock_token is not None:
            fields["lock_token"] = lock_token
        message = cls._construct(fields, decoding)
        _set_source(message, (data, fields))
        return message

    @property
    def raw_annotations(self) -> dict[str, Any]:
        """Every message annotation, the typed ones included, as on the wire."""
        raw = dict(self.annotations)
        for key, value in service_annotations(self).items():
            raw[str(key)] = value
        return raw


# The slot of a lazily decoded message's wire bytes: set by Message._construct, emptied by
# sbmgmt._messages.lazy_decoder once every field is decoded.
_set_pending = vars(ReceivedMessage)["_pending"].__set__

# The slot of a decoded message's bytes and fields (Message.__slots__).
_set_source = vars(Message)["_source"].__set__
_get_source = vars(Message)["_source"].__get__
_instance_fields = vars(BaseModel)["__dict__"].__get__


def _source(message: Message) -> _Source | None:
    try:
        source: _Source = _get_source(message)
    except AttributeError:  # never decoded
        return None
    return source


def same_encoding(target: MessageT, source: Message) -> MessageT:
    """``target``, to be encoded as ``source`` was where it has the same fields: each
    section of ``target`` whose fields are the very objects ``source`` decoded to (a field
    it copied from ``source``, unchanged) is written by [to_bytes][sbmgmt.Message.to_bytes]
    as the bytes ``source`` was decoded from, the exact encoding the sender chose; the other
    sections are encoded anew. Nothing changes if ``source`` was not decoded (made from
    fields, not from bytes).

    What a broker keeps of a message it was sent (the fake's entities): AMQP 1.0 part 3 §3.2
    "the bare message is immutable ... The exact encoding of sections of the bare message
    MUST NOT be modified".

    Args:
        target: A message made from ``source``'s fields (another class, some fields changed).
        source: The message it was made from.

    Returns:
        ``target`` itself.
    """
    found = _source(source)
    if found is not None:
        _set_source(target, found)
    return target


def as_received(message: Message, **service_fields: Any) -> ReceivedMessage:
    """The [ReceivedMessage][sbmgmt.ReceivedMessage] a broker keeps of ``message``: its
    fields, with ``service_fields`` set (``sequence_number``, ``enqueued_time``...) and the
    others of ReceivedMessage at their defaults, encoded as ``message`` was where unchanged
    ([same_encoding][sbmgmt.message.same_encoding]); the copy of a ``message`` made from
    fields (not decoded) is encoded here once, and its sections are written as those bytes
    from then on while unchanged: what a broker keeps of a message is the bytes it was sent
    (AMQP 1.0 part 3 §3.2). Not validated, as ``model_construct`` (the fields set are those
    given), at a fraction of its cost.

    Args:
        message: The message as it was sent.
        **service_fields: ReceivedMessage fields to set, by name.

    Returns:
        The new message.

    Raises:
        TypeError: A name that is not a ReceivedMessage field.
        sbmgmt.errors.ProtocolError: ``message``, made from fields, has a value with no AMQP
            encoding (ValueError: a key that is not ASCII where AMQP wants a symbol).
    """
    decoding = _decoding(ReceivedMessage)
    unknown = service_fields.keys() - decoding.names
    if unknown:
        raise TypeError(f"as_received: not a ReceivedMessage field: {sorted(unknown)}")
    given = message.__dict__  # complete (a lazily decoded message is decoded first)
    fields = decoding.defaults.copy()  # declaration order, as model_construct puts them
    fields.update(given)
    fields.update(service_fields)
    instance = ReceivedMessage.__new__(ReceivedMessage)
    _set_dict(instance, fields)
    _set_extra(instance, None)
    _set_private(instance, None)
    _set_fields_set(instance, {*given, *service_fields})
    if _source(message) is None:  # made from fields: kept as it encodes now
        return encoded_as_now(instance)
    return same_encoding(instance, message)


def encoded_as_now(message: MessageT) -> MessageT:
    """``message``, to be written from now on as it encodes now: each section whose fields
    stay the same objects is written by [to_bytes][sbmgmt.Message.to_bytes] as these
    bytes (as for a message decoded from them). What a broker does when it keeps a changed
    message (a dead letter with its reason): it writes it once, not at every read.

    Args:
        message: The message (its encoding is made here).

    Returns:
        ``message`` itself.

    Raises:
        ValueError: An annotation or footer key that is not ASCII (they are AMQP symbols).
        sbmgmt.errors.ProtocolError: A value with no AMQP encoding.
    """
    fields = message.__dict__
    _set_source(message, (_encode(message, fields, _source(message)), fields))
    return message


def encode_sections(message: Message, codes: Collection[int]) -> bytes:
    """The encoding of some of the message's sections, each from its fields (none written as
    bytes it was decoded from), in order: what a broker writes anew of a message it keeps
    (the header with its delivery count, the message annotations with its lock), without
    the cost of the rest.

    Args:
        message: The message.
        codes: The sections, by their descriptor codes (``sbmgmt.amqp.sections.HEADER``...;
            the body's: ``DATA``).

    Returns:
        The bytes of those of them the message has, in the order a message holds them.

    Raises:
        ValueError: An annotation or footer key that is not ASCII (they are AMQP symbols).
        sbmgmt.errors.ProtocolError: A value in those sections has no AMQP encoding.
    """
    return _encode_sections(message, codes)


class BrokerHead(_BrokerHead):
    """A message's header, delivery annotations and message annotations, encoded but for
    what a broker changes each time it delivers the message: the delivery count, the lock's
    expiry and the state. What a broker that keeps a message writes anew at each delivery or
    peek, before the bare message it keeps as bytes; :meth:`sections` costs a fraction of
    encoding those sections from a copy of the message with those fields changed.

    Args:
        message: The message.
        codes: The sections to encode, of ``HEADER``, ``DELIVERY_ANNOTATIONS`` and
            ``MESSAGE_ANNOTATIONS`` (``sbmgmt.amqp.sections``); None: all three.

    Raises:
        ValueError: An annotation key that is not ASCII (they are AMQP symbols).
        sbmgmt.errors.ProtocolError: A value in those sections has no AMQP encoding.
    """

    __slots__ = ()

    def __init__(self, message: Message, codes: Collection[int] | None = None) -> None:
        super().__init__(message, codes)
