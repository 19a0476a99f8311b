"""The fake namespace's clock: real time plus an offset that tests can move forward."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

__all__ = ["FakeClock"]


class FakeClock:
    """Seconds since the Unix epoch, as ``time.time()`` plus an offset.

    It runs with real time by default; :meth:`advance` jumps it forward, and every
    listener registered with :meth:`on_advance` (the server, to wake what became due)
    is told about it.
    """

    def __init__(self, start: float | None = None) -> None:
        self._lock = threading.Lock()
        self._offset = 0.0 if start is None else start - time.time()
        self._listeners: list[Callable[[], None]] = []

    def now(self) -> float:
        """The current time in seconds since the epoch."""
        # One attribute read needs no lock: :meth:`advance` replaces the float whole.
        return time.time() + self._offset

    def now_datetime(self) -> datetime:
        """The current time as a timezone-aware UTC datetime."""
        return datetime.fromtimestamp(self.now(), tz=timezone.utc)

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` and wake everything that became due."""
        if seconds < 0:
            raise ValueError("a FakeClock only moves forward")
        with self._lock:
            self._offset += seconds
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def on_advance(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the advancing thread) after each :meth:`advance`."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        """Stop calling ``listener``."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
