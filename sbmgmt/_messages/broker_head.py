"""The sections before the bare message (AMQP 1.0 part 3 §3.2: header,
delivery-annotations, message-annotations), encoded with what a broker changes at each
delivery left open: :class:`BrokerHead`.

The encoder (:mod:`.encoder`) writes every message's head through it, and a broker that
keeps a message (the fake's entities) writes it anew at each delivery or peek, before the
bare message it keeps as bytes; :func:`service_annotations` is the broker's annotations of
a received message as one map (``ReceivedMessage.raw_annotations``).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from proton import symbol, timestamp, ubyte, uint, ulong

from ..amqp.encode import encode_value, encoded_list, encoded_map
from ..amqp.sections import DELIVERY_ANNOTATIONS as _DELIVERY_ANNOTATIONS
from ..amqp.sections import HEADER as _HEADER
from ..amqp.sections import MESSAGE_ANNOTATIONS as _MESSAGE_ANNOTATIONS
from ..amqp.values import ms_from_datetime
from .field_views import MessageFields, ServiceFields, service_fields
from .fields import (
    DEAD_LETTER_SOURCE,
    ENQUEUED_TIME,
    LOCKED_UNTIL,
    MESSAGE_STATE,
    PARTITION_KEY,
    SCHEDULED_ENQUEUE_TIME,
    SEQUENCE_NUMBER,
    VIA_PARTITION_KEY,
    MessageState,
)

#: The sections before the bare message (AMQP 1.0 part 3 §3.2), which a broker writes anew.
HEAD = (_HEADER, _DELIVERY_ANNOTATIONS, _MESSAGE_ANNOTATIONS)
#: A section's descriptor as written: 0x00, then its code as a smallulong (0x53).
_DESCRIPTOR = {code: bytes((0x00, 0x53, code)) for code in HEAD}
_NULL = b"\x40"
_NO_HEADER = (None, None, None, None)
_NULLS = [_NULL] * 4
#: The broker's annotations by name, each with its key encoded (a symbol).
_KEY = {name: encode_value(symbol(name))
        for name in (PARTITION_KEY, VIA_PARTITION_KEY, SCHEDULED_ENQUEUE_TIME, SEQUENCE_NUMBER,
                     ENQUEUED_TIME, LOCKED_UNTIL, MESSAGE_STATE, DEAD_LETTER_SOURCE)}


class BrokerHead:
    """A message's head encoded but for what a broker changes at each delivery; the public
    face, with its whole docstring, is :class:`sbmgmt.message.BrokerHead`."""

    __slots__ = ("_after", "_before", "_delivery_annotations", "_header", "_merged",
                 "_pairs", "_received")

    def __init__(self, message: MessageFields, codes: Collection[int] | None = None) -> None:
        codes = HEAD if codes is None else codes
        durable, priority, first = message.durable, message.priority, message.first_acquirer
        ttl = message.time_to_live
        #: The header's fields but the delivery count (its last), encoded; None: not asked.
        self._header: list[bytes] | None = None
        if _HEADER in codes:
            self._header = _NULLS if (durable, priority, ttl, first) == _NO_HEADER else [
                encode_value(durable),
                _NULL if priority is None else encode_value(ubyte(priority)),
                _NULL if ttl is None else encode_value(uint(ttl // timedelta(milliseconds=1))),
                encode_value(first),
            ]
        self._delivery_annotations = b""
        if message.delivery_annotations and _DELIVERY_ANNOTATIONS in codes:
            self._delivery_annotations = _DESCRIPTOR[_DELIVERY_ANNOTATIONS] + encode_value(
                symbol_map(message.delivery_annotations, "delivery-annotations"))
        received = service_fields(message)
        self._received = received is not None
        self._before: list[bytes] | None = None
        self._after: list[bytes] = []
        self._merged: tuple[dict[Any, Any], dict[str, Any], dict[str, Any]] | None = None
        self._pairs = 0
        if _MESSAGE_ANNOTATIONS not in codes:
            return
        # The sender's annotations, then the broker's (dict.update's order: a sender's
        # annotation of a broker's name is replaced where it stands).
        own = (symbol_map(message.annotations, "message-annotations")
               if message.annotations else {})
        before, after = _broker_annotations(message, received)
        if own.keys() & _KEY.keys():
            self._merged = (own, before, after)
            return
        self._before = [encode_value(key) + encode_value(value) for key, value in own.items()]
        self._before += [_KEY[name] + encode_value(value) for name, value in before.items()]
        self._after = [_KEY[name] + encode_value(value) for name, value in after.items()]
        self._pairs = len(own) + len(before) + len(after)

    def sections(self, delivery_count: int | None, locked_until: datetime | None,
                 state: MessageState) -> list[tuple[int, bytes]]:
        """The sections, each with its code, for this delivery.

        Args:
            delivery_count: The header's delivery count (None: none).
            locked_until: The lock's expiry (``x-opt-locked-until``; a received message's
                only: ignored for a message to send).
            state: The state (``x-opt-message-state``, written unless active; a received
                message's only).

        Returns:
            The sections the message has, in order: none without a field to write.
        """
        out: list[tuple[int, bytes]] = []
        header = self._header
        if header is not None and (header is not _NULLS or delivery_count is not None):
            header = [*header,
                      _NULL if delivery_count is None else encode_value(uint(delivery_count))]
            while header[-1] == _NULL:  # trailing absent fields are left out (one is not)
                header.pop()
            out.append((_HEADER, _DESCRIPTOR[_HEADER] + encoded_list(header)))
        if self._delivery_annotations:
            out.append((_DELIVERY_ANNOTATIONS, self._delivery_annotations))
        if self._before is None and self._merged is None:
            return out
        changing = _changing(locked_until, state) if self._received else {}
        if self._merged is not None:
            own, before, after = self._merged
            merged = dict(own)
            for name, value in {**before, **changing, **after}.items():
                merged[symbol(name)] = value
            entries = [encode_value(key) + encode_value(value) for key, value in merged.items()]
            pairs = len(merged)
        elif self._before is not None:
            entries = [*self._before,
                       *[_KEY[name] + encode_value(value) for name, value in changing.items()],
                       *self._after]
            pairs = self._pairs + len(changing)
        else:
            return out
        if pairs:
            out.append((_MESSAGE_ANNOTATIONS,
                        _DESCRIPTOR[_MESSAGE_ANNOTATIONS] + encoded_map(entries, pairs)))
        return out


def _changing(locked_until: datetime | None, state: MessageState) -> dict[str, Any]:
    """The broker's annotations that change from one delivery to the next, by name."""
    found: dict[str, Any] = {}
    if locked_until is not None:
        found[LOCKED_UNTIL] = timestamp(ms_from_datetime(locked_until))
    if state is not MessageState.ACTIVE:
        found[MESSAGE_STATE] = int(state)
    return found


def _broker_annotations(message: MessageFields, received: ServiceFields | None,
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The broker's annotations the message has that do not change from one delivery to
    the next, by name, in the order they are written: those before the lock and the state,
    and those after them (``received``: the message, if it is a received one)."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if message.partition_key is not None:
        before[PARTITION_KEY] = message.partition_key
    if message.via_partition_key is not None:
        before[VIA_PARTITION_KEY] = message.via_partition_key
    if message.scheduled_enqueue_time is not None:
        before[SCHEDULED_ENQUEUE_TIME] = optional_ts(message.scheduled_enqueue_time)
    if received is not None:
        if received.sequence_number is not None:
            before[SEQUENCE_NUMBER] = received.sequence_number
        if received.enqueued_time is not None:
            before[ENQUEUED_TIME] = optional_ts(received.enqueued_time)
        if received.dead_letter_source is not None:
            after[DEAD_LETTER_SOURCE] = received.dead_letter_source
    return before, after


def service_annotations(message: MessageFields) -> dict[symbol, Any]:
    """The broker's annotations the message has (``x-opt-...``), in the order they are
    written."""
    received = service_fields(message)
    before, after = _broker_annotations(message, received)
    if received is not None:
        before.update(_changing(received.locked_until, received.state))
    before.update(after)
    return {symbol(name): value for name, value in before.items()}


def optional_ts(value: datetime | None) -> timestamp | None:
    """A time as an AMQP timestamp (milliseconds since the epoch), None as None."""
    return None if value is None else timestamp(ms_from_datetime(value))


def symbol_map(values: dict[str, Any], section: str) -> dict[Any, Any]:
    """Annotation and footer keys are AMQP symbols (ASCII only) or ulongs (reserved by the
    spec; a decoded one is kept as proton's ``ulong``)."""
    out: dict[Any, Any] = {}
    for key, value in values.items():
        if isinstance(key, int) and not isinstance(key, bool):
            out[ulong(key)] = value
            continue
        if not key.isascii():
            raise ValueError(f"{section} key {key!r} is not ASCII (AMQP symbols are ASCII)")
        out[symbol(key)] = value
    return out
