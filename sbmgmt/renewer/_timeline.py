"""The registered locks and when each falls due: the renewal scheduler's timeline (sans-I/O).

Theory of operation
-------------------
Every registration is a :class:`LockRecord` (``__slots__``, no per-lock thread,
task or timer), indexed by its key. All records share one timeline: a heap of *slot*
times and, per slot, the list of records due then. A record's renewal time is its
expiry minus a lead derived from its lock duration (see :func:`renewal_lead`), rounded
*down* to a grid of ``batch_window`` seconds (:func:`renewal_slot`), so locks that fall
due close together share one slot and leave in the same request. Retries use exact
times. Popping only the slots that are due makes each tick cost O(due records), not
O(records).

A record taken out of the index (unregistered, replaced or dropped) is marked done
and left in its slot's list, where it is skipped when the slot falls due; once such
stale entries are at least 10,000 and at least as many as the live records, the slot
lists are rebuilt without them.

:class:`LockTimeline` is the base of :class:`~sbmgmt.renewer.RenewalScheduler`, which
calls it under its own lock.
"""

from __future__ import annotations

import heapq
import math
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime, timezone
from typing import Any

from ._model import LockKind, LockLoss, LossReason, OnLockLost

__all__ = [
    "DONE",
    "IN_FLIGHT",
    "SCHEDULED",
    "Key",
    "LockRecord",
    "LockTimeline",
    "Renew",
    "renewal_lead",
    "renewal_slot",
]

# The lead: renew when a third of the lock is left (20 s of a 60 s lock), at least a
# second ahead, but never more than half the lock (or renewals would chase each other).
_LEAD_FRACTION = 1 / 3
_MIN_LEAD = 1.0
# Rebuild the slot lists once this many stale records are waiting in them.
_COMPACT_AFTER = 10_000

#: A record's states: waiting in a slot, in a request on the wire, out of the index.
SCHEDULED = 0
IN_FLIGHT = 1
DONE = 2

#: How one session lock is renewed instead of ``submit``: ``renew(timeout) -> Future`` of a
#: ``renew_session_lock.Response``.
Renew = Callable[[float], Future[Any]]

#: A record's key: the entity, and the lock token (a message) or the session id.
Key = tuple[str, uuid.UUID | str]


def renewal_lead(lock_duration: float) -> float:
    """How long before its expiry a lock is renewed.

    Args:
        lock_duration: The lock's duration in seconds.

    Returns:
        Seconds before expiry: a third of ``lock_duration``, at least 1 s, at most half of it.

    Raises nothing.
    """
    return min(max(lock_duration * _LEAD_FRACTION, _MIN_LEAD), lock_duration / 2)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class LockRecord:
    """One registration: a message lock (``key[1]`` a UUID) or a session (a str)."""

    __slots__ = (
        "cache",
        "due",
        "duration",
        "failures",
        "key",
        "locked_until",
        "on_lost",
        "renew",
        "renew_until",
        "state",
        "target",
    )

    def __init__(
        self,
        key: Key,
        locked_until: float,
        duration: float,
        renew_until: float,
        on_lost: OnLockLost | None,
        target: object,
        via: tuple[str | None, Renew | None],
    ) -> None:
        self.key = key
        self.locked_until = locked_until
        self.duration = duration
        self.renew_until = renew_until
        self.on_lost = on_lost
        self.target = target
        #: The target's attribute caching the lock's expiry (kept in step), and the
        #: session's own way to renew (instead of ``submit``).
        self.cache, self.renew = via
        self.due = 0.0
        self.state = SCHEDULED
        self.failures = 0

    @property
    def is_session(self) -> bool:
        return isinstance(self.key[1], str)

    def renewed(self, expiry: float, now: float) -> None:
        """Take the new expiry a renewal answered (and write it to the target's cache)."""
        self.locked_until = expiry
        if self.cache is not None:
            setattr(self.target, self.cache, _utc(expiry))
        self.duration = max(self.duration, expiry - now)
        self.failures = 0

    def loss(self, reason: LossReason, error: BaseException | None) -> LockLoss:
        """The report of this lock's loss."""
        entity, ident = self.key
        return LockLoss(
            kind=LockKind.SESSION if isinstance(ident, str) else LockKind.MESSAGE,
            entity=entity,
            lock_token=None if isinstance(ident, str) else ident,
            session_id=ident if isinstance(ident, str) else None,
            reason=reason,
            locked_until=_utc(self.locked_until),
            error=error,
            target=self.target,
        )


def renewal_slot(record: LockRecord, batch_window: float) -> float:
    """The slot ``record`` falls due in: its expiry less the lead, down to the grid."""
    raw = record.locked_until - renewal_lead(record.duration)
    return math.floor(raw / batch_window) * batch_window


class LockTimeline:
    """The registered locks by key, and the slots they fall due in (not thread-safe)."""

    def __init__(self, batch_window: float) -> None:
        self._batch_window = batch_window
        self._records: dict[Key, LockRecord] = {}
        self._sessions = 0
        self._slots: dict[float, list[LockRecord]] = {}
        self._slot_heap: list[float] = []
        self._stale = 0

    def _index(self, record: LockRecord) -> float:
        """Take ``record`` in (replacing any with its key) at its renewal slot; the slot."""
        self._forget(self._records.get(record.key))
        self._records[record.key] = record
        if record.is_session:
            self._sessions += 1
        return self._schedule(record, renewal_slot(record, self._batch_window))

    def _forget(self, record: LockRecord | None) -> None:
        """Take a record out of the index; its slot entry (if any) becomes stale."""
        if record is None:
            return
        del self._records[record.key]
        if record.is_session:
            self._sessions -= 1
        if record.state == SCHEDULED:
            self._stale += 1
        record.state = DONE
        # What it pointed at (a received message, with its body) is not kept alive by a
        # stale slot entry: 10,000 moved messages would otherwise live until the next
        # compaction, each garbage collection walking them again.
        record.target = record.on_lost = None

    def _schedule(self, record: LockRecord, at: float) -> float:
        record.state = SCHEDULED
        record.due = at
        slot = self._slots.get(at)
        if slot is None:
            self._slots[at] = slot = []
            heapq.heappush(self._slot_heap, at)
        slot.append(record)
        return at

    def _pop_due(self, now: float) -> list[LockRecord]:
        due: list[LockRecord] = []
        while self._slot_heap and self._slot_heap[0] <= now:
            for record in self._slots.pop(heapq.heappop(self._slot_heap)):
                if record.state == SCHEDULED:
                    record.state = IN_FLIGHT
                    due.append(record)
                else:
                    self._stale -= 1
        return due

    def _compact(self) -> None:
        """Drop stale records from the slot lists (amortised O(1) per stale record)."""
        if self._stale < _COMPACT_AFTER or self._stale < len(self._records):
            return
        live = {at: [r for r in slot if r.state == SCHEDULED] for at, slot in self._slots.items()}
        self._slots = {at: slot for at, slot in live.items() if slot}
        self._slot_heap = list(self._slots)
        heapq.heapify(self._slot_heap)
        self._stale = 0

    def _next_slot(self) -> float:
        return self._slot_heap[0] if self._slot_heap else math.inf

    def _clear(self) -> None:
        """Forget every record and slot."""
        self._records.clear()
        self._sessions = 0
        self._slots.clear()
        self._slot_heap.clear()
        self._stale = 0
