"""What an entity holds, as records: its settings, its stored messages and the state each
is in, its sessions (state, lock owner, lock expiry) and the counts it reports.

:class:`~fakes._entity.Entity` changes them (under the namespace lock); nothing here
knows about the others' bookkeeping. :meth:`StoredMessage.wire` caches a message's
encoding until what it depends on changes (receivers and peeks send the same bytes).
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol

from sbmgmt.amqp.sections import PROPERTIES, section_spans
from sbmgmt.amqp.values import ms_from_datetime
from sbmgmt.message import BrokerHead, MessageState, ReceivedMessage

__all__ = [
    "EntitySettings",
    "KeptBytes",
    "MessageCounts",
    "SessionOwner",
    "SessionRecord",
    "State",
    "StoredMessage",
    "as_datetime",
]


class State(enum.Enum):
    """Where an accepted message is."""

    ACTIVE = "active"
    LOCKED = "locked"
    DEFERRED = "deferred"
    SCHEDULED = "scheduled"
    DEAD_LETTERED = "dead_lettered"
    COMPLETED = "completed"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    #: Deleted by com.microsoft:batch-delete-messages.
    DELETED = "deleted"
    #: Accepted and dropped by duplicate detection (never stored, so never in another state).
    DUPLICATE = "duplicate"

    # Members are singletons compared by identity: hash them in C (Enum's hash is Python
    # code, and every state change counts states in a Counter).
    __hash__ = object.__hash__


# Module constants for the hot paths (an Enum member looked up on its class costs more).
_SCHEDULED = State.SCHEDULED
_AS_SCHEDULED = MessageState.SCHEDULED
_AS_DEFERRED = MessageState.DEFERRED
_AS_ACTIVE = MessageState.ACTIVE


@dataclass(frozen=True)
class EntitySettings:
    """The properties of a queue or subscription that change its behaviour."""

    requires_session: bool = False
    lock_duration: float = 60.0
    max_delivery_count: int = 10
    default_ttl: float | None = None
    dead_lettering_on_expiration: bool = False
    forward_to: str | None = None
    forward_dead_lettered_messages_to: str | None = None
    #: ``DuplicateDetectionHistoryTimeWindow`` in seconds when ``RequiresDuplicateDetection``.
    duplicate_detection_window: float | None = None


@dataclass(frozen=True)
class MessageCounts:
    """What the administration API reports of an entity's messages (its ``CountDetails``).

    ``active`` counts what a receiver can get or holds (available, locked, deferred), as the
    service's ``ActiveMessageCount`` does; the fake forwards at once, so nothing ever waits in
    a transfer queue and the two transfer counts stay 0.
    """

    active: int = 0
    dead_letter: int = 0
    scheduled: int = 0
    transfer: int = 0
    transfer_dead_letter: int = 0
    #: The encoded size of every message counted above.
    size_in_bytes: int = 0

    @property
    def total(self) -> int:
        """``MessageCount``: every message the entity and its dead-letter queue hold."""
        return (self.active + self.dead_letter + self.scheduled + self.transfer
                + self.transfer_dead_letter)


@dataclass(frozen=True)
class SessionOwner:
    """Who holds a session lock: a receiver link on a connection."""

    connection: int
    link: int


class KeptBytes(Protocol):
    """Where a message read back from a data directory has its bytes (an entity's rows)."""

    def read(self, sequence_number: int) -> bytes:
        """The bytes of the message with that sequence number, as they were written."""


class StoredMessage:
    """One message and its mutable state.

    ``content`` is the message as the entity keeps it. One read back from a data directory
    (:meth:`kept`) holds no bytes at first: a restart reads what the entity needs of each
    message (its sequence number, session id, enqueued time, state, size) from the
    database's columns, and ``content`` reads the message's bytes and decodes them at its
    first read: when it is delivered, peeked or changed (:mod:`fakes._data_dir`).
    """

    __slots__ = ("_content", "_enqueued_ms", "_kept", "_size", "_source", "_wire",
                 "deferred", "delivery_count", "expires_at", "lock_token", "locked_until",
                 "sequence_number", "session_id", "state")

    def __init__(self, content: ReceivedMessage, state: State, *, delivery_count: int = 0,
                 deferred: bool = False, expires_at: float | None = None) -> None:
        self._content: ReceivedMessage | None = content
        #: Where a message read back and not decoded yet has its bytes (else None).
        self._source: KeptBytes | None = None
        self._size = 0  # the bytes' length, while they are the source's
        self._enqueued_ms: int | None = None
        #: The entity's sequence number for this message.
        self.sequence_number = int(content.sequence_number or 0)
        #: The message's session id (AMQP group-id).
        self.session_id = content.session_id
        self.state = state
        self.delivery_count = delivery_count
        self.deferred = deferred
        self.lock_token: uuid.UUID | None = None
        self.locked_until: float | None = None
        self.expires_at = expires_at
        #: (what the encoding depends on..., the bytes): :meth:`wire` encodes each
        #: rendering once.
        self._wire: tuple[ReceivedMessage, int, float | None, MessageState, bytes] | None = None
        #: (content, its head to render, the bytes of its sections from the properties
        #: on): what no rendering changes, made at the first.
        self._kept: tuple[ReceivedMessage, BrokerHead, bytes] | None = None

    @classmethod
    def kept(cls, source: KeptBytes, size: int, sequence_number: int, session_id: str | None,
             enqueued_ms: int | None, state: State, delivery_count: int, deferred: bool,
             expires_at: float | None, /) -> StoredMessage:
        """A message read back from a data directory: its ``size`` bytes are read from
        ``source`` and decoded at the first read of :attr:`content`; the other arguments
        are what those bytes hold that the entity reads of every message."""
        stored = cls.__new__(cls)
        stored._content = None
        stored._source = source
        stored._size = size
        stored._enqueued_ms = enqueued_ms
        stored.sequence_number = sequence_number
        stored.session_id = session_id
        stored.state = state
        stored.delivery_count = delivery_count
        stored.deferred = deferred
        stored.lock_token = stored.locked_until = None
        stored.expires_at = expires_at
        stored._wire = stored._kept = None
        return stored

    @property
    def content(self) -> ReceivedMessage:
        """The message (one read back is read and decoded at the first read)."""
        content = self._content
        if content is None:
            assert self._source is not None
            content = ReceivedMessage.from_bytes(self._source.read(self.sequence_number))
            self._content, self._source = content, None
        return content

    @content.setter
    def content(self, content: ReceivedMessage) -> None:
        self._content = content
        self._source = None
        self._enqueued_ms = None
        self.sequence_number = int(content.sequence_number or 0)
        self.session_id = content.session_id

    @property
    def undecoded(self) -> bool:
        """Whether the message was read back and its bytes are still only the source's."""
        return self._content is None

    def size(self) -> int:
        """The message's encoded size as the administration API counts it: its rendering's
        (one read back and not decoded yet: the bytes it was kept as, which differ from a
        rendering by the few bytes of a delivery count, a lock or a state; reading a million
        messages to count them would hold the namespace for half a minute)."""
        return len(self.wire()) if self._content is not None else self._size

    @property
    def enqueued_ms(self) -> int | None:
        """The content's enqueued time in milliseconds since the epoch (as on the wire)."""
        if self._enqueued_ms is None:
            when = self.content.enqueued_time
            self._enqueued_ms = None if when is None else ms_from_datetime(when)
        return self._enqueued_ms

    def __repr__(self) -> str:
        return (f"StoredMessage(sequence_number={self.sequence_number}, state={self.state}, "
                f"delivery_count={self.delivery_count}, deferred={self.deferred})")

    def _message_state(self) -> MessageState:
        if self.state is _SCHEDULED:
            return _AS_SCHEDULED
        return _AS_DEFERRED if self.deferred else _AS_ACTIVE

    def render(self) -> ReceivedMessage:
        """The message as it goes on the wire now (delivery count, lock, state)."""
        return self.content.model_copy(update={
            "delivery_count": self.delivery_count,
            "locked_until": None if self.locked_until is None else as_datetime(self.locked_until),
            "lock_token": self.lock_token,
            "state": self._message_state(),
        })

    def wire(self) -> bytes:
        """``render().to_bytes()``, encoded again only when the rendering changes.

        The lock token is not part of the encoding (it travels as the delivery tag or
        beside the message), so every other input of :meth:`render` is the cache key. A
        rendering changes the header and the annotations only: they are written from the
        content's :class:`~sbmgmt.message.BrokerHead`, and the sections after them (the bare
        message, AMQP 1.0 part 3 §3.2) are the content's own bytes, cut once.
        """
        state = self._message_state()
        cached = self._wire
        if cached is not None:
            content, delivery_count, locked_until, was, encoded = cached
            if (content is self.content and delivery_count == self.delivery_count
                    and locked_until == self.locked_until and was is state):
                return encoded
        kept = self._kept
        if kept is None or kept[0] is not self.content:
            kept = self._kept = (self.content, BrokerHead(self.content),
                                 _bare_message(self.content.to_bytes()))
        locked = None if self.locked_until is None else as_datetime(self.locked_until)
        head = kept[1].sections(self.delivery_count, locked, state)
        encoded = b"".join([section for _, section in head]) + kept[2]
        self._wire = (self.content, self.delivery_count, self.locked_until, state, encoded)
        return encoded


def _bare_message(encoded: bytes) -> bytes:
    """The sections of an encoded message from its properties on: the bare message and
    its footer (AMQP 1.0 part 3 §3.2), which no rendering changes."""
    start = next((start for code, start, _ in section_spans(encoded) if code >= PROPERTIES),
                 len(encoded))
    return encoded[start:]


@dataclass
class SessionRecord:
    """A session's state, lock and message count."""

    session_id: str
    state: bytes | None = None
    owner: SessionOwner | None = None
    locked_until: float = 0.0
    last_updated: float = 0.0
    message_count: int = 0
    lock_tokens: set[uuid.UUID] = field(default_factory=set)

    def held(self, now: float) -> bool:
        """Whether a receiver holds the lock now."""
        return self.owner is not None and self.locked_until > now


def as_datetime(seconds: float) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc)
