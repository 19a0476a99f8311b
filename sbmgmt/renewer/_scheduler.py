"""The renewer's scheduling core, sans-I/O: driven by ``now`` and completed futures.

Theory of operation
-------------------
Every registration is a :class:`_Lock` record (``__slots__``, no per-lock thread,
task or timer). All records share one timeline: a heap of *slot* times and, per
slot, the list of records due then. A record's renewal time is its expiry minus a
lead derived from its lock duration (see :func:`renewal_lead`), rounded *down* to a
grid of ``batch_window`` seconds, so locks that fall due close together share one
slot and leave in the same request. Retries use exact times. :meth:`run` pops only
the slots that are due, so each tick costs O(due records), not O(records).

A due record is checked (expired? ``max_renewal_duration`` reached?) and grouped by
entity; each group goes out as renew-lock requests of at most ``batch_size`` tokens,
and each session lock as its own renew-session-lock request. Requests leave through
the ``submit`` function (or a session record's own ``renew``: an SDK session is renewed
on its receiver's connection, the only one the service accepts it on) and return
``concurrent.futures.Future`` s; nothing waits on them. A future's done callback (on
any thread) queues the batch in an inbox and calls ``wake``; the next :meth:`run` settles it:

- success: each record takes its new expiry (and writes it to its target's cached
  expiry, for an azure-servicebus message or session) and is scheduled again;
- 410 (lock lost) or 404 on a batch of several tokens: the batch is split in halves
  that are sent again at once, until each lost token is alone; a lone token's
  failure drops it with ``LOCK_LOST`` (the others keep being renewed);
- a transient error (``sbmgmt._retry.is_retryable``): each record is retried after
  ``sbmgmt._retry.RENEWAL_BACKOFF``, never later than half its remaining lock time;
  once a record falls due past its expiry it is dropped with ``EXPIRED``;
- anything else drops the batch's records with ``FAILED``.

The scheduler is thread-safe: one internal lock guards the records, and
``submit`` and the ``on_lock_lost`` callbacks are called outside it.
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol, TypeVar, cast

from .._retry import RENEWAL_BACKOFF, is_retryable
from ..errors import LockLostError, NotFoundError, ProtocolError, ServiceBusManagementError
from ..ops import renew_lock, renew_session_lock
from ..ops._base import OpModel, OpRequest
from ._model import LockKind, LockLoss, LossReason, OnLockLost, RenewerStats

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BATCH_WINDOW",
    "DEFAULT_MAX_RENEWAL_DURATION",
    "DEFAULT_REQUEST_TIMEOUT",
    "Renew",
    "RenewalScheduler",
    "Submit",
    "renewal_lead",
]

_log = logging.getLogger("sbmgmt.renewer")

#: Tokens per renew-lock request. 500 uuids are an 8 KB request and a 4.5 KB reply
#: (far below any message size limit), isolating one lost token takes at most
#: log2(500) ~ 9 split rounds, and 100,000 locks are 200 requests per lock period.
DEFAULT_BATCH_SIZE = 500
#: Locks due within the same window of this many seconds leave in one request.
DEFAULT_BATCH_WINDOW = 1.0
#: The official SDK's default: a lock is renewed for five minutes unless told otherwise.
DEFAULT_MAX_RENEWAL_DURATION = 300.0
#: The longest one renewal attempt may wait for its reply.
DEFAULT_REQUEST_TIMEOUT = 10.0

# The lead: renew when a third of the lock is left (20 s of a 60 s lock), at least a
# second ahead, but never more than half the lock (or renewals would chase each other).
_LEAD_FRACTION = 1 / 3
_MIN_LEAD = 1.0
# After a success, the next renewal of the same lock is at least this far away.
_MIN_RENEWAL_INTERVAL = 0.25
# An attempt waits for its reply at least this long (and at most half the lock left,
# so that a timed-out attempt leaves room for one retry).
_MIN_ATTEMPT_TIMEOUT = 0.5
_MIN_RETRY_DELAY = 0.05
# Rebuild the slot lists once this many stale records are waiting in them.
_COMPACT_AFTER = 10_000

_SCHEDULED = 0
_IN_FLIGHT = 1
_DONE = 2

_Resp = TypeVar("_Resp", bound=OpModel)
#: What a renewal request answers.
_Renewed = renew_lock.Response | renew_session_lock.Response


class Submit(Protocol):
    """How requests leave: ``submit(entity_path, request, timeout) -> Future[Response]``."""

    def __call__(self, entity: str, request: OpRequest[_Resp], timeout: float, /
                 ) -> Future[_Resp]: ...


#: How one session lock is renewed instead of ``submit``: ``renew(timeout) -> Future`` of a
#: ``renew_session_lock.Response``.
Renew = Callable[[float], Future[Any]]

_Key = tuple[str, uuid.UUID | str]


def renewal_lead(lock_duration: float) -> float:
    """How long before its expiry a lock of ``lock_duration`` seconds is renewed."""
    return min(max(lock_duration * _LEAD_FRACTION, _MIN_LEAD), lock_duration / 2)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class _Lock:
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
        key: _Key,
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
        self.state = _SCHEDULED
        self.failures = 0

    @property
    def is_session(self) -> bool:
        return isinstance(self.key[1], str)


@dataclass(slots=True)
class _Batch:
    """One request on the wire: a renew-lock of many tokens, or one renew-session-lock."""

    entity: str
    locks: list[_Lock]
    session: bool
    timeout: float
    future: Future[_Renewed] | None = None
    request: renew_lock.Request | renew_session_lock.Request | None = None


@dataclass(slots=True)
class _Counters:
    renew_requests: int = 0
    tokens_renewed: int = 0
    sessions_renewed: int = 0
    retries: int = 0
    splits: int = 0
    lost: dict[LossReason, int] = field(default_factory=lambda: dict.fromkeys(LossReason, 0))
    max_lateness: float = 0.0
    tightest_margin: float | None = None


_UNSET: Any = object()

# A dropped lock and the callback to tell (reported after the internal lock is released).
_Loss = tuple[OnLockLost | None, LockLoss]


class RenewalScheduler:
    """The timeline of every registered lock, and what to send when (sans-I/O).

    ``submit`` sends one request and returns its future; ``wake`` is called (from any
    thread) when :meth:`run` should be called again before the time it last returned.
    Times are seconds since the epoch, on the same clock as the locks' expiries.
    """

    def __init__(
        self,
        submit: Submit,
        wake: Callable[[], None],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_window: float = DEFAULT_BATCH_WINDOW,
        max_renewal_duration: float | None = DEFAULT_MAX_RENEWAL_DURATION,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        log_interval: float = 60.0,
        on_lock_lost: OnLockLost | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if batch_window <= 0:
            raise ValueError(f"batch_window must be positive, got {batch_window}")
        if request_timeout <= 0:
            raise ValueError(f"request_timeout must be positive, got {request_timeout}")
        if log_interval <= 0:
            raise ValueError(f"log_interval must be positive, got {log_interval}")
        _check_duration("max_renewal_duration", max_renewal_duration)
        self._submit = submit
        self._wake = wake
        self._batch_size = batch_size
        self._batch_window = batch_window
        self._max_renewal_duration = max_renewal_duration
        self._request_timeout = request_timeout
        self._log_interval = log_interval
        self._on_lock_lost = on_lock_lost
        self._lock = threading.Lock()
        self._records: dict[_Key, _Lock] = {}
        self._sessions = 0
        self._slots: dict[float, list[_Lock]] = {}
        self._slot_heap: list[float] = []
        self._stale = 0
        self._inbox: list[_Batch] = []
        self._in_flight = 0
        self._wake_pending = False
        self._next_run = math.inf
        self._next_log: float | None = None
        self._closed = False
        self._counters = _Counters()

    # ---- registrations (any thread) ---------------------------------------------------

    def register_message(
        self,
        entity: str,
        lock_token: uuid.UUID,
        locked_until: float,
        now: float,
        *,
        max_renewal_duration: float | None = _UNSET,
        lock_duration: float | None = None,
        on_lock_lost: OnLockLost | None = None,
        target: object = None,
        cache: str | None = None,
    ) -> None:
        """Keep the lock ``lock_token`` on ``entity`` alive (replacing any earlier one).

        ``cache``: the attribute of ``target`` that caches the lock's expiry; each
        renewal sets it to the new expiry (a UTC datetime).
        """
        self._add((entity, lock_token), locked_until, now, max_renewal_duration,
                  lock_duration, on_lock_lost, lock_token if target is None else target,
                  (cache, None))

    def register_session(
        self,
        entity: str,
        session_id: str,
        locked_until: float,
        now: float,
        *,
        max_renewal_duration: float | None = _UNSET,
        lock_duration: float | None = None,
        on_lock_lost: OnLockLost | None = None,
        target: object = None,
        cache: str | None = None,
        renew: Renew | None = None,
    ) -> None:
        """Keep the lock on session ``session_id`` of ``entity`` alive.

        ``cache`` as for :meth:`register_message`; ``renew`` renews this session
        instead of a renew-session-lock request through ``submit``.
        """
        if not session_id:
            raise ValueError("session_id is empty")
        self._add((entity, session_id), locked_until, now, max_renewal_duration,
                  lock_duration, on_lock_lost, session_id if target is None else target,
                  (cache, renew))

    def unregister_message(self, entity: str, lock_token: uuid.UUID) -> bool:
        """Stop renewing a message lock; False when it was not registered."""
        return self._remove((entity, lock_token))

    def unregister_session(self, entity: str, session_id: str) -> bool:
        """Stop renewing a session lock; False when it was not registered."""
        return self._remove((entity, session_id))

    def _add(
        self,
        key: _Key,
        locked_until: float,
        now: float,
        max_renewal_duration: float | None,
        lock_duration: float | None,
        on_lost: OnLockLost | None,
        target: object,
        via: tuple[str | None, Renew | None],
    ) -> None:
        if max_renewal_duration is _UNSET:
            max_renewal_duration = self._max_renewal_duration
        _check_duration("max_renewal_duration", max_renewal_duration)
        _check_duration("lock_duration", lock_duration)
        duration = lock_duration if lock_duration is not None else max(locked_until - now, 0.0)
        renew_until = math.inf if max_renewal_duration is None else now + max_renewal_duration
        record = _Lock(key, locked_until, duration, renew_until, on_lost, target, via)
        with self._lock:
            if self._closed:
                raise RuntimeError("the lock renewer is stopped")
            self._forget(self._records.get(key))
            self._records[key] = record
            if record.is_session:
                self._sessions += 1
            slot = self._schedule(record, self._renewal_slot(record))
            wake = slot < self._next_run and not self._wake_pending
            if wake:
                self._wake_pending = True
        if wake:
            self._wake()

    def _remove(self, key: _Key) -> bool:
        with self._lock:
            record = self._records.get(key)
            self._forget(record)
            return record is not None

    def _forget(self, record: _Lock | None) -> None:
        """Take a record out of the index; its slot entry (if any) becomes stale."""
        if record is None:
            return
        del self._records[record.key]
        if record.is_session:
            self._sessions -= 1
        if record.state == _SCHEDULED:
            self._stale += 1
        record.state = _DONE

    # ---- the timeline -----------------------------------------------------------------

    def _renewal_slot(self, record: _Lock) -> float:
        raw = record.locked_until - renewal_lead(record.duration)
        return math.floor(raw / self._batch_window) * self._batch_window

    def _schedule(self, record: _Lock, at: float) -> float:
        record.state = _SCHEDULED
        record.due = at
        slot = self._slots.get(at)
        if slot is None:
            self._slots[at] = slot = []
            heapq.heappush(self._slot_heap, at)
        slot.append(record)
        return at

    def _pop_due(self, now: float) -> list[_Lock]:
        due: list[_Lock] = []
        while self._slot_heap and self._slot_heap[0] <= now:
            for record in self._slots.pop(heapq.heappop(self._slot_heap)):
                if record.state == _SCHEDULED:
                    record.state = _IN_FLIGHT
                    due.append(record)
                else:
                    self._stale -= 1
        return due

    def _compact(self) -> None:
        """Drop stale records from the slot lists (amortised O(1) per stale record)."""
        if self._stale < _COMPACT_AFTER or self._stale < len(self._records):
            return
        live = {at: [r for r in slot if r.state == _SCHEDULED] for at, slot in self._slots.items()}
        self._slots = {at: slot for at, slot in live.items() if slot}
        self._slot_heap = list(self._slots)
        heapq.heapify(self._slot_heap)
        self._stale = 0

    def _next_slot(self) -> float:
        return self._slot_heap[0] if self._slot_heap else math.inf

    # ---- the tick -----------------------------------------------------------------------

    def run(self, now: float) -> float | None:
        """Settle completed requests, send what is due; the time to run again (None: idle).

        ``on_lock_lost`` callbacks are called here, after the state is updated.
        """
        losses: list[_Loss] = []
        with self._lock:
            if self._closed:
                return None
            self._wake_pending = False
            completed, self._inbox = self._inbox, []
            outgoing: list[_Batch] = []
            for batch in completed:
                self._in_flight -= 1
                self._settle(batch, now, outgoing, losses)
            self._take_due(now, outgoing, losses)
            self._compact()
            self._in_flight += len(outgoing)
            self._counters.renew_requests += len(outgoing)
            log_now = self._log_due(now)
            next_run = self._next_slot()
            if self._records or self._in_flight:
                assert self._next_log is not None
                next_run = min(next_run, self._next_log)
            self._next_run = next_run
        for batch in outgoing:
            self._send(batch)
        for callback, loss in losses:
            self._report(callback, loss)
        if log_now:
            self._log_stats()
        return None if next_run == math.inf else next_run

    def _take_due(self, now: float, outgoing: list[_Batch], losses: list[_Loss]) -> None:
        by_entity: dict[str, list[_Lock]] = {}
        for record in self._pop_due(now):
            if now >= record.locked_until:
                self._drop(record, LossReason.EXPIRED, None, losses)
            elif now >= record.renew_until:
                self._drop(record, LossReason.MAX_DURATION, None, losses)
            else:
                self._counters.max_lateness = max(self._counters.max_lateness, now - record.due)
                if record.is_session:
                    outgoing.append(self._batch(record.key[0], [record], now, session=True))
                else:
                    by_entity.setdefault(record.key[0], []).append(record)
        size = self._batch_size
        for entity, records in by_entity.items():
            for start in range(0, len(records), size):
                outgoing.append(self._batch(entity, records[start:start + size], now))

    def _batch(self, entity: str, records: list[_Lock], now: float, *,
               session: bool = False) -> _Batch:
        left = min(r.locked_until for r in records) - now
        timeout = min(self._request_timeout, max(_MIN_ATTEMPT_TIMEOUT, left / 2))
        return _Batch(entity, records, session, timeout)

    def _send(self, batch: _Batch) -> None:
        request: renew_lock.Request | renew_session_lock.Request
        renew = batch.locks[0].renew if batch.session else None
        if batch.session:
            request = renew_session_lock.Request(session_id=str(batch.locks[0].key[1]))
        else:
            tokens = cast("tuple[uuid.UUID, ...]", tuple(r.key[1] for r in batch.locks))
            request = renew_lock.Request(lock_tokens=tokens)
        batch.request = request
        future: Future[_Renewed]
        try:
            if renew is not None:
                future = renew(batch.timeout)
            else:
                future = self._submit(batch.entity, request, batch.timeout)
        except Exception as exc:  # a submit that raises is a failed request like any other
            future = Future()
            future.set_exception(exc)
        batch.future = future
        future.add_done_callback(lambda _f: self._completed(batch))

    def _completed(self, batch: _Batch) -> None:
        """A request's future is done (called on whichever thread completed it)."""
        with self._lock:
            if self._closed:
                return
            self._inbox.append(batch)
            wake = not self._wake_pending
            self._wake_pending = True
        if wake:
            self._wake()

    # ---- outcomes -----------------------------------------------------------------------

    def _settle(self, batch: _Batch, now: float, outgoing: list[_Batch],
                losses: list[_Loss]) -> None:
        assert batch.future is not None
        live = [r for r in batch.locks if r.state == _IN_FLIGHT]
        if not live:
            return
        error = _error_of(batch.future)
        if error is None:
            try:
                expirations = self._expirations(batch)
            except ProtocolError as exc:
                error = exc
            else:
                for record, expiry in zip(batch.locks, expirations, strict=True):
                    if record.state == _IN_FLIGHT:
                        self._renewed(record, expiry, now)
                if batch.session:
                    self._counters.sessions_renewed += 1
                else:
                    self._counters.tokens_renewed += len(live)
                return
        if isinstance(error, (LockLostError, NotFoundError)):
            if len(live) == 1:
                self._drop(live[0], LossReason.LOCK_LOST, error, losses)
                return
            self._counters.splits += 1
            half = len(live) // 2
            outgoing.append(self._batch(batch.entity, live[:half], now))
            outgoing.append(self._batch(batch.entity, live[half:], now))
        elif is_retryable(error, idempotent=True):  # renewals are idempotent
            self._counters.retries += 1
            for record in live:
                self._retry_later(record, now)
        else:
            for record in live:
                self._drop(record, LossReason.FAILED, error, losses)

    @staticmethod
    def _expirations(batch: _Batch) -> list[float]:
        assert batch.future is not None
        response = batch.future.result()
        if isinstance(response, renew_session_lock.Response):
            times = [response.expiration]
        else:
            # The client checks this already; a custom ``submit`` may not.
            assert isinstance(batch.request, renew_lock.Request)
            renew_lock.check_response(batch.request, response)
            times = list(response.expirations)
        return [t.timestamp() for t in times]

    def _renewed(self, record: _Lock, expiry: float, now: float) -> None:
        margin = record.locked_until - now
        tightest = self._counters.tightest_margin
        self._counters.tightest_margin = margin if tightest is None else min(tightest, margin)
        record.locked_until = expiry
        if record.cache is not None:
            setattr(record.target, record.cache, _utc(expiry))
        record.duration = max(record.duration, expiry - now)
        record.failures = 0
        slot = self._renewal_slot(record)
        self._schedule(record, max(slot, now + _MIN_RENEWAL_INTERVAL))

    def _retry_later(self, record: _Lock, now: float) -> None:
        record.failures += 1
        delay = RENEWAL_BACKOFF.delay(record.failures)
        delay = max(_MIN_RETRY_DELAY, min(delay, (record.locked_until - now) / 2))
        self._schedule(record, now + delay)

    def _drop(self, record: _Lock, reason: LossReason, error: BaseException | None,
              losses: list[_Loss]) -> None:
        if self._records.get(record.key) is record:
            self._forget(record)
        record.state = _DONE
        self._counters.lost[reason] += 1
        entity, ident = record.key
        losses.append((record.on_lost or self._on_lock_lost, LockLoss(
            kind=LockKind.SESSION if isinstance(ident, str) else LockKind.MESSAGE,
            entity=entity,
            lock_token=None if isinstance(ident, str) else ident,
            session_id=ident if isinstance(ident, str) else None,
            reason=reason,
            locked_until=_utc(record.locked_until),
            error=error,
            target=record.target,
        )))
        record.target = None

    # ---- reporting ----------------------------------------------------------------------

    def _report(self, callback: OnLockLost | None, loss: LockLoss) -> None:
        _log.debug("lock renewer: dropped the %s lock %s on %r: %s", loss.kind.value,
                   loss.lock_token or loss.session_id, loss.entity, loss.reason.value)
        if callback is None:
            return
        try:
            callback(loss)
        except Exception:
            _log.exception("lock renewer: the on_lock_lost callback raised")

    def _log_due(self, now: float) -> bool:
        if self._next_log is None:
            self._next_log = now + self._log_interval
            return False
        if now < self._next_log:
            return False
        self._next_log = now + self._log_interval
        return bool(self._records or self._in_flight)

    def _log_stats(self) -> None:
        s = self.stats()
        lost = ", ".join(f"{r.value}={n}" for r, n in s.lost.items() if n) or "none"
        margin = "n/a" if s.tightest_margin is None else f"{s.tightest_margin:.3f}s"
        _log.info(
            "lock renewer: %d locks tracked (%d message, %d session), %d requests in flight; "
            "%d renew requests, %d tokens and %d sessions renewed, %d retries, %d splits; "
            "lost: %s; worst lateness %.3fs, tightest margin %s",
            s.tracked, s.message_locks, s.session_locks, s.requests_in_flight,
            s.renew_requests, s.tokens_renewed, s.sessions_renewed, s.retries, s.splits,
            lost, s.max_lateness, margin,
        )

    def stats(self) -> RenewerStats:
        """A snapshot of the counters."""
        with self._lock:
            c = self._counters
            return RenewerStats(
                tracked=len(self._records),
                message_locks=len(self._records) - self._sessions,
                session_locks=self._sessions,
                requests_in_flight=self._in_flight,
                renew_requests=c.renew_requests,
                tokens_renewed=c.tokens_renewed,
                sessions_renewed=c.sessions_renewed,
                retries=c.retries,
                splits=c.splits,
                lost=dict(c.lost),
                max_lateness=c.max_lateness,
                tightest_margin=c.tightest_margin,
            )

    def close(self) -> None:
        """Stop: forget every record and ignore replies still on their way (no reports)."""
        with self._lock:
            self._closed = True
            self._records.clear()
            self._sessions = 0
            self._slots.clear()
            self._slot_heap.clear()
            self._inbox.clear()
            self._stale = 0

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed


def _error_of(future: Future[Any]) -> BaseException | None:
    if future.cancelled():
        return ServiceBusManagementError("the renew request was cancelled")
    return future.exception()


def _check_duration(name: str, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be positive seconds or None, got {value!r}")

