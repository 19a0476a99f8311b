"""The generic decoder of a message: its sections decoded to AMQP values by
:func:`sbmgmt.amqp.sections.sections`, then each value read into its fields.

It decodes any message and raises :class:`~sbmgmt.errors.ProtocolError` for what is
wrong with the bytes; the one-pass reader of the common encodings
(:mod:`sbmgmt._messages.common_decoder`) stands in for it where it can, and tests hold the two
to the same fields.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..amqp.sections import AMQP_SEQUENCE as _AMQP_SEQUENCE
from ..amqp.sections import AMQP_VALUE as _AMQP_VALUE
from ..amqp.sections import APPLICATION_PROPERTIES as _APPLICATION_PROPERTIES
from ..amqp.sections import DATA as _DATA
from ..amqp.sections import DELIVERY_ANNOTATIONS as _DELIVERY_ANNOTATIONS
from ..amqp.sections import FOOTER as _FOOTER
from ..amqp.sections import HEADER as _HEADER
from ..amqp.sections import MESSAGE_ANNOTATIONS as _MESSAGE_ANNOTATIONS
from ..amqp.sections import PROPERTIES as _PROPERTIES
from ..amqp.sections import sections as _sections
from ..errors import ProtocolError
from .fields import (
    _DEAD_LETTER_VIEWS,
    _PROPERTY_FIELDS,
    Decoding,
    _at,
    _count,
    _list,
    _mapping,
    _text,
)


def _decode_sections(raw: bytes, decoding: Decoding) -> dict[str, Any]:
    """The fields of any message: its sections decoded to AMQP values first."""
    fields = decoding.defaults.copy()
    parts: list[bytes] = []
    for code, value in _sections(raw):
        keyed = _MAP_SECTIONS.get(code)
        if keyed is not None:
            value = _mapping(value, *keyed)
        _SECTION_READERS[code](value, fields, decoding, parts)
    return with_data(fields, parts)


def with_data(fields: dict[str, Any], parts: list[bytes]) -> dict[str, Any]:
    """The data sections are the body (one: its bytes; more: the list of them)."""
    if parts:
        fields["body"] = parts[0] if len(parts) == 1 else parts
    return fields


def _read_data(value: Any, fields: dict[str, Any], decoding: Decoding,
               parts: list[bytes]) -> None:
    if type(value) is not bytes:
        raise ProtocolError("malformed AMQP message: a data section is not binary")
    parts.append(value)


def _read_header(value: Any, fields: dict[str, Any], decoding: Decoding,
                 parts: list[bytes]) -> None:
    header = _list(value, "header")
    fields["durable"] = _at(header, 0)
    fields["priority"] = _count(_at(header, 1), "priority")
    ttl = _count(_at(header, 2), "ttl")
    fields["time_to_live"] = None if ttl is None else timedelta(milliseconds=ttl)
    fields["first_acquirer"] = _at(header, 3)
    fields["delivery_count"] = _count(_at(header, 4), "delivery-count")


def _read_properties(value: Any, fields: dict[str, Any], decoding: Decoding,
                     parts: list[bytes]) -> None:
    # A properties list longer than the thirteen fields has nothing more to read.
    for (name, read, what), item in zip(_PROPERTY_FIELDS, _list(value, "properties"),
                                        strict=False):
        if item is not None:
            fields[name] = read(item, what)


def _read_annotations(annotations: dict[str, Any], fields: dict[str, Any],
                      decoding: Decoding, parts: list[bytes]) -> None:
    split_annotations(annotations, fields, decoding, read=True)


def split_annotations(annotations: dict[str, Any], fields: dict[str, Any],
                      decoding: Decoding, *, read: bool) -> None:
    """The typed annotations into their fields (through their readers if ``read``: the
    one-pass decoding has their values already), the others into ``annotations``."""
    typed = decoding.annotations
    rest: dict[str, Any] = {}
    for key, value in annotations.items():
        spec = typed.get(key)
        if spec is None:
            rest[key] = value
        else:
            fields[spec[0]] = spec[1](value, key) if read else value
    fields["annotations"] = rest


def _read_application_properties(props: dict[str, Any], fields: dict[str, Any],
                                 decoding: Decoding, parts: list[bytes]) -> None:
    # The service's dead-letter properties stay among the application properties (as
    # the official SDKs keep them); the two fields are views of them.
    if decoding.dead_letter:
        for name, key in _DEAD_LETTER_VIEWS:
            fields[name] = _text(props.get(key), key)
    fields["application_properties"] = props


def _read_delivery_annotations(value: dict[str, Any], fields: dict[str, Any],
                               decoding: Decoding, parts: list[bytes]) -> None:
    fields["delivery_annotations"] = value


def _read_footer(value: dict[str, Any], fields: dict[str, Any], decoding: Decoding,
                 parts: list[bytes]) -> None:
    fields["footer"] = value


def _read_sequence(value: Any, fields: dict[str, Any], decoding: Decoding,
                   parts: list[bytes]) -> None:
    """One amqp-sequence section is the body (a list); several are, in order, a tuple of
    their lists (AMQP 1.0 part 3 §3.2: "one or more amqp-sequence sections")."""
    items = _list(value, "amqp-sequence")
    if fields["body_type"] != "sequence":
        fields["body"], fields["body_type"] = items, "sequence"
    elif type(fields["body"]) is tuple:
        fields["body"] = (*fields["body"], items)
    else:
        fields["body"] = (fields["body"], items)


def _read_value(value: Any, fields: dict[str, Any], decoding: Decoding,
                parts: list[bytes]) -> None:
    fields["body"], fields["body_type"] = value, "value"


_SectionReader = Callable[[Any, dict[str, Any], "Decoding", list[bytes]], None]

#: Section code -> what reads its value into the fields (a map section's value with
#: ``str`` keys already).
_SECTION_READERS: dict[int, _SectionReader] = {
    _HEADER: _read_header,
    _DELIVERY_ANNOTATIONS: _read_delivery_annotations,
    _MESSAGE_ANNOTATIONS: _read_annotations,
    _PROPERTIES: _read_properties,
    _APPLICATION_PROPERTIES: _read_application_properties,
    _DATA: _read_data,
    _AMQP_SEQUENCE: _read_sequence,
    _AMQP_VALUE: _read_value,
    _FOOTER: _read_footer,
}

#: The map sections: code -> (name, whether a null value is an empty map).
_MAP_SECTIONS: dict[int, tuple[str, bool]] = {
    _DELIVERY_ANNOTATIONS: ("delivery-annotations", True),
    _MESSAGE_ANNOTATIONS: ("message-annotations", False),
    _APPLICATION_PROPERTIES: ("application-properties", True),
    _FOOTER: ("footer", True),
}
