"""A loop timer for a deadline on the fake's clock.

Theory of operation
-------------------
The fake's clock is real time plus an offset that tests move forward
(:meth:`fakes.FakeClock.advance`); the engine loop's timers run on the monotonic clock.
A :class:`DeadlineTimer` keeps one loop task for the earliest deadline it was armed
with, in fake-clock seconds: :meth:`arm` with an earlier deadline replaces the task, a
later one is ignored (the callback arms the next deadline when it runs). When the
clock jumps, :meth:`clock_moved` schedules the armed deadline again from the new time,
so a deadline never fires late by the size of the jump. Everything runs on the loop's
thread.
"""

from __future__ import annotations

from collections.abc import Callable

from sbmgmt.transport.selector_loop import EngineLoop, Task

from ._clock import FakeClock

__all__ = ["DeadlineTimer"]

#: Fire just after the deadline, so that ``now >= deadline`` holds when the callback runs.
_SLACK = 0.001


class DeadlineTimer:
    """Calls ``callback`` on the loop when the fake clock reaches the earliest armed deadline."""

    def __init__(self, loop: EngineLoop, clock: FakeClock, callback: Callable[[], None]) -> None:
        self._loop = loop
        self._clock = clock
        self._callback = callback
        self._task: Task | None = None
        self._due: float | None = None

    @property
    def due(self) -> float | None:
        """The deadline armed now (fake-clock seconds), if any."""
        return self._due

    def arm(self, due: float | None) -> None:
        """Make sure the callback runs by ``due`` (``None``: nothing to wait for)."""
        if due is None or (self._due is not None and self._due <= due):
            return
        self._schedule(due)

    def clock_moved(self) -> None:
        """The fake clock jumped: schedule the armed deadline from the new time."""
        if self._due is not None:
            self._schedule(self._due)

    def cancel(self) -> None:
        """Forget the armed deadline."""
        if self._task is not None:
            self._task.cancel()
        self._task = None
        self._due = None

    def _schedule(self, due: float) -> None:
        if self._task is not None:
            self._task.cancel()
        self._due = due
        self._task = self._loop.schedule(max(0.0, due - self._clock.now()) + _SLACK, self._fire)

    def _fire(self) -> None:
        self._task = None
        self._due = None
        self._callback()
