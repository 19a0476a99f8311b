"""An entity's session locks: who holds each session, until when, and what a lock covers.

A session's lock (:class:`~fakes._entity_state.SessionRecord`) is held by one receiver link
(:class:`~fakes._entity_state.SessionOwner`) for the entity's lock duration, renewed by
the holder; while held it covers the locks of the session's messages it received (renewed
with it, released when it is dropped). Expiries sit in the entity's ``_session_due`` heap
with lazy deletion: an entry is stale when the record's ``locked_until`` moved since.
:class:`SessionLocks` is a mixin of :class:`~fakes._entity.Entity`; what it uses of the
entity's message queue is the :class:`_Queue` protocol.
"""

from __future__ import annotations

import heapq
from typing import Any, Protocol

from ._entity_state import EntitySettings, SessionOwner, SessionRecord, StoredMessage
from ._errors import NoSessionAvailable, SessionCannotBeLocked, SessionLockLost
from ._journal import Journal

__all__ = ["SessionLocks"]


class _Queue(Protocol):
    """What the session locks use of the entity that holds them."""

    settings: EntitySettings
    sessions: dict[str, SessionRecord]
    _locks: dict[int, StoredMessage]
    _session_due: list[tuple[float, str]]
    journal: Journal

    def has_ready(self, session_id: str | None) -> bool: ...

    def _due(self, heap: list[tuple[float, Any]], entry: tuple[float, Any]) -> None: ...

    def _release(self, stored: StoredMessage, now: float) -> None: ...

    def held_session(self, session_id: str, now: float) -> SessionRecord: ...

    def _drop_session_lock(self, record: SessionRecord, now: float) -> None: ...


class SessionLocks:
    """The session-lock half of an entity (a mixin: the entity holds the state)."""

    def lock_session(self: _Queue, session_id: str | None, owner: SessionOwner,
                     now: float) -> SessionRecord:
        """Lock a session for ``owner``; ``None`` picks the next unlocked one with messages."""
        if session_id is None:
            record = next((r for key, r in self.sessions.items()
                           if not r.held(now) and self.has_ready(key)), None)
            if record is None:
                raise NoSessionAvailable("No unlocked session with messages is available.")
        else:
            record = self.sessions.setdefault(session_id, SessionRecord(session_id))
            if record.held(now) and record.owner != owner:
                raise SessionCannotBeLocked(
                    f"The session {session_id!r} is locked by another receiver.")
        record.owner = owner
        record.locked_until = now + self.settings.lock_duration
        self._due(self._session_due, (record.locked_until, record.session_id))
        return record

    def held_session(self: _Queue, session_id: str, now: float) -> SessionRecord:
        """The session, which must be locked now (else session-lock-lost)."""
        record = self.sessions.get(session_id)
        if record is None or not record.held(now):
            raise SessionLockLost(f"The lock on session {session_id!r} was lost or never held.")
        return record

    def renew_session(self: _Queue, session_id: str, now: float) -> float:
        """Extend a held session lock; returns the new expiry."""
        record = self.held_session(session_id, now)
        record.locked_until = now + self.settings.lock_duration
        for token in record.lock_tokens:
            self._locks[token.int].locked_until = record.locked_until
        self._due(self._session_due, (record.locked_until, session_id))
        return record.locked_until

    def set_session_state(self: _Queue, session_id: str, state: bytes | None, now: float) -> None:
        """Set (or with ``None`` clear) a held session's state."""
        record = self.held_session(session_id, now)
        record.state = state
        record.last_updated = now
        self.journal.changed(self)

    def release_session(self: _Queue, session_id: str, owner: SessionOwner, now: float) -> None:
        """The owner let go (its link closed): locked messages go back."""
        record = self.sessions.get(session_id)
        if record is None or record.owner != owner:
            return
        self._drop_session_lock(record, now)

    def _drop_session_lock(self: _Queue, record: SessionRecord, now: float) -> None:
        record.owner = None
        record.locked_until = 0.0
        for token in list(record.lock_tokens):
            self._release(self._locks[token.int], now)

    def session_ids(self: _Queue, updated_since: float | None) -> list[str]:
        """Sessions with messages or state (updated since ``updated_since``, if given)."""
        return [r.session_id for r in self.sessions.values()
                if (r.message_count > 0 or r.state is not None)
                and (updated_since is None or r.last_updated >= updated_since)]

    def _expire_session_locks(self: _Queue, now: float) -> None:
        """Drop the session locks that expired by ``now``."""
        while self._session_due and self._session_due[0][0] <= now:
            due, session_id = heapq.heappop(self._session_due)
            record = self.sessions.get(session_id)
            if record is not None and record.owner is not None and record.locked_until == due:
                self._drop_session_lock(record, now)
