"""How a thread blocked in a call waits for its request's outcome.

Theory of operation
-------------------
A :class:`Waiter` is the future of one blocking call (``ClientCore.call``): a lock,
acquired when it is made, that the engine's side releases when the outcome is in and
the caller's thread acquires to wait for it, the least a hand-over between two threads
costs. What releases it is the driver's choice (``ready``): at once, or (the sync
client's I/O thread) in a list the driver releases together once its round of work is
done, just before it waits on its sockets again, and it then yields the GIL once: a
caller woken in the middle of the round would only contend for the GIL with the thread
that is resolving the others; woken together at the end, they run and hand their next
requests over while the I/O thread steps aside, and it takes them all in its next round
(:class:`~sbmgmt.transport.selector_loop.Gate`: work handed over while the loop runs needs no
wake-up).

The dispatcher resolves a request exactly once, so the lock is released once. A caller
that gives up (its wait timed out) marks the waiter cancelled; a request not yet sent is
then dropped, and a late outcome releases a lock nobody waits for.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable
from typing import Any

from ..errors import OperationTimeoutError

__all__ = ["Waiter", "release"]


def release(lock: _thread.LockType) -> None:
    """Release ``lock`` now (the default ``ready`` of a :class:`Waiter`)."""
    lock.release()


class Waiter:
    """The outcome of one request, for the one thread that blocks until it is in."""

    __slots__ = ("_cancelled", "_error", "_lock", "_ready", "_result")

    def __init__(self, ready: Callable[[_thread.LockType], None] = release) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self._ready = ready
        self._cancelled = False
        self._result: Any = None
        self._error: BaseException | None = None

    def cancelled(self) -> bool:
        return self._cancelled

    def set_result(self, result: Any, /) -> None:
        self._result = result
        self._ready(self._lock)

    def set_exception(self, exception: BaseException, /) -> None:
        self._error = exception
        self._ready(self._lock)

    def result(self, operation: str, timeout: float) -> Any:
        """The result (or raise the error) once in; past ``timeout`` seconds the driver
        is gone: OperationTimeoutError, and a late outcome is dropped."""
        if not self._lock.acquire(timeout=timeout):
            self._cancelled = True
            raise OperationTimeoutError(
                f"{operation}: no outcome from the I/O thread", operation=operation)
        if self._error is not None:
            raise self._error
        return self._result
