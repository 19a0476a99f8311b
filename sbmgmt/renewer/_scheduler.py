"""The renewer's scheduling core, sans-I/O: driven by ``now`` and completed futures.

Theory of operation
-------------------
:class:`RenewalScheduler` keeps every registered lock on one timeline
(:mod:`sbmgmt.renewer._timeline`: records grouped in slots, so that locks falling due
close together leave in one request); :meth:`~RenewalScheduler.run` pops only the
slots that are due.

A due record is checked (expired? ``max_renewal_duration`` reached?) and grouped by
entity; each group goes out as renew-lock requests of at most ``batch_size`` tokens,
and each session lock as its own renew-session-lock request. Requests leave through
the ``submit`` function (or a session record's own ``renew``: an SDK session is renewed
on its receiver's connection, the only one the service accepts it on) and return
``concurrent.futures.Future`` s; nothing waits on them. A future's done callback (on
any thread) queues the batch in an inbox and calls ``wake``; the next :meth:`run`
settles it (:mod:`sbmgmt.renewer._outcomes`: renewed and scheduled again, split,
retried, or dropped).

The scheduler is thread-safe: one internal lock guards the records, and
``submit`` and the ``on_lock_lost`` callbacks are called outside it.

With telemetry on (:mod:`sbmgmt.telemetry`), each request is a span linked to the trace
context its messages carry, and the renewals, losses and margins are measured; the
locks held are read from :meth:`RenewalScheduler.locks_held` when metrics are collected.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar, cast

from .._client.argument_checks import callable_argument, count, positive_seconds
from .._client.session_lock import AsyncSessionLock, SessionLock
from .._engine.connection import Endpoint
from ..ops import renew_lock, renew_session_lock
from ..ops._base import OpModel, OpRequest
from ..telemetry import LIVE_RENEWERS
from ..telemetry import current as telemetry
from ._model import LockLoss, LossReason, OnLockLost, RenewerStats
from ._outcomes import Batch, Renewed, settle
from ._stats import Counters, log_stats, report
from ._timeline import DONE, Key, LockRecord, LockTimeline, Renew

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BATCH_WINDOW",
    "DEFAULT_MAX_RENEWAL_DURATION",
    "DEFAULT_REQUEST_TIMEOUT",
    "RenewalScheduler",
    "Submit",
]

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

# An attempt waits for its reply at least this long (and at most half the lock left,
# so that a timed-out attempt leaves room for one retry).
_MIN_ATTEMPT_TIMEOUT = 0.5

_Resp = TypeVar("_Resp", bound=OpModel)


class Submit(Protocol):
    """How requests leave: ``submit(entity_path, request, timeout) -> Future[Response]``."""

    def __call__(self, entity: str, request: OpRequest[_Resp], timeout: float, /
                 ) -> Future[_Resp]: ...


_UNSET: Any = object()

# A dropped lock and the callback to tell (reported after the internal lock is released).
_Loss = tuple[OnLockLost | None, LockLoss]


class RenewalScheduler(LockTimeline):
    """The timeline of every registered lock, and what to send when (sans-I/O).

    The core both renewers drive; a caller of its own calls
    [run][sbmgmt.renewer.RenewalScheduler.run] at the times it returns, and whenever ``wake`` was
    called. Times are seconds since the epoch, on the same clock as the locks' expiries.

    Args:
        submit: Sends one request: ``submit(entity, request, timeout) -> Future``.
        wake: Called (from any thread) when ``run`` should be called again before the time it
            last returned.
        batch_size: The most tokens per renew-lock request.
        batch_window: Seconds: locks due within it leave in one request.
        max_renewal_duration: Seconds a lock is renewed for at most by default; None: no limit.
        request_timeout: Seconds one renewal may wait for its reply.
        log_interval: Seconds between summary log lines.
        on_lock_lost: Called with a [LockLoss][sbmgmt.renewer.LockLoss] when a lock is lost.
        endpoint: Where the requests go (the spans' ``server.address`` / ``server.port``);
            None: unknown.

    Raises:
        ValueError: ``batch_size`` is below 1, or a duration or interval is not positive.
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
        endpoint: Endpoint | None = None,
    ) -> None:
        batch_size = count(batch_size, "batch_size")
        batch_window = positive_seconds(batch_window, "batch_window")
        request_timeout = positive_seconds(request_timeout, "request_timeout")
        log_interval = positive_seconds(log_interval, "log_interval")
        callable_argument(on_lock_lost, "on_lock_lost")
        _check_duration("max_renewal_duration", max_renewal_duration)
        super().__init__(batch_window)
        self._submit = submit
        self._wake = wake
        self._batch_size = batch_size
        self._max_renewal_duration = max_renewal_duration
        self._request_timeout = request_timeout
        self._log_interval = log_interval
        self._on_lock_lost = on_lock_lost
        self._lock = threading.Lock()
        self._inbox: list[Batch] = []
        self._in_flight = 0
        self._wake_pending = False
        self._next_run = math.inf
        self._next_log: float | None = None
        self._closed = False
        self._counters = Counters()
        #: Where ``submit`` sends (``server.address`` of the renewer's spans), if known.
        self._endpoint = endpoint
        LIVE_RENEWERS.add(self)

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
        """Keep the lock ``lock_token`` on ``entity`` alive (replacing an earlier registration).

        Args:
            entity: The entity path.
            lock_token: The message's lock token.
            locked_until: When the lock expires (epoch seconds).
            now: The time now (epoch seconds).
            max_renewal_duration: Seconds to renew it for at most; None: no limit; by default the
                scheduler's.
            lock_duration: The entity's lock duration in seconds, when known.
            on_lock_lost: Called instead of the scheduler's ``on_lock_lost`` for this lock.
            target: The object reported in the lock's [LockLoss][sbmgmt.renewer.LockLoss]
                (default: the token).
            cache: The attribute of ``target`` that caches the lock's expiry; each renewal sets
                it to the new expiry (a UTC datetime).

        Raises:
            ValueError: A duration that is not positive.
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

        Args:
            entity: The entity path.
            session_id: The session's id.
            locked_until: When the lock expires (epoch seconds).
            now: The time now (epoch seconds).
            max_renewal_duration: Seconds to renew it for at most; None: no limit; by default the
                scheduler's.
            lock_duration: The entity's lock duration in seconds, when known.
            on_lock_lost: Called instead of the scheduler's ``on_lock_lost`` for this lock.
            target: The object reported in the lock's [LockLoss][sbmgmt.renewer.LockLoss]
                (default: the session id).
            cache: As for [register_message][sbmgmt.renewer.RenewalScheduler.register_message].
            renew: Renews this session instead of a renew-session-lock request through ``submit``
                (a session held on another connection).

        Raises:
            ValueError: ``session_id`` is empty, or a duration is not positive.
        """
        if not session_id:
            raise ValueError("session_id is empty")
        self._add((entity, session_id), locked_until, now, max_renewal_duration,
                  lock_duration, on_lock_lost, session_id if target is None else target,
                  (cache, renew))

    def unregister_message(self, entity: str, lock_token: uuid.UUID) -> bool:
        """Stop renewing a message lock.

        Args:
            entity: The entity path.
            lock_token: The message's lock token.

        Returns:
            True if it was registered, False if not.

        Raises nothing: an unknown lock is not an error.
        """
        return self._remove((entity, lock_token))

    def unregister_session(self, entity: str, session_id: str) -> bool:
        """Stop renewing a session lock.

        Args:
            entity: The entity path.
            session_id: The session's id.

        Returns:
            True if it was registered, False if not.

        Raises nothing: an unknown session is not an error.
        """
        return self._remove((entity, session_id))

    def _add(
        self,
        key: Key,
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
        callable_argument(on_lost, "on_lock_lost")
        duration = lock_duration if lock_duration is not None else max(locked_until - now, 0.0)
        renew_until = math.inf if max_renewal_duration is None else now + max_renewal_duration
        record = LockRecord(key, locked_until, duration, renew_until, on_lost, target, via)
        with self._lock:
            if self._closed:
                raise RuntimeError("the lock renewer is stopped")
            slot = self._index(record)
            wake = slot < self._next_run and not self._wake_pending
            if wake:
                self._wake_pending = True
        if wake:
            self._wake()

    def _remove(self, key: Key) -> bool:
        with self._lock:
            record = self._records.get(key)
            self._forget(record)
            return record is not None

    # ---- the tick -----------------------------------------------------------------------

    def run(self, now: float) -> float | None:
        """Settle completed requests and send what is due.

        ``on_lock_lost`` callbacks are called here, after the state is updated.

        Args:
            now: The time now (epoch seconds).

        Returns:
            When to run again (epoch seconds), or None when there is nothing to do.

        Raises:
            Exception: What ``submit`` raised (the renewers log it and go on).
        """
        losses: list[_Loss] = []
        with self._lock:
            if self._closed:
                return None
            self._wake_pending = False
            completed, self._inbox = self._inbox, []
            outgoing: list[Batch] = []
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
            report(callback, loss)
        if log_now:
            log_stats(self.stats())
        return None if next_run == math.inf else next_run

    def _take_due(self, now: float, outgoing: list[Batch], losses: list[_Loss]) -> None:
        by_entity: dict[str, list[LockRecord]] = {}
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

    def _batch(self, entity: str, records: list[LockRecord], now: float, *,
               session: bool = False) -> Batch:
        left = min(r.locked_until for r in records) - now
        timeout = min(self._request_timeout, max(_MIN_ATTEMPT_TIMEOUT, left / 2))
        return Batch(entity, records, session, timeout)

    def _send(self, batch: Batch) -> None:
        request: renew_lock.Request | renew_session_lock.Request
        renew = batch.locks[0].renew if batch.session else None
        if batch.session:
            request = renew_session_lock.Request(session_id=str(batch.locks[0].key[1]))
        else:
            tokens = cast("tuple[uuid.UUID, ...]", tuple(r.key[1] for r in batch.locks))
            request = renew_lock.Request(lock_tokens=tokens)
        batch.request = request
        future: Future[Renewed]
        try:
            if renew is not None:
                future = renew(batch.timeout)
            else:
                future = self._submit(batch.entity, request, batch.timeout)
        except Exception as exc:  # a submit that raises is a failed request like any other
            future = Future()
            future.set_exception(exc)
        batch.future = future
        observed = telemetry()
        if observed is not None and not _traced_by_client(batch):
            observed.linked_operation(
                None if renew is not None else self._endpoint, batch.entity, request,
                [record.target for record in batch.locks]).end_with(future)
        future.add_done_callback(lambda _f: self._completed(batch))

    def _completed(self, batch: Batch) -> None:
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

    def _settle(self, batch: Batch, now: float, outgoing: list[Batch],
                losses: list[_Loss]) -> None:
        observed = telemetry()
        meters = None if observed is None else observed.meters
        margins: list[float] | None = None if meters is None else []
        settlement = settle(batch, now, self._batch_window, self._counters, margins)
        if meters is not None and margins:
            meters.renewed("session" if batch.session else "message", margins)
        for record, at in settlement.schedule:
            self._schedule(record, at)
        for records in settlement.resend:
            outgoing.append(self._batch(batch.entity, records, now))
        for record, reason, error in settlement.drop:
            self._drop(record, reason, error, losses)

    def _drop(self, record: LockRecord, reason: LossReason, error: BaseException | None,
              losses: list[_Loss]) -> None:
        losses.append((record.on_lost or self._on_lock_lost, record.loss(reason, error)))
        if self._records.get(record.key) is record:
            self._forget(record)
        record.state = DONE
        record.target = record.on_lost = None
        self._counters.lost[reason] += 1
        observed = telemetry()
        if observed is not None and observed.meters is not None:
            observed.meters.lost("session" if record.is_session else "message", reason.value)

    # ---- reporting ----------------------------------------------------------------------

    def _log_due(self, now: float) -> bool:
        if self._next_log is None:
            self._next_log = now + self._log_interval
            return False
        if now < self._next_log:
            return False
        self._next_log = now + self._log_interval
        return bool(self._records or self._in_flight)

    def locks_held(self) -> tuple[int, int]:
        """The locks registered now (the telemetry's locks-held gauge reads it).

        Returns:
            The number of message locks and the number of session locks.
        """
        with self._lock:
            return len(self._records) - self._sessions, self._sessions

    def stats(self) -> RenewerStats:
        """A snapshot of the counters.

        Returns:
            Locks tracked, requests sent, tokens renewed, losses by reason, lateness.
        """
        with self._lock:
            return self._counters.snapshot(len(self._records), self._sessions, self._in_flight)

    def close(self) -> None:
        """Stop: forget every record and ignore replies still on their way (no reports)."""
        with self._lock:
            self._closed = True
            self._clear()
            self._inbox.clear()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed


def _traced_by_client(batch: Batch) -> bool:
    """Whether the request is sbmgmt's own session lock renewing itself: a client call,
    with its own span and measurement already."""
    return batch.session and isinstance(batch.locks[0].target, SessionLock | AsyncSessionLock)


def _check_duration(name: str, value: float | None) -> None:
    if value is not None:
        positive_seconds(value, name)

