"""Keep many message and session locks alive: batched, pipelined lock renewal.

[LockRenewer][sbmgmt.renewer.LockRenewer] (a background thread) and
[AsyncLockRenewer][sbmgmt.renewer.AsyncLockRenewer] (an asyncio task) drive one shared,
sans-I/O [RenewalScheduler][sbmgmt.renewer.RenewalScheduler] over a client. See
docs/lock-renewal.md.
"""

from __future__ import annotations

from ._model import LockKind, LockLoss, LossReason, OnLockLost, RenewerStats
from ._scheduler import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BATCH_WINDOW,
    DEFAULT_MAX_RENEWAL_DURATION,
    DEFAULT_REQUEST_TIMEOUT,
    RenewalScheduler,
    Submit,
)
from ._shells import AsyncLockRenewer, LockRenewer
from ._timeline import renewal_lead

__all__ = [
    "AsyncLockRenewer",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BATCH_WINDOW",
    "DEFAULT_MAX_RENEWAL_DURATION",
    "DEFAULT_REQUEST_TIMEOUT",
    "LockKind",
    "LockLoss",
    "LockRenewer",
    "LossReason",
    "OnLockLost",
    "RenewalScheduler",
    "RenewerStats",
    "Submit",
    "renewal_lead",
]
