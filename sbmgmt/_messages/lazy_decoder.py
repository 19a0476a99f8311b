"""Received messages decoded in two steps: the messages of a peek or
receive-by-sequence-number reply (:func:`lazy_decoder`).

Theory of operation
-------------------
A lazily decoded message is a plain :class:`~sbmgmt.message.ReceivedMessage` (its type is
the class itself) made by ``Message._construct`` with two fields in its instance dict and,
in its slot ``_pending``, its own wire bytes (a slice of the reply, never the reply).
What :func:`lazy_decoder`'s function does when the reply arrives:

- the structure of the bytes: every section well delimited, its descriptor a known one,
  its size within the message (:func:`~sbmgmt.amqp.sections.section_spans`), so that
  bytes that are no message fail the call;
- ``sequence_number`` and ``state``, read by :func:`~sbmgmt.amqp.scan.text_map_find_two`
  from the message annotations in one reading of the map (``state`` is ``ACTIVE`` when
  ``x-opt-message-state`` is not there, as the eager decoder has it; a message whose
  annotations that reader declines, or whose state it cannot read, is decoded whole at
  once instead), and ``lock_token``, which comes with the reply's entry: all that the
  reply's checks read, what a reader paging through a queue reads of each message, and
  what a scan for deferred messages reads of every message (the state costs no second
  reading of the map, and the few messages it keeps are decoded when read);
- that the first ``00 53 75`` of the bytes (:data:`DATA_PREFIX`, a data section's
  opening as proton and :mod:`sbmgmt.amqp.encode` write it) opens the body, every section
  of which is such a data section, or that the bytes hold no ``00 53 75`` at all: a
  reader of the body alone (:mod:`.wire_body`, a search of the bodies of an entity) then
  finds it with one ``find`` instead of walking the sections again. A message whose bytes
  hold those three bytes elsewhere (inside a property's value, an amqp-value body) is
  decoded whole at once instead, so the rule holds for every lazily decoded message
  whose bytes decode (one whose bytes do not decode is kept lazy all the same, to raise
  when its fields are read; what is read of its body from the wire is then whatever
  lies at the first ``00 53 75``).

The first read of any other field decodes the rest, the whole message in one pass of the
eager decoder (``_message_common._decode``): the values are those
``ReceivedMessage.from_bytes`` gives. One pass for the rest, not one per section: each
decoding has a fixed cost of about what a small section costs, so a reader of one field
pays about what a reader of all of them pays, and a reader of every field (the Spark
source, the CLI) pays the eager decoding plus the first step.

Pydantic keeps field values in the instance dict and calls ``__getattr__`` only for a
name missing from it, so a read of ``sequence_number`` or ``lock_token`` costs nothing
more and the first read of another field comes to :meth:`LazyFields.__getattr__`.
Whatever reads the instance dict whole asks for it as ``__dict__``: pydantic's ``==``,
hash, ``repr``, iteration, copies, pickling and ``model_copy``, pydantic-core's
serialization (``model_dump``, a message nested in another model) and ``vars()``.
:class:`LazyFields` makes ``__dict__`` a property that decodes the rest before it
answers; attribute reads do not go through it.

Threads: a message resolved on the I/O thread may be read from any thread, from several
at once. The rest is decoded into a new dict outside any lock (every field, in
declaration order, as the eager decoder sets them, with the reply's lock token); under
one lock, the first thread to finish puts that dict in place of the instance dict (one
store: a reader sees the old dict or the new one, and the two agree on what both hold)
and moves the wire bytes from ``_pending`` to ``_source`` (with the new dict, as
``Message.from_bytes`` keeps them: ``to_bytes`` writes the sections still unchanged as
those bytes); a later one finds ``_pending`` empty and keeps what is there.

A message whose bytes do not decode raises :class:`~sbmgmt.errors.ProtocolError` at
the first read of a field it had left (naming the field), and at every such read after;
it keeps its bytes.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from ..amqp.scan import ValueReader, text_map_find_two
from ..amqp.sections import BODIES, DATA, FOOTER, MESSAGE_ANNOTATIONS, prefix, section_spans
from ..errors import ProtocolError
from .common_decoder import _decode, decoding
from .fields import MESSAGE_STATE, NO_SEQUENCE_NUMBER, SEQUENCE_NUMBER, Decoding

__all__ = ["DATA_PREFIX", "LazyFields", "lazy_decoder", "pending_bytes"]

_R = TypeVar("_R", bound=BaseModel)


def lazy_decoder(
    cls: type[_R], construct: Callable[[dict[str, Any], Decoding, bytes | None], _R],
) -> Callable[[bytes, uuid.UUID | None], _R]:
    """What decodes messages of ``cls`` (ReceivedMessage, made by ``construct``, its
    ``_construct``) lazily: ``decode(raw, lock_token)``, a message from its complete wire
    bytes and the lock token it came with, decoded when a field other than these two is
    first read. ProtocolError at once if the bytes are not a sequence of sections or have
    no sequence number."""
    known = decoding(cls)
    numbers = known.annotation_values[SEQUENCE_NUMBER]
    states = known.annotation_values[MESSAGE_STATE]
    active = known.defaults["state"]

    def decode(raw: bytes, lock_token: uuid.UUID | None) -> _R:
        annotations, body_found = _layout(raw, section_spans(raw))
        read = _sequence_number_and_state(raw, annotations, numbers, states, active)
        if read is not None:
            lazy = {"sequence_number": read[0], "state": read[1], "lock_token": lock_token}
            if body_found:
                return construct(lazy, known, raw)
            try:
                fields = _decode(raw, known)  # the body is found otherwise: all now
            except ProtocolError:  # and it does not decode: it raises when read, as any
                return construct(lazy, known, raw)
        else:
            fields = _decode(raw, known)  # an encoding the one-key reader declines: all now
        if fields["sequence_number"] is None:
            raise ProtocolError(NO_SEQUENCE_NUMBER)
        fields["lock_token"] = lock_token
        return construct(fields, known, None)

    return decode


#: A data section's opening bytes (its descriptor, smallulong ``0x75``). In the bytes of
#: a lazily decoded message, the first of them opens its body, every section of which
#: opens so; or they are nowhere (see the theory of operation).
DATA_PREFIX = prefix(DATA)


def _layout(raw: bytes, spans: list[tuple[int, int, int]]) -> tuple[int | None, bool]:
    """Where the one message-annotations section of these bytes (``spans``, their
    sections) starts (None: there is none, or more than one), and whether their first
    :data:`DATA_PREFIX` opens their first body section and every body section opens so,
    or there is none (see the theory of operation). One pass over the sections, and one
    ``find`` over the bytes before the body for a body of one section (the usual)."""
    annotations: int | None = None
    several = more = False
    body = -1
    for code, start, _ in spans:
        if code < DATA:
            if code == MESSAGE_ANNOTATIONS:
                several = annotations is not None
                annotations = start
        elif code != FOOTER:  # a body section
            if body < 0:
                body = start
            else:
                more = True
    if body >= 0 and raw.find(DATA_PREFIX, 0, body + 3) == body:
        found = not more or all(raw.startswith(DATA_PREFIX, start)
                                for code, start, _ in spans if code in BODIES)
    else:
        found = DATA_PREFIX not in raw
    return (None if several else annotations), found


_SEQUENCE_KEY = SEQUENCE_NUMBER.encode()
_STATE_KEY = MESSAGE_STATE.encode()


def _sequence_number_and_state(
    raw: bytes, found: int | None, numbers: Mapping[int, ValueReader],
    states: Mapping[int, ValueReader], active: Any,
) -> tuple[int, Any] | None:
    """The sequence number and the state in the one message-annotations section (at
    ``found``), a map with str8 / sym8 keys, in encodings the one-pass decoder's readers
    read (no state: ``active``); ``None`` for anything else (decoding the whole message
    reads them, or raises)."""
    if found is None or raw[found + 1] != 0x53:  # a descriptor but smallulong 0x72
        return None
    at = text_map_find_two(raw, found + 3, _SEQUENCE_KEY, _STATE_KEY)
    if at is None or at[0] is None:
        return None
    read = numbers.get(raw[at[0]])
    if read is None:
        return None
    number: int = read(raw, at[0] + 1, len(raw))[0]
    if at[1] is None:
        return number, active
    read_state = states.get(raw[at[1]])
    if read_state is None:
        return None
    try:
        return number, read_state(raw, at[1] + 1, len(raw))[0]
    except ProtocolError:  # an unknown state: the whole decoding says so
        return None


_COMPLETING = threading.Lock()

# pydantic's instance dict is the slot BaseModel declares; LazyFields shadows its
# descriptor with a property, and reads and writes the slot through it.
_INSTANCE_DICT = vars(BaseModel)["__dict__"]
_instance_dict: Callable[[object], dict[str, Any]] = _INSTANCE_DICT.__get__
_FIELDS_SET = vars(BaseModel)["__pydantic_fields_set__"]
_fields_set: Callable[[object], set[str]] = _FIELDS_SET.__get__


def pending_bytes(message: object) -> bytes | None:
    """A lazily decoded message's wire bytes until the rest is decoded; None for any
    other message (its slot is unset: made another way, it was never lazy; or it has no
    such slot: not a ReceivedMessage)."""
    kind = type(message)
    slot = _PENDING_SLOTS.get(kind, _UNKNOWN)
    if slot is _UNKNOWN:  # looked up once a type (a search asks for every message)
        slot = _PENDING_SLOTS[kind] = getattr(kind, "_pending", None)
    try:
        raw: bytes | None = slot.__get__(message) if slot is not None else None
    except AttributeError:
        return None
    return raw


_UNKNOWN: Any = object()
#: Each type's ``_pending`` slot descriptor (None: the type has none).
_PENDING_SLOTS: dict[type, Any] = {}


def _complete(message: LazyFields) -> None:
    """Decode the rest of a lazily decoded message (nothing for any other message): see
    the module's theory of operation."""
    raw = pending_bytes(message)
    if raw is None:
        return
    known = decoding(type(message))  # what reaches here is one
    try:
        fields = _decode(raw, known)
    except ProtocolError as exc:
        raise ProtocolError(f"the message does not decode: {exc}") from None
    with _COMPLETING:
        if pending_bytes(message) is None:  # another thread was first
            return
        # the values read at once, as they were read (the same objects), in their places
        fields.update(_instance_dict(message))
        _INSTANCE_DICT.__set__(message, fields)
        # the bytes and what they decoded to, as Message.from_bytes keeps them (to_bytes
        # writes the sections still unchanged as these bytes)
        type(message)._source.__set__(message, (raw, fields))
        object.__setattr__(message, "_pending", None)


# To mypy, a BaseModel (the property below overrides its ``__dict__``); at run time, a
# mixin of ReceivedMessage, before Message in its bases.
if TYPE_CHECKING:
    _Base = BaseModel
else:
    _Base = object


class LazyFields(_Base):
    """What a lazily decoded message has of its own: a field missing from its instance
    dict has the rest of the message decoded at its first read (``__getattr__``), and
    the instance dict itself, ``__dict__``, is complete whenever it is asked for."""

    __slots__ = ()

    if TYPE_CHECKING:  # the slots are ReceivedMessage's and Message's (two bases with slots
        _pending: Any  # cannot mix)
        _source: Any

    if not TYPE_CHECKING:  # as BaseModel's: to mypy, it would make any attribute exist

        def __getattr__(self, name: str) -> Any:
            if name in type(self).__pydantic_fields__:
                try:
                    _complete(self)
                except ProtocolError as exc:
                    raise ProtocolError(f"{type(self).__name__}.{name}: {exc}") from None
                fields = _instance_dict(self)
                if name in fields:
                    return fields[name]
            return super().__getattr__(name)

    @property
    def __dict__(self) -> dict[str, Any]:
        """The instance dict, every field decoded first. Whatever reads it whole asks
        for it by name: pydantic's ``==``, hash, ``repr``, iteration, copies, pickling,
        ``model_copy``, pydantic-core's serialization (``model_dump``, a message nested
        in another model) and ``vars()``. Attribute reads go to the dict directly, not
        through here. A message decoded at once pays one slot read."""
        _complete(self)
        return _instance_dict(self)

    @__dict__.setter
    def __dict__(self, fields: dict[str, Any]) -> None:
        # What pydantic itself assigns (a copy's fields, unpickling, model_construct) goes
        # to the slot, as through the descriptor this property shadows.
        _INSTANCE_DICT.__set__(self, fields)

    @property
    def __pydantic_fields_set__(self) -> set[str]:
        """The fields set: every field, as for any decoded message, made at its first
        read. A lazily decoded message leaves the slot unset (a set per message is a
        third of the objects the garbage collector tracks for a page of them); pydantic
        and pydantic-core read it by name (``model_fields_set``, ``exclude_unset``,
        copies, pickling), so they come here."""
        try:
            return _fields_set(self)
        except AttributeError:
            names = decoding(type(self)).names.copy()
            _FIELDS_SET.__set__(self, names)
            return names

    @__pydantic_fields_set__.setter
    def __pydantic_fields_set__(self, names: set[str]) -> None:
        _FIELDS_SET.__set__(self, names)
