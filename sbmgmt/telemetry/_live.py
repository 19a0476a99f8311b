"""The lock renewers alive now, for the locks-held gauge (no opentelemetry import).

Each :class:`~sbmgmt.renewer.RenewalScheduler` adds itself once, when created; the
gauge's callback (:mod:`sbmgmt.telemetry._instruments`) asks each for
``locks_held() -> (message locks, session locks)`` when the metrics are collected, so
holding a lock costs nothing between collections. A renewer that is gone drops out.
"""

from __future__ import annotations

import weakref
from typing import Protocol

__all__ = ["LIVE_RENEWERS", "HoldsLocks"]


class HoldsLocks(Protocol):
    def locks_held(self) -> tuple[int, int]: ...


LIVE_RENEWERS: weakref.WeakSet[HoldsLocks] = weakref.WeakSet()
