"""What the renewer reports: why a lock stopped being renewed, and its counters."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

__all__ = ["LockKind", "LockLoss", "LossReason", "OnLockLost", "RenewerStats"]


class LockKind(enum.Enum):
    """What kind of lock a registration keeps alive."""

    MESSAGE = "message"
    SESSION = "session"


class LossReason(enum.Enum):
    """Why the renewer stopped renewing a lock (each lock is reported once)."""

    #: The service answered that the lock is gone (410 lock-lost, or 404: the message or
    #: session no longer exists). The message must be received again.
    LOCK_LOST = "lock_lost"
    #: No renewal could succeed before the lock's expiry (transient errors until then,
    #: or the lock was already expired when it fell due).
    EXPIRED = "expired"
    #: ``max_renewal_duration`` has passed since registration; the lock is left to
    #: expire at its ``locked_until``.
    MAX_DURATION = "max_renewal_duration"
    #: A non-retryable error that is not about this lock (client closed, unauthorized,
    #: a malformed reply); ``LockLoss.error`` carries it.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LockLoss:
    """One lock the renewer dropped, and why; handed to ``on_lock_lost`` (once per lock).

    Attributes:
        kind: [LockKind][sbmgmt.renewer.LockKind] ``MESSAGE`` or ``SESSION``.
        entity: The entity path the lock is on.
        lock_token: The message's lock token (a message lock); None for a session.
        session_id: The session's id (a session lock); None for a message.
        reason: Why: [LossReason][sbmgmt.renewer.LossReason].
        locked_until: The last expiry the renewer knew of (UTC).
        error: The error that ended it (for example the service's ``MessageLockLostError``); None
            when no error did (``MAX_DURATION``).
        target: What was registered: a message, a session object, or the token or session id
            itself.
    """

    kind: LockKind
    entity: str
    lock_token: uuid.UUID | None
    session_id: str | None
    reason: LossReason
    locked_until: datetime
    error: BaseException | None
    target: object


#: A callback told once about each lock the renewer drops. It runs on the renewer's
#: thread (or event loop) and must not block for long.
OnLockLost = Callable[[LockLoss], object]


@dataclass(frozen=True, slots=True)
class RenewerStats:
    """A snapshot of a renewer's counters (counts are totals since it was created).

    Together ``max_lateness`` and ``tightest_margin`` say how close to expiry renewals run.

    Attributes:
        tracked: Locks registered now (messages and sessions).
        message_locks: Message locks registered now.
        session_locks: Session locks registered now.
        requests_in_flight: Renewal requests sent and not answered yet.
        renew_requests: Renewal requests sent (renew-lock batches and session renewals).
        tokens_renewed: Message locks renewed (one per token per successful renewal).
        sessions_renewed: Session locks renewed.
        retries: Renewal requests that failed transiently and were scheduled again.
        splits: Batches split in two after a lock-lost (or not-found) reply, to find the lost
            tokens.
        lost: Locks dropped, per [LossReason][sbmgmt.renewer.LossReason].
        max_lateness: The longest a renewal went out after the moment it fell due (seconds).
        tightest_margin: The least lock time left when a renewal's reply landed (seconds); None
            before the first renewal.
    """

    tracked: int
    message_locks: int
    session_locks: int
    requests_in_flight: int
    renew_requests: int
    tokens_renewed: int
    sessions_renewed: int
    retries: int
    splits: int
    lost: Mapping[LossReason, int]
    max_lateness: float
    tightest_margin: float | None

    @property
    def lost_total(self) -> int:
        """Locks dropped for any reason."""
        return sum(self.lost.values())
