"""A message's fields to its wire bytes, section by section (AMQP 1.0 part 3 §3.2:
header, delivery-annotations, message-annotations, properties, application-properties,
body, footer), by :mod:`sbmgmt.amqp.encode` (the bytes of proton's ``Data`` codec).

A message decoded from bytes keeps them (its source: the bytes and the fields they
decoded to); :func:`encode` writes each section whose fields are still those objects as
those bytes and encodes the others anew. :func:`encode_sections` encodes some sections
only, all anew: what a broker writes anew of a message it keeps. The head (the sections
before the bare message) is :class:`~sbmgmt._messages.broker_head.BrokerHead`'s.
"""

from __future__ import annotations

from collections.abc import Collection
from operator import is_
from typing import Any, cast

from proton import Described, symbol, uint, ulong

from ..amqp.encode import encode_value
from ..amqp.sections import AMQP_SEQUENCE as _AMQP_SEQUENCE
from ..amqp.sections import AMQP_VALUE as _AMQP_VALUE
from ..amqp.sections import APPLICATION_PROPERTIES as _APPLICATION_PROPERTIES
from ..amqp.sections import DATA as _DATA
from ..amqp.sections import DELIVERY_ANNOTATIONS as _DELIVERY_ANNOTATIONS
from ..amqp.sections import FOOTER as _FOOTER
from ..amqp.sections import HEADER as _HEADER
from ..amqp.sections import MESSAGE_ANNOTATIONS as _MESSAGE_ANNOTATIONS
from ..amqp.sections import PROPERTIES as _PROPERTIES
from ..amqp.sections import section_spans
from .broker_head import HEAD, BrokerHead, optional_ts, symbol_map
from .field_views import MessageFields, ServiceFields, service_fields
from .fields import DEAD_LETTER_DESCRIPTION, DEAD_LETTER_REASON, MessageState

#: A decoded message's source: the bytes it was decoded from and the fields they gave.
Source = tuple[bytes, dict[str, Any]]

#: The fields each section is encoded from (the body's sections share theirs).
_SECTION_FIELDS: dict[int, tuple[str, ...]] = {
    _HEADER: ("durable", "priority", "time_to_live", "first_acquirer", "delivery_count"),
    _DELIVERY_ANNOTATIONS: ("delivery_annotations",),
    _MESSAGE_ANNOTATIONS: ("annotations", "partition_key", "via_partition_key",
                           "scheduled_enqueue_time", "sequence_number", "enqueued_time",
                           "locked_until", "state", "dead_letter_source"),
    _PROPERTIES: ("message_id", "user_id", "to", "subject", "reply_to", "correlation_id",
                  "content_type", "content_encoding", "absolute_expiry_time", "creation_time",
                  "session_id", "group_sequence", "reply_to_session_id"),
    _APPLICATION_PROPERTIES: ("application_properties", "dead_letter_reason",
                              "dead_letter_description"),
    _DATA: ("body", "body_type"),
    _FOOTER: ("footer",),
}
#: Section code -> the group it is kept or encoded anew with (the body's sections as one).
_GROUP = {**{code: code for code in _SECTION_FIELDS}, _AMQP_SEQUENCE: _DATA, _AMQP_VALUE: _DATA}


def encode(message: MessageFields, fields: dict[str, Any], source: Source | None) -> bytes:
    """The message's bytes: every section encoded from its fields, except, for a message
    with a ``source`` (decoded from bytes, or made from one: ``same_encoding``), each
    section whose ``fields`` (its instance dict, complete) are still the objects those
    bytes decoded to, which is written as those bytes."""
    if source is None:
        return b"".join([section for _, section in _sections_of(message)])
    raw, decoded = source
    if fields is decoded:
        # The very message those bytes decoded to or were written as (frozen: unchanged):
        # every section is kept, and the bytes are the encoding when their sections are in
        # order (below, out-of-order ones would be put in order).
        groups = [_GROUP[code] for code, _, _ in section_spans(raw)]
        if groups == sorted(groups):
            return bytes(raw)
    now, then = fields.get, decoded.get
    kept = {group for group, names in _SECTION_FIELDS.items()
            if all(map(is_, map(now, names), map(then, names)))}
    fresh = _sections_of(message, kept)
    out: dict[int, list[bytes]] = {group: [] for group in _SECTION_FIELDS}
    for code, start, end in section_spans(raw):
        if _GROUP[code] in kept:
            out[_GROUP[code]].append(raw[start:end])
    for code, section in fresh:
        out[_GROUP[code]].append(section)
    return b"".join([b"".join(parts) for parts in out.values()])


def encode_sections(message: MessageFields, codes: Collection[int]) -> bytes:
    """The sections ``codes`` of ``message`` encoded from its fields: the public face,
    with its whole docstring, is :func:`sbmgmt.message.encode_sections`."""
    skip = [group for group in _SECTION_FIELDS if group not in codes]
    return b"".join([section for _, section in _sections_of(message, skip)])


def _sections_of(message: MessageFields,
                 skip: Collection[int] = ()) -> list[tuple[int, bytes]]:
    """Every section of the message, encoded from its fields, in order, with its code;
    none of the groups in ``skip`` (sections written as the bytes they came as)."""
    encoded: list[tuple[int, bytes]] = []
    head = [code for code in HEAD if code not in skip] if skip else HEAD
    received = service_fields(message)
    if head:
        encoded += BrokerHead(message, head).sections(
            message.delivery_count, None if received is None else received.locked_until,
            MessageState.ACTIVE if received is None else received.state)
    sections: list[Described] = []
    if _PROPERTIES not in skip:
        _properties_section(sections, message)
    if _APPLICATION_PROPERTIES not in skip:
        app_props = _application_properties(message, received)
        if app_props:
            sections.append(_described(_APPLICATION_PROPERTIES, app_props))
    if _DATA not in skip:
        _body_sections(sections, message)
    if message.footer and _FOOTER not in skip:
        sections.append(_described(_FOOTER, symbol_map(message.footer, "footer")))
    return encoded + [(cast(int, section.descriptor), encode_value(section))
                      for section in sections]


def _properties_section(sections: list[Described], message: MessageFields) -> None:
    properties = _trimmed([
        _identifier(message.message_id),
        message.user_id,
        message.to,
        message.subject,
        message.reply_to,
        _identifier(message.correlation_id),
        None if message.content_type is None else symbol(message.content_type),
        None if message.content_encoding is None else symbol(message.content_encoding),
        optional_ts(message.absolute_expiry_time),
        optional_ts(message.creation_time),
        message.session_id,
        None if message.group_sequence is None else uint(message.group_sequence),
        message.reply_to_session_id,
    ])
    if properties:
        sections.append(_described(_PROPERTIES, properties))


def _identifier(value: Any) -> Any:
    """A message-id or correlation-id as its AMQP type: an int is a ulong (a decoded one is
    proton's ``ulong`` already); str (or proton's symbol), uuid and bytes encode as they are."""
    if type(value) is int:
        return ulong(value)
    return value


def _body_sections(sections: list[Described], message: MessageFields) -> None:
    body = message.body
    if message.body_type == "value":
        sections.append(_described(_AMQP_VALUE, body))
    elif message.body_type == "sequence":
        lists = body if isinstance(body, tuple) else (body,)
        if not lists or not all(isinstance(items, list) for items in lists):
            raise ValueError("body_type 'sequence' needs a list body, or a tuple of lists")
        for items in lists:
            sections.append(_described(_AMQP_SEQUENCE, items))
    elif isinstance(body, list):
        for part in body:
            sections.append(_described(_DATA, bytes(part)))
    else:
        chunk = body.encode() if isinstance(body, str) else body
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise ValueError("a 'data' body must be bytes, str or a list of bytes")
        sections.append(_described(_DATA, bytes(chunk)))


def _described(code: int, value: Any) -> Described:
    return Described(ulong(code), value)


def _trimmed(values: list[Any]) -> list[Any]:
    while values and values[-1] is None:
        values.pop()
    return values


def _application_properties(message: MessageFields,
                            received: ServiceFields | None) -> dict[str, Any]:
    props = dict(message.application_properties)
    if received is not None:
        if received.dead_letter_reason is not None:
            props[DEAD_LETTER_REASON] = received.dead_letter_reason
        if received.dead_letter_description is not None:
            props[DEAD_LETTER_DESCRIPTION] = received.dead_letter_description
    return props
