"""The selector driver of proton's protocol engine: a loop on a thread of its own.

Theory of operation
-------------------
:class:`EngineLoop` is a :class:`~sbmgmt.transport.proton_loop.ProtonLoop` (the events,
sockets and transports every driver shares) that waits in ``select`` on the thread
that calls :meth:`EngineLoop.run`. It adds:

- one ``selectors`` selector over the connection sockets, the listening sockets (the
  server side, :class:`~sbmgmt.transport.server_loop.ServerLoop`) and one wake-up socket pair
  (:meth:`EngineLoop.wake`, callable from any thread: one byte per burst);
- a timer heap (:meth:`EngineLoop.schedule`, cancellable :class:`Task` objects).

One iteration: dispatch every queued event; flush the transports (write what they
have pending, set each socket's interest, tick them); then wait in ``select`` until a
socket is ready, a timer is due, a transport's tick deadline passes or another thread
wakes the loop; read what is readable into the transports; run due timers; repeat. An
owner may hold the loop back from waiting (a :class:`Gate`): work it was handed while
the round ran is then taken at once, with no wake-up byte, after the sockets are polled
without waiting and the due timers run (a caller that never pauses starves neither).
:meth:`~sbmgmt.transport.proton_loop.ProtonLoop.stop` ends the loop after the current
iteration; :meth:`EngineLoop.run` then writes what each transport still has pending
(best effort) and closes every socket, the listeners and the wake-up pair.

Everything except :meth:`EngineLoop.wake` runs on the loop's thread. What the
client's asyncio driver does instead is :mod:`sbmgmt.transport.asyncio_loop`.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from .proton_loop import ProtonLoop
from .sockets import SocketEntry, read, selectable, write

__all__ = ["EngineLoop", "Gate", "Task"]

_MAX_WAIT = 3600.0  # epoll refuses far-off timeouts (a message scheduled for 2099)


class Task:
    """A scheduled callback; :meth:`cancel` stops it from running."""

    __slots__ = ("callback", "cancelled", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        """Do not run the callback (a no-op once it has run)."""
        self.cancelled = True


class Gate(Protocol):
    """What the owner of an :class:`EngineLoop` says about waiting (the I/O thread's
    inbox: work handed over while a round runs needs no wake-up)."""

    def sleep(self) -> bool:
        """The round's work is done: True to wait now; False when work came meanwhile
        (the loop then calls ``handler.on_wake()`` at once instead)."""

    def awake(self) -> None:
        """The wait is over."""


class EngineLoop(ProtonLoop):
    """Runs proton connections for ``handler`` on the calling thread (:meth:`run`);
    ``gate``, if given, is asked before each wait whether to wait (:class:`Gate`)."""

    def __init__(self, handler: Any, *, container_id: str, gate: Gate | None = None) -> None:
        super().__init__(handler, container_id=container_id)
        self._gate = gate
        self._selector = selectors.DefaultSelector()
        self._timers: list[tuple[float, int, Task]] = []
        self._order = itertools.count()
        self._wake_lock = threading.Lock()
        self._woken_up = False
        self._wake_reader, self._wake_writer = socket.socketpair()
        for end in (self._wake_reader, self._wake_writer):
            end.setblocking(False)
        self._selector.register(self._wake_reader, selectors.EVENT_READ, None)

    # ---- any thread --------------------------------------------------------------

    def wake(self) -> None:
        """Have the loop call ``handler.on_wake()`` soon (from any thread)."""
        with self._wake_lock:
            if self._woken_up:
                return
            self._woken_up = True
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    # ---- the loop thread ---------------------------------------------------------

    def schedule(self, delay: float, callback: Callable[[], None]) -> Task:
        """Run ``callback`` on the loop after ``delay`` seconds."""
        task = Task(time.monotonic() + max(0.0, delay), callback)
        heapq.heappush(self._timers, (task.deadline, next(self._order), task))
        return task

    def run(self) -> None:
        """Run until :meth:`stop`; then close every socket."""
        try:
            while True:
                self._dispatch()
                if self._stopping:
                    break
                timeout = self._flush()
                if self._dispatchable():
                    continue
                waiting = self._gate is None or self._gate.sleep()
                self._wait(timeout, block=waiting)
                if self._gate is not None:
                    if waiting:
                        self._gate.awake()
                    else:  # work came while the round ran: take it now
                        self._woken()
                self._run_timers()
        finally:
            self._close_all()

    def _watch(self, entry: SocketEntry, wanted: int) -> None:
        sock = selectable(entry.sock)
        if not wanted:
            self._selector.unregister(sock)
        elif not entry.events:
            self._selector.register(sock, wanted, entry)
        else:
            self._selector.modify(sock, wanted, entry)
        entry.events = wanted

    def _listener_ready(self, listener: socket.socket) -> None:
        """A listening socket is readable (a server loop accepts there)."""

    def _wait(self, tick_deadline: float | None, *, block: bool = True) -> None:
        """Wait for the sockets, a wake-up, the next timer or ``tick_deadline`` (only
        poll them if not ``block``); read what is readable."""
        deadline = tick_deadline
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if self._timers and (deadline is None or self._timers[0][0] < deadline):
            deadline = self._timers[0][0]
        timeout = None if block else 0.0
        if block and deadline is not None:
            timeout = min(_MAX_WAIT, max(0.0, deadline - time.monotonic()))
        woken = False
        for key, mask in self._selector.select(timeout):
            entry = key.data
            if entry is None:
                if key.fileobj is self._wake_reader:
                    woken = True
                else:
                    self._listener_ready(key.fileobj)  # type: ignore[arg-type]
            elif entry.connecting:
                self._connected(entry)
            else:
                if mask & selectors.EVENT_READ:
                    read(entry)
                if mask & selectors.EVENT_WRITE:
                    write(entry)
        if woken:
            with contextlib.suppress(OSError):
                self._wake_reader.recv(4096)
            with self._wake_lock:
                self._woken_up = False
            self._woken()

    def _run_timers(self) -> None:
        now = time.monotonic()
        timers = self._timers
        while timers and timers[0][0] <= now:
            _deadline, _order, task = heapq.heappop(timers)
            if not task.cancelled:
                task.cancelled = True
                self._guarded(task.callback)

    def _close_all(self) -> None:
        self._close_sockets()
        self._selector.close()
        self._wake_reader.close()
        with self._wake_lock:
            self._woken_up = True  # nobody reads the pair any more
            self._wake_writer.close()
