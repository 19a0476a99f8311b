"""An entity's receive side: the next message taken (locked, or removed), deferred
messages taken by sequence number, and what is done with a message held locked: complete,
abandon, release, defer, dead-letter, renew the lock.

:class:`Receiving` is a mixin of :class:`~fakes._entity.Entity` (which holds the state:
the messages, the ready heaps, the locks by token and the lock expiry heap); what it uses
of the entity is the :class:`_Held` protocol. A lock is checked first
(:meth:`Receiving.locked`): an unknown or expired one is lost, in the service's words, and
an expired message lock gives its message back as its expiry would have.
"""

from __future__ import annotations

import heapq
import uuid
from typing import Any, Protocol

from ._entity_state import EntitySettings, SessionRecord, State, StoredMessage
from ._errors import MessageLockLost, MessageNotFound, SessionLockLost

__all__ = ["Receiving"]


class _Held(Protocol):
    """What the receive side uses of the entity that holds the messages."""

    settings: EntitySettings
    accessed_at: float
    _messages: dict[int, StoredMessage]
    _ready: dict[str | None, list[int]]
    _locks: dict[int, StoredMessage]
    _lock_due: list[tuple[float, int]]

    def locked(self, token: uuid.UUID, now: float) -> StoredMessage: ...

    def _lock(self, stored: StoredMessage, now: float) -> None: ...

    def _session(self, stored: StoredMessage) -> SessionRecord | None: ...

    def _due(self, heap: list[tuple[float, Any]], entry: tuple[float, Any]) -> None: ...

    def _set_state(self, stored: StoredMessage, state: State) -> None: ...

    def _activate(self, stored: StoredMessage, now: float) -> None: ...

    def _expire(self, stored: StoredMessage, now: float) -> None: ...

    def _unlock(self, stored: StoredMessage) -> None: ...

    def _release(self, stored: StoredMessage, now: float) -> None: ...

    def _counted(self, stored: StoredMessage, now: float) -> bool: ...

    def _dead_letter(self, stored: StoredMessage, reason: str | None,
                     description: str | None, now: float) -> None: ...


class Receiving:
    """The receive half of an entity (a mixin: the entity holds the state)."""

    def take(self: _Held, now: float, session_id: str | None, *,
             peek_lock: bool) -> StoredMessage | None:
        """The next active message (of ``session_id`` on a session entity), locked or removed."""
        self.accessed_at = now
        heap = self._ready.get(session_id if self.settings.requires_session else None)
        while heap:
            stored = self._messages.get(heapq.heappop(heap))
            if stored is None or stored.state is not State.ACTIVE:
                continue
            if stored.expires_at is not None and stored.expires_at <= now:
                self._expire(stored, now)
                continue
            if peek_lock:
                self._lock(stored, now)
            else:
                self._set_state(stored, State.COMPLETED)
            return stored
        return None

    def has_ready(self: _Held, session_id: str | None) -> bool:
        """Whether :meth:`take` may find something (stale entries make it a hint)."""
        return bool(self._ready.get(session_id if self.settings.requires_session else None))

    def receive_deferred(self: _Held, sequence_numbers: list[int], now: float, *, peek_lock: bool,
                         session_id: str | None = None) -> list[StoredMessage]:
        """Deferred messages by sequence number; any missing one fails the whole call.

        A deferred message already locked (received by sequence number and not settled
        yet) is refused like a missing one, in the service's words (azure-service-bus
        issues 256 and 415: ``MessageNotFound``, "Failed to lock one or more specified
        messages. Either the message is already locked or does not exist.").
        """
        found = []
        for sequence in sequence_numbers:
            stored = self._messages.get(sequence)
            if stored is None or stored.state is not State.DEFERRED or (
                    session_id is not None and stored.session_id != session_id):
                raise MessageNotFound(
                    "Failed to lock one or more specified messages. Either the message is "
                    f"already locked or does not exist. (sequence number {sequence})")
            found.append(stored)
        for stored in found:
            if peek_lock:
                self._lock(stored, now)
            else:
                self._set_state(stored, State.COMPLETED)
        return found

    def _lock(self: _Held, stored: StoredMessage, now: float) -> None:
        token = uuid.uuid4()
        record = self._session(stored)
        if record is not None:
            stored.locked_until = record.locked_until
            record.lock_tokens.add(token)
        else:
            stored.locked_until = now + self.settings.lock_duration
            self._due(self._lock_due, (stored.locked_until, token.int))
        stored.lock_token = token
        self._locks[token.int] = stored
        self._set_state(stored, State.LOCKED)

    def locked(self: _Held, token: uuid.UUID, now: float) -> StoredMessage:
        """The message locked by ``token``; an expired or unknown lock is lost."""
        stored = self._locks.get(token.int)
        if stored is None:
            raise MessageLockLost(
                "The lock supplied is invalid. Either the lock expired, or the message has "
                "already been removed from the queue.")
        record = self._session(stored)
        valid = record.held(now) if record is not None else (stored.locked_until or 0) > now
        if not valid:
            if record is None:
                self._release(stored, now)
            raise (SessionLockLost if record is not None else MessageLockLost)(
                "The lock on the message has expired.")
        return stored

    def complete(self: _Held, token: uuid.UUID, now: float) -> None:
        """Remove a locked message."""
        stored = self.locked(token, now)
        self._unlock(stored)
        self._set_state(stored, State.COMPLETED)

    def abandon(self: _Held, token: uuid.UUID, now: float,
                properties: dict[str, Any] | None = None) -> None:
        """Give a locked message back with one more failed delivery."""
        stored = self.locked(token, now)
        _modify(stored, properties)
        self._release(stored, now)

    def release(self: _Held, token: uuid.UUID, now: float) -> None:
        """Give a locked message back as it was: available again at once, its delivery
        count unchanged (AMQP 1.0 part 3 section 3.4.4, released: "the delivery-count of
        the header of the released Message MUST NOT be incremented"). The official Python
        SDK releases what arrives outside a receive call, and the service counts none of
        it: azure-sdk-for-python's ``test_queue_by_queue_client_conn_str_receive_handler_
        release_messages`` ("release would not increase delivery count") and
        ``test_queue_receive_batch_without_setting_prefetch`` (all 20 come back)."""
        stored = self.locked(token, now)
        self._unlock(stored)
        self._activate(stored, now)

    def defer(self: _Held, token: uuid.UUID, now: float,
              properties: dict[str, Any] | None = None) -> None:
        """Set a locked message aside until it is received by sequence number. The receive
        that locked it counts as a delivery, as on the service: a message received and
        deferred is received by sequence number with delivery count 1, and one deferred
        at MaxDeliveryCount is dead-lettered (azure-service-bus issue 375: with
        MaxDeliveryCount 1, ``DeferAsync`` moves the message to the dead-letter queue, "The
        delivery count is incremented each time it is processed regardless of being
        deferred or not")."""
        stored = self.locked(token, now)
        _modify(stored, properties)
        self._unlock(stored)
        stored.deferred = True
        if not self._counted(stored, now):
            self._set_state(stored, State.DEFERRED)

    def dead_letter(self: _Held, token: uuid.UUID, now: float, reason: str | None = None,
                    description: str | None = None,
                    properties: dict[str, Any] | None = None) -> None:
        """Move a locked message to the dead-letter queue."""
        stored = self.locked(token, now)
        _modify(stored, properties)
        self._unlock(stored)
        self._dead_letter(stored, reason, description, now)

    def renew(self: _Held, token: uuid.UUID, now: float) -> float:
        """Extend a message lock by the lock duration; returns the new expiry."""
        stored = self.locked(token, now)
        record = self._session(stored)
        if record is not None:
            return record.locked_until
        stored.locked_until = now + self.settings.lock_duration
        self._due(self._lock_due, (stored.locked_until, token.int))
        return stored.locked_until


def _modify(stored: StoredMessage, properties: dict[str, Any] | None) -> None:
    """A settlement's properties to modify, merged into the message's application
    properties (abandon, defer and dead-letter may carry them)."""
    if properties:
        merged = dict(stored.content.application_properties)
        merged.update(properties)
        stored.content = stored.content.model_copy(update={"application_properties": merged})
