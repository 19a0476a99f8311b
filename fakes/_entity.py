"""One queue or subscription (or dead-letter queue): its messages, locks and sessions.

Not thread-safe: the namespace calls it under one lock. Every method takes ``now``
(seconds since the epoch, from the fake's clock). Each accepted message is in exactly
one :class:`~fakes._entity_state.State`; :meth:`Entity.accounting` counts them. Timed work
(locks, scheduled messages, TTL, session locks) sits in heaps with lazy deletion, so
nothing scans all messages. The records it keeps are in :mod:`fakes._entity_state`, its
session locks in :mod:`fakes._session_locks`, its rules (a subscription's) in
:mod:`fakes._entity_rules`, its receive side (the next message, deferred messages, the
settlements of a locked message) in :mod:`fakes._receiving`.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import math
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from sbmgmt.message import Message, as_received, encoded_as_now, same_encoding

from ._duplicates import DuplicateDetector, update_window
from ._entity_rules import EntityRules, StoredRule
from ._entity_state import (
    EntitySettings,
    MessageCounts,
    SessionRecord,
    State,
    StoredMessage,
    as_datetime,
)
from ._errors import (
    ArgumentError,
    FakeServiceError,
    MessageNotFound,
    NotAllowed,
)
from ._journal import NO_JOURNAL, Journal
from ._receiving import Receiving
from ._rules import default_rule
from ._session_locks import SessionLocks

__all__ = ["MAX_DELIVERY_COUNT_EXCEEDED", "Entity"]

_LOG = logging.getLogger("fakes.entity")

MAX_DELIVERY_COUNT_EXCEEDED = "MaxDeliveryCountExceeded"
TTL_EXPIRED = "TTLExpiredException"
#: A copy without a session id in a session subscription: the service's dead-letter reason
#: and description (azure-service-bus issue 196).
SESSION_ID_NULL = "Session id is null."
SESSION_ID_NULL_DESCRIPTION = (
    "Session enabled entity doesn't allow a message whose session identifier is null.")

_TERMINAL = frozenset({State.DEAD_LETTERED, State.COMPLETED, State.EXPIRED, State.CANCELLED,
                       State.DELETED})
_PEEKABLE = frozenset({State.ACTIVE, State.LOCKED, State.DEFERRED, State.SCHEDULED})
_ACTIVE, _DEFERRED = State.ACTIVE, State.DEFERRED


def _forwarded(stored: StoredMessage, reason: str | None, description: str | None) -> Message:
    """A dead-lettered message as it is forwarded: its own fields, with the reason and
    description as the application properties the service uses for them."""
    fields = {name: getattr(stored.content, name) for name in Message.model_fields}
    properties = dict(stored.content.application_properties)
    for key, value in (("DeadLetterReason", reason), ("DeadLetterErrorDescription", description)):
        if value is not None:
            properties[key] = value
    fields["application_properties"] = properties
    return same_encoding(Message(**fields), stored.content)


def _seconds(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


class Entity(Receiving, SessionLocks, EntityRules):
    """A queue, a subscription or a dead-letter queue."""

    def __init__(
        self,
        path: str,
        settings: EntitySettings,
        *,
        dead_letter_queue: Entity | None = None,
        rules: list[StoredRule] | None = None,
    ) -> None:
        self.path = path
        self.settings = settings
        self.dead_letter_queue = dead_letter_queue
        #: Where dead-lettered messages go instead of the dead-letter queue
        #: (``ForwardDeadLetteredMessagesTo``; set by the store, which can send).
        self.forward_dead_letters: Callable[[Message, float], object] | None = None
        window = settings.duplicate_detection_window
        self._duplicates = None if window is None else DuplicateDetector(window)
        #: A subscription's rules by name, changed only through :class:`EntityRules`.
        self._rules: dict[str, StoredRule] = {
            stored.name: stored
            for stored in (rules if rules is not None else [StoredRule(default_rule())])}
        self.sessions: dict[str, SessionRecord] = {}
        self._messages: dict[int, StoredMessage] = {}
        self._order: list[int] = []
        self._next_sequence = 1
        self._ready: dict[str | None, list[int]] = {}
        # Locked messages by their token's integer value (hashed and compared in C, unlike
        # uuid.UUID's Python-level __hash__ / __eq__ / __lt__: a renew of thousands counts).
        self._locks: dict[int, StoredMessage] = {}
        self._lock_due: list[tuple[float, int]] = []
        self._scheduled_due: list[tuple[float, int]] = []
        self._ttl_due: list[tuple[float, int]] = []
        self._session_due: list[tuple[float, str]] = []
        #: (enqueued time in ms, sequence number) of every message, sorted: batch delete's
        #: "oldest first". Built at the first batch delete, then kept (None until then).
        self._by_enqueued: list[tuple[int, int]] | None = None
        #: The earliest deadline in the heaps above (``inf`` when they are empty).
        self.next_due = math.inf
        self._counts: Counter[State] = Counter()
        self._accepted = 0
        #: When it was created, last changed and last sent to or received from (epoch
        #: seconds): the administration API's CreatedAt, UpdatedAt and AccessedAt.
        self.created_at = self.updated_at = self.accessed_at = 0.0
        #: Properties the fake keeps and reports but does not act on, by the administration
        #: API's element name (UserMetadata, MaxSizeInMegabytes, Status...).
        self.described: dict[str, str] = {}
        #: Told of every change (a data directory's: :mod:`fakes._data_dir`; else nothing).
        self.journal: Journal = NO_JOURNAL

    def _due(self, heap: list[tuple[float, Any]], entry: tuple[float, Any]) -> None:
        """Push a deadline onto one of the timed-work heaps."""
        heapq.heappush(heap, entry)
        if entry[0] < self.next_due:
            self.next_due = entry[0]

    # --- arrival ---------------------------------------------------------------

    def reserve_sequence_numbers(self, count: int) -> list[int]:
        """Sequence numbers for messages accepted later (:meth:`accept`'s ``sequence``):
        a transaction's scheduled messages get theirs when they are staged."""
        first = self._next_sequence
        self._next_sequence += count
        self.journal.changed(self)
        return list(range(first, first + count))

    def accept(self, message: Message, now: float, sequence: int | None = None) -> int:
        """Take a new message: active, or scheduled if its enqueue time is in the future.

        ``sequence``: one :meth:`reserve_sequence_numbers` gave (else the next one).
        Returns its sequence number; with duplicate detection, a message whose message-id
        was seen within the window is counted as ``duplicate`` and dropped, and the
        sequence number is the kept copy's.
        """
        self.accessed_at = now
        if self._duplicates is not None:
            original = self._duplicates.original(message.message_id, now)
            if original is not None:
                self._accepted += 1
                self._counts[State.DUPLICATE] += 1
                return original
        if sequence is None:
            sequence = self._next_sequence
            self._next_sequence += 1
        scheduled = message.scheduled_enqueue_time
        due = None if scheduled is None else _seconds(scheduled)
        enqueued = now if due is None or due <= now else due
        fields: dict[str, Any] = {"sequence_number": sequence,
                                  "enqueued_time": as_datetime(enqueued)}
        if message.message_id is None:  # the broker gives every message an id
            fields["message_id"] = uuid.uuid4().hex
        # What it was sent, kept: the sections the broker does not change stay the bytes they
        # came as (as_received; AMQP 1.0 part 3 §3.2, the bare message is immutable).
        content = as_received(message, **fields)
        stored = StoredMessage(content, State.SCHEDULED)
        ttl = self._ttl(message)
        if ttl is not None:
            stored.expires_at = enqueued + ttl
        self._insert(stored, now)
        if self.settings.requires_session and message.session_id is None:
            # What reaches a session entity without a session id other than by a send to it
            # (a topic's copy, a forwarded message) is dead-lettered, in the service's words
            # (azure-service-bus issue 196; azure-sdk-for-js pull request 1153).
            self._dead_letter(stored, SESSION_ID_NULL, SESSION_ID_NULL_DESCRIPTION, now)
        elif due is not None and due > now:
            self._due(self._scheduled_due, (due, sequence))
        else:
            self._activate(stored, now)
        if self._duplicates is not None:
            self._duplicates.note(message.message_id, now, sequence)
        return sequence

    def check_sessions(self, messages: list[Message]) -> None:
        """Refuse messages sent to this entity (a send, a schedule) when it requires
        sessions and one has no session id, in the service's words (the .NET client raises
        them as an ``InvalidOperationException``, its exception for ``amqp:not-allowed``:
        NServiceBus issue 5364, JasperFx/wolverine issue 264)."""
        if self.settings.requires_session and any(m.session_id is None for m in messages):
            raise NotAllowed(
                "The SessionId was not set on a message, and it cannot be sent to the entity. "
                "Entities that have session support enabled can only receive messages that "
                "have the SessionId set to a valid value.")

    def accept_dead_letter(self, source: StoredMessage, reason: str | None,
                           description: str | None, source_path: str, now: float) -> None:
        """Take a message dead-lettered from ``source_path`` (keeps its sequence number)."""
        # Written once, as the service writes a dead letter, not at every peek and receive.
        content = encoded_as_now(source.content.model_copy(update={
            "dead_letter_reason": reason,
            "dead_letter_description": description,
            "dead_letter_source": source_path,
            "lock_token": None,
            "locked_until": None,
        }))
        stored = StoredMessage(content, State.SCHEDULED, delivery_count=source.delivery_count)
        self._insert(stored, now)
        self._activate(stored, now)

    def _ttl(self, message: Message) -> float | None:
        ttls = [t for t in (
            None if message.time_to_live is None else message.time_to_live.total_seconds(),
            self.settings.default_ttl,
        ) if t is not None and t > 0]
        return min(ttls) if ttls else None

    def _insert(self, stored: StoredMessage, now: float) -> None:
        sequence = stored.sequence_number
        self._messages[sequence] = stored
        if not self._order or self._order[-1] < sequence:
            self._order.append(sequence)
        else:
            bisect.insort(self._order, sequence)
        self._accepted += 1
        self._counts[stored.state] += 1
        record = self._session(stored)
        if record is not None:
            record.message_count += 1
            record.last_updated = now
        if stored.expires_at is not None:
            self._due(self._ttl_due, (stored.expires_at, sequence))
        if self._by_enqueued is not None:
            self._index_enqueued(stored)
        self.journal.message(self, stored)

    def _session_key(self, stored: StoredMessage) -> str | None:
        return stored.session_id if self.settings.requires_session else None

    def _session(self, stored: StoredMessage) -> SessionRecord | None:
        key = self._session_key(stored)
        if key is None:
            return None
        record = self.sessions.get(key)
        if record is None:
            record = self.sessions[key] = SessionRecord(key)
        return record

    # --- state changes -----------------------------------------------------------

    def _set_state(self, stored: StoredMessage, state: State) -> None:
        self._counts[stored.state] -= 1
        self._counts[state] += 1
        stored.state = state
        self.journal.message(self, stored)
        if state in _TERMINAL:
            del self._messages[stored.sequence_number]
            record = self._session(stored)
            if record is not None:
                record.message_count -= 1
            self._compact_order()

    def _compact_order(self) -> None:
        """Drop removed messages from the sequence order once they are half of it."""
        if len(self._order) > 64 and len(self._messages) * 2 < len(self._order):
            self._order = [s for s in self._order if s in self._messages]

    def _activate(self, stored: StoredMessage, now: float) -> None:
        if stored.expires_at is not None and stored.expires_at <= now:
            self._expire(stored, now)
            return
        self._set_state(stored, State.DEFERRED if stored.deferred else State.ACTIVE)
        if not stored.deferred:
            heapq.heappush(self._ready.setdefault(self._session_key(stored), []),
                           stored.sequence_number)

    def _expire(self, stored: StoredMessage, now: float) -> None:
        if self.settings.dead_lettering_on_expiration:
            self._dead_letter(stored, TTL_EXPIRED, "The message expired.", now)
        else:
            self._set_state(stored, State.EXPIRED)

    def _dead_letter(self, stored: StoredMessage, reason: str | None,
                     description: str | None, now: float) -> None:
        self._set_state(stored, State.DEAD_LETTERED)
        if self.forward_dead_letters is not None:
            try:
                self.forward_dead_letters(_forwarded(stored, reason, description), now)
                return
            except FakeServiceError as exc:  # no such target (any more): keep it here
                _LOG.warning("dead-lettered message %d of %s not forwarded: %s",
                             stored.sequence_number, self.path, exc.description)
        if self.dead_letter_queue is not None:
            self.dead_letter_queue.accept_dead_letter(stored, reason, description, self.path, now)

    def _unlock(self, stored: StoredMessage) -> None:
        if stored.lock_token is not None:
            self._locks.pop(stored.lock_token.int, None)
            record = self._session(stored)
            if record is not None:
                record.lock_tokens.discard(stored.lock_token)
        stored.lock_token = None
        stored.locked_until = None

    def _release(self, stored: StoredMessage, now: float) -> None:
        """Give a locked message back (abandon, lock expiry): one more failed delivery."""
        self._unlock(stored)
        if not self._counted(stored, now):
            self._activate(stored, now)

    def _counted(self, stored: StoredMessage, now: float) -> bool:
        """Count one more delivery of an unlocked message; whether that dead-lettered it
        (MaxDeliveryCount reached)."""
        stored.delivery_count += 1
        # A dead-letter queue (the one entity without one of its own) keeps its messages
        # whatever their delivery count: the service never dead-letters a dead letter, and
        # here it would have nowhere to go.
        if (self.dead_letter_queue is None
                or stored.delivery_count < self.settings.max_delivery_count):
            return False
        self._dead_letter(
            stored, MAX_DELIVERY_COUNT_EXCEEDED,
            f"Message could not be consumed after {self.settings.max_delivery_count} "
            "delivery attempts.", now)
        return True

    # --- browsing and scheduling -----------------------------------------------------

    def peek(self, from_sequence: int, count: int,
             session_id: str | None = None) -> list[StoredMessage]:
        """Up to ``count`` messages from ``from_sequence`` on, not settled, in order."""
        out: list[StoredMessage] = []
        if count <= 0:
            return out
        order, messages = self._order, self._messages
        for index in range(bisect.bisect_left(order, from_sequence), len(order)):
            stored = messages.get(order[index])
            if stored is None or stored.state not in _PEEKABLE:
                continue
            if session_id is not None and stored.session_id != session_id:
                continue
            out.append(stored)
            if len(out) == count:
                break
        return out

    def cancel_scheduled(self, sequence_numbers: list[int]) -> None:
        """Drop scheduled messages, all or none: a number that is not a scheduled message
        refuses the request (``MessageNotFound`` naming those numbers, as the service)."""
        found = [self._messages.get(sequence) for sequence in sequence_numbers]
        missing = [sequence for sequence, stored in zip(sequence_numbers, found, strict=True)
                   if stored is None or stored.state is not State.SCHEDULED]
        if missing:
            raise MessageNotFound.not_scheduled(missing)
        for stored in found:
            if stored is not None and stored.state is State.SCHEDULED:  # a number given twice
                self._set_state(stored, State.CANCELLED)

    # --- batch delete ---------------------------------------------------------------------

    def batch_delete(self, count: int, before_ms: int, session_id: str | None,
                     now: float) -> int:
        """Delete up to ``count`` of the oldest available messages enqueued before
        ``before_ms`` (milliseconds since the epoch, the wire's precision: a message's
        enqueued time is compared as its ``x-opt-enqueued-time`` says it), of
        ``session_id`` only if given; returns how many.

        What is eligible (docs/fake.md, "Batch delete"): an active message, oldest enqueued
        time first (ties by sequence number). Never a locked message ("Locked messages are
        not eligible for removal": the service's batch-delete page), a deferred or a
        scheduled one; without ``session_id``, never a message of a session a receiver
        holds locked. An expired message found on the way expires as it would have.
        """
        self.accessed_at = now
        index = self._enqueued_index()
        messages = self._messages
        sessions = self.sessions if self.settings.requires_session else None
        active = State.ACTIVE
        taken: list[int] = []
        for at, sequence in index:
            if len(taken) == count or at >= before_ms:
                break
            stored = messages.get(sequence)
            if stored is None or stored.state is not active:
                continue
            if session_id is not None:
                if stored.session_id != session_id:
                    continue
            elif sessions is not None:
                record = sessions.get(stored.session_id or "")
                if record is not None and record.held(now):
                    continue
            if stored.expires_at is not None and stored.expires_at <= now:
                self._expire(stored, now)
                continue
            taken.append(sequence)
        # What _set_state(stored, DELETED) does, once for the batch (a purge deletes many).
        deleted_state = State.DELETED
        journal = self.journal
        for sequence in taken:
            stored = messages.pop(sequence)
            stored.state = deleted_state
            journal.message(self, stored)
            if sessions is not None:
                record = sessions.get(stored.session_id or "")
                if record is not None:
                    record.message_count -= 1
        deleted = len(taken)
        self._counts[active] -= deleted
        self._counts[deleted_state] += deleted
        self._compact_order()
        gone = 0  # the index's prefix of removed messages, dropped so the next walk skips it
        while gone < len(index) and index[gone][1] not in messages:
            gone += 1
        del index[:gone]
        return deleted

    def _enqueued_index(self) -> list[tuple[int, int]]:
        """The (enqueued time in ms, sequence number) index, built now if it is not yet."""
        if self._by_enqueued is None:
            self._by_enqueued = sorted(
                (at, sequence) for sequence, stored in self._messages.items()
                if (at := stored.enqueued_ms) is not None)
        return self._by_enqueued

    def _index_enqueued(self, stored: StoredMessage) -> None:
        """Add a new message to the index (rebuilt when removed messages fill half of it)."""
        index = self._by_enqueued
        assert index is not None
        if len(index) > 2 * len(self._messages) + 1024:
            self._by_enqueued = None
            self._enqueued_index()
            return
        when = stored.enqueued_ms
        if when is None:
            return
        entry = (when, stored.sequence_number)
        if not index or index[-1] < entry:
            index.append(entry)
        else:
            bisect.insort(index, entry)

    # --- time ---------------------------------------------------------------------------

    def process_due(self, now: float) -> float | None:
        """Apply everything due by ``now``; return the next deadline, if any."""
        if now >= self.next_due:
            self._apply_due(now)
        return None if self.next_due == math.inf else self.next_due

    def _apply_due(self, now: float) -> None:
        while self._scheduled_due and self._scheduled_due[0][0] <= now:
            _, sequence = heapq.heappop(self._scheduled_due)
            stored = self._messages.get(sequence)
            if stored is not None and stored.state is State.SCHEDULED:
                self._activate(stored, now)
        while self._lock_due and self._lock_due[0][0] <= now:
            due, token = heapq.heappop(self._lock_due)
            stored = self._locks.get(token)
            if stored is not None and stored.locked_until == due:
                self._release(stored, now)
        self._expire_session_locks(now)
        while self._ttl_due and self._ttl_due[0][0] <= now:
            _, sequence = heapq.heappop(self._ttl_due)
            stored = self._messages.get(sequence)
            if stored is not None and stored.state in (State.ACTIVE, State.DEFERRED):
                self._expire(stored, now)
        heads = [h[0][0] for h in (self._scheduled_due, self._lock_due, self._session_due,
                                   self._ttl_due) if h]
        self.next_due = min(heads, default=math.inf)

    # --- a data directory ------------------------------------------------------------------

    @property
    def next_sequence(self) -> int:
        """The sequence number the next message gets."""
        return self._next_sequence

    @property
    def duplicates(self) -> DuplicateDetector | None:
        """The message-ids seen within the duplicate detection window (None: no detection)."""
        return self._duplicates

    def restore(self, messages: list[StoredMessage], next_sequence: int, now: float) -> None:
        """Take back what a data directory kept (:mod:`fakes._data_dir`), each message in the
        state it was written in, except that no lock survives: a message locked then comes
        back as its lock's expiry gives it back (available, one more delivery counted, or
        dead-lettered at MaxDeliveryCount).

        ``messages`` come in sequence order: an active or deferred message that has not
        expired, after all the entity holds, is taken as :meth:`_insert` and
        :meth:`_activate` would take it, without the steps that cannot apply to it (its
        sequence number is the greatest yet, so it goes at the end of the order and of its
        session's ready heap); a restart makes a million of them."""
        held, order, counts, journal = self._messages, self._order, self._counts, self.journal
        sessions = self.settings.requires_session
        taken = 0  # by the first branch (_insert counts the others)
        for stored in messages:
            state = stored.state
            stored.lock_token = stored.locked_until = None
            sequence, expires = stored.sequence_number, stored.expires_at
            if ((state is _ACTIVE or state is _DEFERRED) and (expires is None or expires > now)
                    and (not order or order[-1] < sequence) and self._by_enqueued is None):
                held[sequence] = stored
                order.append(sequence)
                counts[state] += 1
                record = self._session(stored) if sessions else None
                if record is not None:
                    record.message_count += 1
                    record.last_updated = now
                if expires is not None:
                    self._due(self._ttl_due, (expires, sequence))
                if state is _ACTIVE:
                    self._ready.setdefault(stored.session_id if sessions else None,
                                           []).append(sequence)
                journal.message(self, stored)
                taken += 1
                continue
            stored.state = State.SCHEDULED
            self._insert(stored, now)
            if state is State.SCHEDULED:
                enqueued = stored.enqueued_ms
                self._due(self._scheduled_due,
                          (now if enqueued is None else enqueued / 1000,
                           stored.sequence_number))
            elif state is not State.LOCKED or not self._counted(stored, now):
                self._activate(stored, now)
        self._accepted += taken
        self._next_sequence = max([next_sequence, self._next_sequence]
                                  + [stored.sequence_number + 1 for stored in messages])

    # --- administration ----------------------------------------------------------------

    def reconfigure(self, settings: EntitySettings, now: float) -> None:
        """Take new settings (an update): as on the service, sessions and duplicate detection
        cannot be switched on or off once the entity exists; new locks use the new duration."""
        if settings.requires_session != self.settings.requires_session:
            raise ArgumentError(f"The value for RequiresSession of {self.path!r} cannot be "
                                "changed once it exists.")
        update_window(self._duplicates, settings.duplicate_detection_window, self.path)
        self.settings = settings
        self.updated_at = now

    def counts(self) -> MessageCounts:
        """The messages held now, as the administration API reports them."""
        counts = self._counts
        dead_letter = 0
        size = sum(stored.size() for stored in self._messages.values())
        if self.dead_letter_queue is not None:
            held = self.dead_letter_queue.counts()
            dead_letter = held.active
            size += held.size_in_bytes
        return MessageCounts(
            active=counts[State.ACTIVE] + counts[State.LOCKED] + counts[State.DEFERRED],
            dead_letter=dead_letter, scheduled=counts[State.SCHEDULED], size_in_bytes=size)

    def accounting(self) -> dict[str, int]:
        """How many accepted messages are in each state, and ``accepted`` in total."""
        out = {state.value: self._counts[state] for state in State}
        out["accepted"] = self._accepted
        return out
