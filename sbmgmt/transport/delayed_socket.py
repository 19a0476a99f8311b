"""A server connection's socket with a network's latency: every byte held for half a round
trip each way, inside the loop that serves the connection.

A latency proxy between two peers costs the CPU of a third process (its reads, writes and
wake-ups), which a real network takes from neither peer: on a machine whose cores the peers
already keep busy, that skews what the latency is measured to cost. Holding the bytes in the
server's own loop adds timers there and nothing else.

Theory of operation
-------------------
The loop reads and writes a connection through its entry's ``io``; a :class:`DelayedSocket`
stands there for the real socket, which the loop's selector still watches. Everything runs
on the loop's thread.

- **In**: :meth:`DelayedSocket.recv` takes what one read of the socket gives into a
  queue (the loop reads again when the selector says there is more), each chunk stamped
  with when it is due (now + ``delay``), and hands out only what is due; with nothing due
  it raises ``BlockingIOError``, as a drained non-blocking socket does. The end
  of the stream and a socket error are queued the same way, behind the bytes before them;
  once the end came the socket is not read again (``reading`` is False, so the loop stops
  watching it rather than being woken by it until the end is due, and ``holding`` keeps
  the connection from being taken for finished meanwhile). A timer armed for the
  queue's first chunk calls ``on_due`` (the loop's read of the entry) when it is due. A
  read takes no more than the transport has room for (8 KB, as proton starts): what is due
  beyond it is handed out at the loop's next pass, as the selector would report a real
  socket still readable (not a millisecond later, which held a busy connection to 8 KB a
  millisecond); only a read that found no room at all waits that millisecond.
- **Out**: :meth:`DelayedSocket.send` takes every byte at once, stamped the same way, and a
  timer writes what is due when it is due; what the socket does not take then is tried
  again a millisecond later, ahead of anything after it. A failure there is kept and raised
  by the next ``send`` or ``recv`` (the loop then closes the transport, as it would have).
- **Close**: :meth:`DelayedSocket.close` closes the socket once everything sent before it
  was written (the peer reads the end after the bytes, as over a network);
  :meth:`DelayedSocket.close_now` closes it at once (the loop itself is ending).

Each way, chunks leave in the order they came: the stamps only grow (one delay, a monotonic
clock), and one timer at a time serves each queue from its front.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

__all__ = ["DelayedSocket"]

#: How soon a write the socket did not take, or a read the transport had no room for, is
#: tried again.
_RETRY = 0.001
#: How much is read from the socket at a time.
_READ_SIZE = 1 << 16


class _Scheduler(Protocol):
    def __call__(self, delay: float, callback: Callable[[], None], /) -> object: ...


class _End:
    """The end of the incoming stream, queued behind the bytes before it."""


_END = _End()


class DelayedSocket:
    """``sock`` with ``delay`` seconds added each way (see the module's theory): ``schedule``
    runs a callback on the loop after a delay, ``on_due`` is the loop's read of the
    connection, ``on_closed`` is told once the socket is closed; ``clock`` is the loop's."""

    __slots__ = (
        "_clock",
        "_closing",
        "_delay",
        "_ended",
        "_error",
        "_in_armed",
        "_incoming",
        "_on_closed",
        "_on_due",
        "_out_armed",
        "_outgoing",
        "_schedule",
        "_sock",
        "reading",
    )

    def __init__(self, sock: socket.socket, delay: float, *, schedule: _Scheduler,
                 on_due: Callable[[], object], on_closed: Callable[[DelayedSocket], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sock = sock
        self._clock = clock
        self._delay = delay
        self._schedule = schedule
        self._on_due = on_due
        self._on_closed = on_closed
        self._incoming: deque[tuple[float, bytes | _End | OSError]] = deque()
        self._outgoing: deque[tuple[float, bytes]] = deque()
        self._in_armed = False
        self._out_armed = False
        self._closing = False
        self._error: OSError | None = None
        self._ended = False
        #: Whether the socket may still have something to read (False once its end came).
        self.reading = True

    # ---- in ------------------------------------------------------------------------

    def recv(self, size: int, /) -> bytes:
        """Up to ``size`` bytes of what is due; ``b""`` once the end is due."""
        if self._error is not None:
            raise self._error
        if self._ended:
            return b""
        self._take()
        incoming = self._incoming
        now = self._clock()
        taken: list[bytes] = []
        room = size
        while incoming and incoming[0][0] <= now and room > 0:
            due, chunk = incoming[0]
            if not isinstance(chunk, bytes):
                if taken:
                    break  # the bytes before it first
                incoming.popleft()
                if isinstance(chunk, OSError):
                    raise chunk
                self._ended = True
                return b""
            if len(chunk) > room:
                incoming[0] = (due, chunk[room:])
                chunk = chunk[:room]
            else:
                incoming.popleft()
            taken.append(chunk)
            room -= len(chunk)
        # due and left behind: the read was full; the rest at the loop's next pass
        self._arm_in(again=0.0 if taken else _RETRY)
        if not taken:
            raise BlockingIOError
        return b"".join(taken)

    @property
    def holding(self) -> bool:
        """Whether incoming bytes (or the end) wait for their time: the connection is not
        finished while they do, though the socket is no longer read."""
        return bool(self._incoming)

    def _take(self) -> None:
        """Queue one read of the socket (the selector says when there is more), or its
        end or error."""
        if not self.reading:
            return
        due = self._clock() + self._delay
        try:
            data = self._sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._incoming.append((due, exc))
            self.reading = False
            return
        if not data:
            self._incoming.append((due, _END))
            self.reading = False
            return
        self._incoming.append((due, data))

    def _arm_in(self, again: float = _RETRY) -> None:
        """Arm the timer for the first chunk held: when it is due, or ``again`` seconds
        from now if it is due already (still here after a read)."""
        if self._in_armed or not self._incoming:
            return
        self._in_armed = True
        wait = self._incoming[0][0] - self._clock()
        self._schedule(wait if wait > 0 else again, self._in_due)

    def _in_due(self) -> None:
        self._in_armed = False
        self._on_due()  # the loop reads what is due (arming the timer for the rest)
        self._arm_in()  # not read: the transport had no room (again shortly)

    # ---- out -----------------------------------------------------------------------

    def send(self, data: bytes, /) -> int:
        """Take all of ``data``, to be written when it is due."""
        if self._error is not None:
            raise self._error
        if data:
            self._outgoing.append((self._clock() + self._delay, bytes(data)))
            self._arm_out()
        return len(data)

    def _arm_out(self) -> None:
        if self._out_armed or not self._outgoing:
            return
        self._out_armed = True
        self._schedule(max(0.0, self._outgoing[0][0] - self._clock()), self._out_due)

    def _out_due(self) -> None:
        self._out_armed = False
        now = self._clock()
        outgoing = self._outgoing
        ready: list[bytes] = []
        while outgoing and outgoing[0][0] <= now:
            ready.append(outgoing.popleft()[1])
        if ready and not self._write(b"".join(ready), now):
            return
        if outgoing:
            self._arm_out()
        elif self._closing:
            self.close_now()

    def _write(self, data: bytes, now: float) -> bool:
        """Write ``data``; what the socket did not take goes back in front, tried again
        shortly. False when the socket failed (the rest is dropped)."""
        try:
            sent = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._error = exc
            self._outgoing.clear()
            if self._closing:
                self.close_now()
            else:
                self._on_due()  # the loop's read raises it: the transport closes
            return False
        if sent < len(data):
            self._outgoing.appendleft((now, data[sent:]))
            self._out_armed = True
            self._schedule(_RETRY, self._out_due)
            return False
        return True

    # ---- close ---------------------------------------------------------------------

    def close(self) -> None:
        """Close once everything sent so far was written."""
        self._incoming.clear()
        self.reading = False
        if self._outgoing:
            self._closing = True
        else:
            self.close_now()

    def close_now(self) -> None:
        """Close the socket now (what is still held is dropped)."""
        self._incoming.clear()
        self._outgoing.clear()
        self._closing = False
        self.reading = False
        self._sock.close()
        self._on_closed(self)
