"""Calls from other threads onto the server thread, each answered to its own caller.

Theory of operation. What another thread asks of the server (a fault, a clock move, an
in-memory connection to serve, the links of a deleted entity to detach) must run on the
server thread, which owns proton. The caller puts a :class:`QueuedCall` (the action and
the words for what it does) on the :class:`CallQueue` and wakes the loop; the server
thread takes every queued call at its next wake-up and runs each in turn
(:meth:`CallQueue.run_queued`, under the namespace lock). A call's result or exception is
kept on that call and handed to its own caller, whose thread raises it: a call that fails
neither stops the calls queued after it nor reaches the server's other wake-up work (its
pump, a stop). A caller that waits longer than its time-out is told what did not happen,
in its own words. When the server stops, :meth:`CallQueue.close` fails every call still
queued, and every later one at once, with :class:`ServerStopped`: no caller waits out its
time-out for a call that can no longer run.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["CallQueue", "QueuedCall", "ServerStopped"]

_T = TypeVar("_T")


class ServerStopped(RuntimeError):
    """The server thread stopped before it ran the call."""


class QueuedCall(Generic[_T]):
    """One action for the server thread; its caller waits on :meth:`outcome`."""

    def __init__(self, action: Callable[[], _T], what: str) -> None:
        self.what = what
        self._action = action
        self._done = threading.Event()
        self._result: list[_T] = []
        self._error: BaseException | None = None

    def run(self) -> None:
        """On the server thread: run the action, keeping its result or its exception."""
        try:
            self._result.append(self._action())
        except Exception as exc:  # the caller's failure, raised in the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def fail(self, error: BaseException) -> None:
        """Answer the caller with ``error`` without running the action."""
        self._error = error
        self._done.set()

    def outcome(self, timeout: float) -> _T:
        """From the caller's thread: the action's result, or what it raised (a
        :class:`TimeoutError` naming the call if nothing came within ``timeout`` seconds)."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"the fake namespace's server thread did not {self.what} "
                               f"within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._result[0]


class CallQueue:
    """The calls waiting for the server thread, in the order they were put."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: deque[QueuedCall[Any]] = deque()
        self._closed = False

    def put(self, call: QueuedCall[_T]) -> None:
        """From any thread: queue ``call`` (:class:`ServerStopped` once the queue is closed)."""
        with self._lock:
            if self._closed:
                raise ServerStopped(f"the fake namespace's server stopped: it cannot "
                                    f"{call.what}")
            self._calls.append(call)

    def run_queued(self) -> None:
        """On the server thread: run every queued call, each to its own caller."""
        while True:
            with self._lock:
                if not self._calls:
                    return
                call = self._calls.popleft()
            call.run()

    def close(self) -> None:
        """The server stopped: fail the calls still queued, and refuse new ones."""
        with self._lock:
            self._closed = True
            left, self._calls = list(self._calls), deque()
        for call in left:
            call.fail(ServerStopped(f"the fake namespace's server stopped before it could "
                                    f"{call.what}"))
