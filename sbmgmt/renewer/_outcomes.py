"""A renewal request on the wire, and what its outcome means for each of its locks.

Theory of operation
-------------------
A :class:`Batch` is one request: a renew-lock of many tokens of one entity, or one
renew-session-lock. Once its future is done, :func:`settle` reads the outcome, updates
the records and the counters, and says what the scheduler does next (a
:class:`Settlement`):

- success: each record takes its new expiry (and writes it to its target's cached
  expiry, for an azure-servicebus message or session) and is scheduled again;
- 410 (lock lost) or 404 on a batch of several tokens: the batch is split in halves
  that are sent again at once, until each lost token is alone; a lone token's
  failure drops it with ``LOCK_LOST`` (the others keep being renewed);
- a transient error (``sbmgmt._protocol.retry.is_retryable``): each record is retried after
  ``sbmgmt._protocol.retry.RENEWAL_BACKOFF``, never later than half its remaining lock time;
  once a record falls due past its expiry it is dropped with ``EXPIRED``;
- anything else drops the batch's records with ``FAILED``.

Records that left the index while the request was on the wire are not in flight any
more, and are skipped.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .._protocol.retry import RENEWAL_BACKOFF, is_retryable
from ..errors import LockLostError, NotFoundError, ProtocolError, ServiceBusManagementError
from ..ops import renew_lock, renew_session_lock
from ._model import LossReason
from ._stats import Counters
from ._timeline import IN_FLIGHT, LockRecord, renewal_slot

__all__ = ["Batch", "Renewed", "Settlement", "settle"]

# After a success, the next renewal of the same lock is at least this far away.
_MIN_RENEWAL_INTERVAL = 0.25
_MIN_RETRY_DELAY = 0.05

#: What a renewal request answers.
Renewed = renew_lock.Response | renew_session_lock.Response


@dataclass(slots=True)
class Batch:
    """One request on the wire: a renew-lock of many tokens, or one renew-session-lock."""

    entity: str
    locks: list[LockRecord]
    session: bool
    timeout: float
    future: Future[Renewed] | None = None
    request: renew_lock.Request | renew_session_lock.Request | None = None


@dataclass(slots=True)
class Settlement:
    """What the scheduler does with a settled batch's records."""

    #: Records to schedule again, and when.
    schedule: list[tuple[LockRecord, float]] = field(default_factory=list)
    #: Parts of the batch to send again at once (its halves).
    resend: list[list[LockRecord]] = field(default_factory=list)
    #: Records to drop, why, and the error that said so.
    drop: list[tuple[LockRecord, LossReason, BaseException]] = field(default_factory=list)


def settle(batch: Batch, now: float, batch_window: float, counters: Counters,
           margins: list[float] | None = None) -> Settlement:
    """Read a done batch's outcome into its records and ``counters``; what comes next.

    ``margins`` (telemetry on): takes the lock time each renewed record had left.
    """
    assert batch.future is not None
    settlement = Settlement()
    live = [r for r in batch.locks if r.state == IN_FLIGHT]
    if not live:
        return settlement
    error = _error_of(batch.future)
    if error is None:
        try:
            expirations = _expirations(batch)
        except ProtocolError as exc:
            error = exc
        else:
            for record, expiry in zip(batch.locks, expirations, strict=True):
                if record.state == IN_FLIGHT:
                    if margins is not None:
                        margins.append(record.locked_until - now)
                    settlement.schedule.append(
                        (record, _renewed(record, expiry, now, batch_window, counters)))
            if batch.session:
                counters.sessions_renewed += 1
            else:
                counters.tokens_renewed += len(live)
            return settlement
    if isinstance(error, (LockLostError, NotFoundError)):
        if len(live) == 1:
            settlement.drop.append((live[0], LossReason.LOCK_LOST, error))
            return settlement
        counters.splits += 1
        half = len(live) // 2
        settlement.resend += [live[:half], live[half:]]
    elif is_retryable(error, idempotent=True):  # renewals are idempotent
        counters.retries += 1
        settlement.schedule += [(record, _retry_at(record, now)) for record in live]
    else:
        settlement.drop += [(record, LossReason.FAILED, error) for record in live]
    return settlement


def _expirations(batch: Batch) -> list[float]:
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


def _renewed(record: LockRecord, expiry: float, now: float, batch_window: float,
             counters: Counters) -> float:
    """Note a renewal's margin, take its expiry; when to renew the record next."""
    margin = record.locked_until - now
    tightest = counters.tightest_margin
    counters.tightest_margin = margin if tightest is None else min(tightest, margin)
    record.renewed(expiry, now)
    return max(renewal_slot(record, batch_window), now + _MIN_RENEWAL_INTERVAL)


def _retry_at(record: LockRecord, now: float) -> float:
    record.failures += 1
    delay = RENEWAL_BACKOFF.delay(record.failures)
    return now + max(_MIN_RETRY_DELAY, min(delay, (record.locked_until - now) / 2))


def _error_of(future: Future[Any]) -> BaseException | None:
    if future.cancelled():
        return ServiceBusManagementError("the renew request was cancelled")
    return future.exception()
