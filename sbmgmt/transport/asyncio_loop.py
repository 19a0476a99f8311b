"""The asyncio driver of proton's protocol engine: a running event loop's callbacks.

Theory of operation
-------------------
:class:`AsyncioLoop` is a :class:`~sbmgmt.transport.proton_loop.ProtonLoop` (the events,
sockets and transports every driver shares) that has no loop of its own: it lives on
a running asyncio event loop, on that loop's thread, and does its work in *turns*.
A turn runs the handler's ``on_wake`` if a wake-up is due, dispatches every queued
proton event, then flushes the transports (writes what they have pending straight to
the non-blocking sockets, sets each socket's interest, ticks them), again while
events keep coming; then it arms one timer for the earliest tick deadline. A turn
runs:

- when a socket is readable (``add_reader``: the bytes go into the transport first)
  or writable (``add_writer``: a connect finished, or output waits for room);
- when a timer of the handler's is due (:meth:`schedule` is ``call_later``);
- soon after :meth:`wake` (``call_soon``; from another thread
  ``call_soon_threadsafe``), once per burst: a thousand requests handed over in one
  pass of the event loop cost one turn;
- at once, when the handler's side asks for it (:meth:`turn_now`) outside a turn: the
  client's driver does so every so many requests of a burst, so that a burst's first
  requests are on the wire while the event loop's pass still builds the rest (a turn
  queued with ``call_soon`` runs after every task already scheduled in that pass: the
  first of 2,000 gathered calls would wait for all 2,000 to be built, and at 20 ms a
  round trip that wait adds to it instead of overlapping it).

A socket's interest is the event loop's reader and writer callbacks
(:meth:`_watch`), added and removed only when the transport's wish changes. Host
names are resolved in the event loop's executor (``getaddrinfo``), so a turn never
blocks on the network; an IP literal is used as it is.

What a handler raises without an ``on_handler_error`` ends the driver: ``failed``
is called with the error (the client's driver fails everything pending), and every
socket is closed. :meth:`stop` ends it the same way without an error, after the
current turn: what the transports still have pending is written (best effort), then
every socket is closed. Everything except :meth:`wake` runs on the event loop's
thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from proton import Transport

from .proton_loop import ProtonLoop
from .sockets import SocketEntry, fail, read, selectable, write

__all__ = ["AsyncioLoop"]

_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE
_MAX_WAIT = 3600.0  # a transport's tick deadline can be far off


class AsyncioLoop(ProtonLoop):
    """Runs proton connections for ``handler`` on the running event loop ``loop``."""

    def __init__(self, handler: Any, *, container_id: str, loop: asyncio.AbstractEventLoop,
                 failed: Callable[[Exception], None]) -> None:
        super().__init__(handler, container_id=container_id)
        self._loop = loop
        self._thread = threading.get_ident()
        self._failed = failed
        self._turn_handle: asyncio.Handle | None = None
        self._wake_due = False
        self._tick_handle: asyncio.TimerHandle | None = None
        self._tick_at: float | None = None
        self._ended = False
        self._turning = False

    @property
    def ended(self) -> bool:
        """Whether the driver has stopped (or failed) and closed its sockets."""
        return self._ended

    # ---- any thread --------------------------------------------------------------

    def wake(self) -> None:
        """Have a turn call ``handler.on_wake()`` soon (from any thread)."""
        if threading.get_ident() == self._thread:
            self.wake_here()
            return
        with contextlib.suppress(RuntimeError):  # a closed event loop runs nothing more
            self._loop.call_soon_threadsafe(self.wake_here)

    # ---- the event loop's thread -------------------------------------------------

    def schedule(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        """Run ``callback`` in a turn after ``delay`` seconds."""
        return self._loop.call_later(max(0.0, delay), self._timer, callback)

    def stop(self) -> None:
        """End after the current turn (or in the next one, soon)."""
        super().stop()
        self._soon()

    def close(self) -> None:
        """End now (the event loop may not be running): write what the transports have
        pending (best effort) and close every socket."""
        self._end()

    def wake_here(self) -> None:
        """:meth:`wake` from the event loop's own thread."""
        self._wake_due = True
        self._soon()

    def turn_now(self) -> None:
        """Run a turn that calls ``handler.on_wake()`` now, from the event loop's own
        thread; inside a turn (a callback of the handler's), the same as
        :meth:`wake_here`."""
        self._wake_due = True
        if self._turning:
            self._soon()
            return
        if self._turn_handle is not None:
            self._turn_handle.cancel()
        self._turn()

    def _soon(self) -> None:
        if self._turn_handle is None and not self._ended and not self._loop.is_closed():
            self._turn_handle = self._loop.call_soon(self._turn)

    def _timer(self, callback: Callable[[], None]) -> None:
        if self._ended:
            return
        self._guarded(callback)
        self._turn()

    def _turn(self) -> None:
        self._turn_handle = None
        if self._ended:
            return
        self._turning = True
        try:
            if self._wake_due:
                self._wake_due = False
                self._woken()
            self._dispatch()
            while not self._stopping:
                tick = self._flush()
                if not self._dispatchable():
                    self._arm_tick(tick)
                    return
                self._dispatch()
        except Exception as exc:
            self._end()
            self._failed(exc)
            return
        finally:
            self._turning = False
        self._end()

    def _end(self) -> None:
        """Close every socket (writing what is pending first) and stop doing turns."""
        if self._ended:
            return
        self._ended = True
        for handle in (self._turn_handle, self._tick_handle):
            if handle is not None:
                handle.cancel()
        self._turn_handle = self._tick_handle = None
        self._close_sockets()

    def _arm_tick(self, deadline: float | None) -> None:
        """One timer for the transports' earliest tick deadline (idle-timeout frames)."""
        if deadline == self._tick_at:
            return
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
        self._tick_at = deadline
        if deadline is not None:
            delay = min(_MAX_WAIT, max(0.0, deadline - time.monotonic()))
            self._tick_handle = self._loop.call_later(delay, self._ticked)

    def _ticked(self) -> None:
        self._tick_handle = None
        self._tick_at = None
        self._turn()

    # ---- sockets -----------------------------------------------------------------

    def _watch(self, entry: SocketEntry, wanted: int) -> None:
        fd = selectable(entry.sock).fileno()
        had = entry.events
        if wanted & _READ and not had & _READ:
            self._loop.add_reader(fd, self._readable, entry)
        elif had & _READ and not wanted & _READ:
            self._loop.remove_reader(fd)
        if wanted & _WRITE and not had & _WRITE:
            self._loop.add_writer(fd, self._writable, entry)
        elif had & _WRITE and not wanted & _WRITE:
            self._loop.remove_writer(fd)
        entry.events = wanted

    def _readable(self, entry: SocketEntry) -> None:
        read(entry)
        self._turn()

    def _writable(self, entry: SocketEntry) -> None:
        if entry.connecting:
            self._connected(entry)
        else:
            write(entry)
        self._turn()

    def _resolve(self, transport: Transport, host: str, port: int) -> None:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            lookup = self._loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            asyncio.ensure_future(lookup, loop=self._loop).add_done_callback(
                lambda done: self._resolved(transport, host, done))
            return
        super()._resolve(transport, host, port)  # a literal address: nothing to look up

    def _resolved(self, transport: Transport, host: str, done: asyncio.Future[Any]) -> None:
        if self._ended or self._stopping:
            return
        error = None if done.cancelled() else done.exception()
        if done.cancelled() or error is not None:
            fail(transport, f"cannot resolve {host}: {error or 'cancelled'}")
        else:
            try:
                self._start_connect(transport, done.result())
            except OSError as exc:  # no socket to be had (out of descriptors)
                fail(transport, f"cannot connect to {host}: {exc}")
        self._turn()
