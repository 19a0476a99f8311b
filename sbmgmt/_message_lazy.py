"""Received messages whose fields are decoded when they are first read: the messages of
a peek or receive-by-sequence-number reply (:func:`lazy_decoder`).

Theory of operation
-------------------

A lazily decoded message is a plain :class:`~sbmgmt.message.ReceivedMessage` (its type is
the class itself) made by ``Message._construct`` with only some of its fields in its
instance dict and, in its slot ``_pending``, its own wire bytes (a slice of the reply,
never the reply) and their sections. What :func:`lazy_decoder`'s function does at once:
the structure of the bytes (every section well delimited, its descriptor a known one,
its size within the message: :func:`~sbmgmt.amqp.sections.section_spans`), the sequence
number (read by :func:`~sbmgmt.amqp.scan.text_map_find` from the message annotations, or
the whole message-annotations section decoded where that reader declines) and the lock
token: all that a reply's checks read.

The other fields come in section groups (:class:`_Group`): the header, each map section,
the properties, the body. Pydantic keeps field values in the instance dict and calls
``__getattr__`` only for a name missing from it, so the first read of a field of a group
decodes the group's sections, alone, with the eager decoder (``_message_common._decode``,
started from the group's defaults): the values are those ``ReceivedMessage.from_bytes``
gives. The first such read also fills in the groups whose sections the message does not
have (their defaults: nothing to decode). A group that does not decode raises
:class:`~sbmgmt.errors.ProtocolError`, naming the field read and the section, at that
read and at every read of it after.

Whatever reads the instance dict whole asks for it as ``__dict__``: pydantic's ``==``,
hash, ``repr``, iteration, copies, pickling and ``model_copy``, pydantic-core's
serialization (``model_dump``, a message nested in another model) and ``vars()``.
:class:`LazyFields` makes ``__dict__`` a property that decodes every group left before it
answers; attribute reads do not go through it.

Threads: a message resolved on the I/O thread may be read from any thread, from several
at once. A group is decoded into a local dict, outside any lock; under one lock, the
names still missing are added to the instance dict by one ``dict.update``: a value once
in it is never replaced, whichever thread decoded it first. The update that completes
the message instead puts every field in declaration order (``repr``, iteration and
``model_dump_json`` follow the order of the dict, and the eager decoder sets it that
way): it empties the dict and fills it again, still under the lock, then drops the wire
bytes. A thread that reads a field in that moment misses it, comes to ``__getattr__``,
waits for the lock and finds it; one that asks for ``__dict__`` then sees a group
missing and waits for the lock too.
"""

from __future__ import annotations

import functools
import operator
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel

from ._message_common import _HEADER_ITEMS, Decoding, _decode, decoding, own_maps
from ._message_fields import (
    _DEAD_LETTER_VIEWS,
    _PROPERTY_FIELDS,
    NO_SEQUENCE_NUMBER,
    SEQUENCE_NUMBER,
)
from .amqp.scan import ValueReader, text_map_find
from .amqp.sections import (
    APPLICATION_PROPERTIES,
    BODIES,
    DELIVERY_ANNOTATIONS,
    FOOTER,
    HEADER,
    MESSAGE_ANNOTATIONS,
    PROPERTIES,
    section_spans,
)
from .errors import ProtocolError

if TYPE_CHECKING:
    from .message import Message, ReceivedMessage

__all__ = ["LazyFields", "Pending", "lazy_decoder"]

#: What a lazily decoded message keeps until every field is decoded: its wire bytes and
#: their sections (:func:`~sbmgmt.amqp.sections.section_spans`).
Pending = tuple[bytes, list[tuple[int, int, int]]]

_R = TypeVar("_R", bound="ReceivedMessage")


@dataclass(frozen=True, slots=True, eq=False)  # each one is made once: equal if identical
class _Group:
    """The fields that one kind of section sets, decoded together."""

    #: The section, as an error names it.
    name: str
    #: The codes of its sections.
    codes: frozenset[int]
    #: Its fields and their values when its sections are absent.
    defaults: dict[str, Any]
    #: Its fields; the first one is set by decoding the group and nothing else.
    fields: tuple[str, ...]
    #: The groups it is made of, if several (decoded together, named apart in errors).
    parts: tuple[_Group, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)  # one per class: equal if identical
class _Layout:
    """The groups of one message class."""

    decoding: Decoding
    groups: tuple[_Group, ...]
    by_field: dict[str, _Group]
    annotations: _Group
    #: How many fields the class has, and how many are decoded at once (the sequence
    #: number and the lock token).
    total: int
    at_once: int


def _group(known: Decoding, name: str, codes: Iterable[int], fields: Iterable[str]) -> _Group:
    defaults = {field: known.defaults[field] for field in fields}
    return _Group(name, frozenset(codes), defaults, tuple(defaults))


_AT_ONCE = "sequence_number"  # and the lock token, which comes with the transfer


@functools.cache
def _layout(cls: type[BaseModel]) -> _Layout:
    known = decoding(cast("type[Message]", cls))  # what reaches here is a Message
    views = [name for name, _ in _DEAD_LETTER_VIEWS] if known.dead_letter else []
    annotations = _group(known, "message-annotations", [MESSAGE_ANNOTATIONS], [
        "annotations", *(name for name, _ in known.annotations.values() if name != _AT_ONCE)])
    groups = (
        _group(known, "header", [HEADER], [name for name, _ in _HEADER_ITEMS]),
        _group(known, "delivery-annotations", [DELIVERY_ANNOTATIONS], ["delivery_annotations"]),
        annotations,
        _group(known, "properties", [PROPERTIES], [name for name, _, _ in _PROPERTY_FIELDS]),
        _group(known, "application-properties", [APPLICATION_PROPERTIES],
               ["application_properties", *views]),
        _group(known, "body", BODIES, ["body", "body_type"]),
        _group(known, "footer", [FOOTER], ["footer"]),
    )
    by_field = {name: group for group in groups for name in group.fields}
    return _Layout(known, groups, by_field, annotations, len(known.names),
                   len(known.names) - len(by_field))


def lazy_decoder(cls: type[_R]) -> Callable[[bytes, uuid.UUID | None], _R]:
    """What decodes messages of ``cls`` (ReceivedMessage) lazily: ``decode(raw,
    lock_token)``, a message from its complete wire bytes and the lock token it came with,
    decoded as its fields are read. ProtocolError at once if the bytes are not a sequence
    of sections or have no sequence number, at the read of a field whose section is
    malformed otherwise."""
    layout = _layout(cls)
    known = layout.decoding
    construct = cls._construct
    numbers = known.annotation_values[SEQUENCE_NUMBER]

    def decode(raw: bytes, lock_token: uuid.UUID | None) -> _R:
        spans = section_spans(raw)
        number = _sequence_number(raw, spans, numbers)
        if number is None:
            fields = _decode_group(raw, spans, layout.annotations, known)
            if fields.get(_AT_ONCE) is None:
                raise ProtocolError(NO_SEQUENCE_NUMBER)
        else:
            fields = {_AT_ONCE: number}
        fields["lock_token"] = lock_token
        return construct(fields, known, (raw, spans))

    return decode


_SEQUENCE_KEY = SEQUENCE_NUMBER.encode()


def _sequence_number(raw: bytes, spans: list[tuple[int, int, int]],
                     readers: Mapping[int, ValueReader]) -> int | None:
    """The sequence number in the one message-annotations section, a map with str8 /
    sym8 keys, in an encoding ``readers`` (the one-pass decoder's) read; ``None`` for
    anything else, which the whole section's decoding reads."""
    found = None
    for code, start, _ in spans:
        if code == MESSAGE_ANNOTATIONS:
            if found is not None:
                return None
            found = start
    if found is None or raw[found + 1] != 0x53:  # a descriptor but smallulong 0x72
        return None
    at = text_map_find(raw, found + 3, _SEQUENCE_KEY)
    if at is None:
        return None
    read = readers.get(raw[at])
    if read is None:
        return None
    number: int = read(raw, at + 1, len(raw))[0]
    return number


def _decode_group(raw: bytes, spans: list[tuple[int, int, int]], group: _Group,
                  known: Decoding) -> dict[str, Any]:
    """The fields of ``group`` (and the sequence number, if the message annotations are
    in it and have it): its sections, in order, decoded by the eager decoder from the
    group's defaults. The fields a section sets depend on no other section: these are
    the values the whole message's decoding gives. ProtocolError naming the section that
    does not decode."""
    codes = group.codes
    chosen = [(start, end) for code, start, end in spans if code in codes]
    if not chosen:
        return own_maps(group.defaults.copy())
    sections = raw if len(chosen) == len(spans) else b"".join(
        [raw[start:end] for start, end in chosen])
    try:
        return _decode(sections, known, group.defaults)
    except ProtocolError as exc:
        for part in group.parts:  # which one: decoding it alone raises, naming it
            _decode_group(raw, spans, part, known)
        raise ProtocolError(f"the {group.name} section does not decode: {exc}") from None


_APPLYING = threading.Lock()


def _fill(message: BaseModel, layout: _Layout, groups: tuple[_Group, ...]) -> None:
    """Decode the ``groups`` of a lazily decoded message not decoded yet (nothing for
    any other message) into its ``__dict__``, and at the first of these the groups whose
    sections are absent (nothing to decode): see the module's theory of operation."""
    pending: Pending | None = getattr(message, "_pending", None)
    if pending is None:
        return
    fields = _instance_dict(message)
    wanted = tuple([group for group in groups if group.fields[0] not in fields])
    if not wanted:
        return
    raw, spans = pending
    present = frozenset(map(_CODE, spans)) if len(fields) == layout.at_once else None
    decoded = _decode_group(raw, spans, _together(layout, wanted, present), layout.decoding)
    decoded.pop(_AT_ONCE, None)  # decoded at once already
    with _APPLYING:
        if not fields.keys().isdisjoint(decoded):  # another thread was first, for some
            decoded = {name: value for name, value in decoded.items() if name not in fields}
        if len(fields) + len(decoded) < layout.total:
            fields.update(decoded)
        elif decoded:  # the last ones: every field, in declaration order
            ordered = layout.decoding.defaults.copy()
            ordered.update(fields)
            ordered.update(decoded)
            fields.clear()
            fields.update(ordered)
            object.__setattr__(message, "_pending", None)  # no longer needed


_CODE = operator.itemgetter(0)


@functools.cache
def _together(layout: _Layout, wanted: tuple[_Group, ...],
              present: frozenset[int] | None) -> _Group:
    """The ``wanted`` groups as one, with (if ``present``, the codes of the sections
    of a message none of whose groups is decoded yet) the groups none of whose sections
    is present: those need no decoding, only their defaults."""
    if present is not None:
        wanted += tuple(group for group in layout.groups
                        if group not in wanted and group.codes.isdisjoint(present))
    if len(wanted) == 1:
        return wanted[0]
    defaults: dict[str, Any] = {}
    for group in wanted:
        defaults.update(group.defaults)
    return _Group(" / ".join(group.name for group in wanted),
                  frozenset().union(*(group.codes for group in wanted)),
                  defaults, tuple(defaults), wanted)


def _complete(message: BaseModel, fields: dict[str, Any]) -> None:
    """Decode whatever a lazily decoded message (``fields``: its instance dict) has left;
    nothing for a message decoded already (every field in its dict)."""
    if len(fields) < len(type(message).__pydantic_fields__):
        layout = _layout(type(message))
        _fill(message, layout, layout.groups)


_MISSING = object()


def _read(message: LazyFields, name: str) -> Any:
    """The value of field ``name`` once its group is decoded (``_MISSING`` if ``name`` is
    not a field the message has left to decode)."""
    layout = _layout(type(message))
    group = layout.by_field.get(name)
    if group is None:
        return _MISSING
    try:
        _fill(message, layout, (group,))
    except ProtocolError as exc:
        raise ProtocolError(f"{type(message).__name__}.{name}: {exc}") from None
    fields = _instance_dict(message)
    value = fields.get(name, _MISSING)
    if value is _MISSING:  # another thread may be putting every field in order
        with _APPLYING:
            value = fields.get(name, _MISSING)
    return value


# pydantic's instance dict is the slot BaseModel declares; LazyFields shadows its
# descriptor with a property, and reads and writes the slot through it.
_INSTANCE_DICT = vars(BaseModel)["__dict__"]
_instance_dict: Callable[[object], dict[str, Any]] = _INSTANCE_DICT.__get__

# To mypy, a BaseModel (the property below overrides its ``__dict__``); at run time, a
# mixin of ReceivedMessage, before Message in its bases.
if TYPE_CHECKING:
    _Base = BaseModel
else:
    _Base = object


class LazyFields(_Base):
    """What a lazily decoded message has of its own: a field missing from its instance
    dict is decoded at its first read (``__getattr__``), and the instance dict itself,
    ``__dict__``, is complete whenever it is asked for."""

    __slots__ = ()

    if not TYPE_CHECKING:  # as BaseModel's: to mypy, it would make any attribute exist

        def __getattr__(self, name: str) -> Any:
            value = _read(self, name)
            return super().__getattr__(name) if value is _MISSING else value

    @property
    def __dict__(self) -> dict[str, Any]:
        """The instance dict, every field decoded first. Whatever reads it whole asks
        for it by name: pydantic's ``==``, hash, ``repr``, iteration, copies, pickling,
        ``model_copy``, pydantic-core's serialization (``model_dump``, a message nested
        in another model) and ``vars()``. Attribute reads go to the dict directly, not
        through here. A message decoded at once pays one length check."""
        fields = _instance_dict(self)
        _complete(self, fields)
        return fields

    @__dict__.setter
    def __dict__(self, fields: dict[str, Any]) -> None:
        # What pydantic itself assigns (a copy's fields, unpickling, model_construct) goes
        # to the slot, as through the descriptor this property shadows.
        _INSTANCE_DICT.__set__(self, fields)
