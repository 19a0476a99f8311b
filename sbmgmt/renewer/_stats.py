"""What the renewal scheduler counts and tells: its counters, its periodic log line, and
each dropped lock's report to ``on_lock_lost``."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ._model import LockLoss, LossReason, OnLockLost, RenewerStats

__all__ = ["Counters", "log_stats", "report"]

_log = logging.getLogger("sbmgmt.renewer")


@dataclass(slots=True)
class Counters:
    """The scheduler's totals since it was created (updated under its lock)."""

    renew_requests: int = 0
    tokens_renewed: int = 0
    sessions_renewed: int = 0
    retries: int = 0
    splits: int = 0
    lost: dict[LossReason, int] = field(default_factory=lambda: dict.fromkeys(LossReason, 0))
    max_lateness: float = 0.0
    tightest_margin: float | None = None

    def snapshot(self, tracked: int, session_locks: int, requests_in_flight: int
                 ) -> RenewerStats:
        """The counters, with what the scheduler tracks now."""
        return RenewerStats(
            tracked=tracked,
            message_locks=tracked - session_locks,
            session_locks=session_locks,
            requests_in_flight=requests_in_flight,
            renew_requests=self.renew_requests,
            tokens_renewed=self.tokens_renewed,
            sessions_renewed=self.sessions_renewed,
            retries=self.retries,
            splits=self.splits,
            lost=dict(self.lost),
            max_lateness=self.max_lateness,
            tightest_margin=self.tightest_margin,
        )


def report(callback: OnLockLost | None, loss: LockLoss) -> None:
    """Log a dropped lock (debug) and tell ``callback``; an exception it raises is logged."""
    _log.debug("lock renewer: dropped the %s lock %s on %r: %s", loss.kind.value,
               loss.lock_token or loss.session_id, loss.entity, loss.reason.value)
    if callback is None:
        return
    try:
        callback(loss)
    except Exception:
        _log.exception("lock renewer: the on_lock_lost callback raised")


def log_stats(s: RenewerStats) -> None:
    """The periodic log line (info) of a snapshot of the counters."""
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
