"""The in-memory byte pipe that replaces the client's socket, and where it is plugged in.

Theory of operation
-------------------
:func:`pipe` gives two connected :class:`PipeEnd` objects, each a
:class:`sbmgmt.transport.sockets.Stream`: whatever one end sends, the other receives, in order.
One lock guards the pair. :meth:`PipeEnd.send` appends to the peer's inbox and calls
the peer's wake function (the peer's engine loop then reads it on its own thread);
:meth:`PipeEnd.recv` takes from its own inbox, raising BlockingIOError when it is
empty and returning ``b""`` once the peer has closed and everything it sent has been
read. Sending after either end has closed raises BrokenPipeError, as a socket whose
peer is gone does. Each end is used by one engine loop; only ``send`` and ``close``
reach the other side, through the lock and the wake call.

:func:`connect_in_memory` stands in for :meth:`sbmgmt.transport.proton_loop.ProtonLoop.connect`
(the one place a client opens its socket, whichever driver runs it): it opens the same
client connection (SASL ANONYMOUS, the same AMQP frames) over one end of a new pipe and
hands the other end to ``serve`` (the mock's server loop). TLS is not used: it belongs
to the socket being replaced.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from proton import Connection

from ..transport.proton_loop import ProtonLoop
from ..transport.sockets import Stream

__all__ = ["PipeEnd", "connect_in_memory", "pipe"]

#: ProtonLoop.connect as defined, kept before anything patches it.
_REAL_CONNECT = ProtonLoop.connect


def _nothing() -> None:
    """The wake function of an end nobody watches yet."""


class PipeEnd:
    """One end of an in-memory pipe (a :class:`sbmgmt.transport.sockets.Stream`)."""

    __slots__ = ("_closed", "_inbox", "_lock", "_wake", "peer")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._inbox = bytearray()
        self._closed = False
        self._wake: Callable[[], None] = _nothing
        self.peer: PipeEnd = self

    def watch(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` whenever bytes or the end arrive."""
        with self._lock:
            self._wake = wake

    def send(self, data: bytes, /) -> int:
        """Hand ``data`` to the peer; BrokenPipeError once either end has closed."""
        peer = self.peer
        with self._lock:
            if self._closed or peer._closed:
                raise BrokenPipeError("the in-memory pipe is closed")
            peer._inbox += data
            wake = peer._wake
        wake()
        return len(data)

    def recv(self, size: int, /) -> bytes:
        """Up to ``size`` bytes the peer sent; ``b""`` at the end; BlockingIOError if none."""
        with self._lock:
            if self._inbox:
                data = bytes(self._inbox[:size])
                del self._inbox[:size]
                return data
            if self._closed or self.peer._closed:
                return b""
        raise BlockingIOError("nothing to read yet")

    def close(self) -> None:
        """Close this end; the peer reads the end after what was already sent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            wake = self.peer._wake
        wake()


def pipe() -> tuple[PipeEnd, PipeEnd]:
    """Two connected ends: (the client's, the server's)."""
    lock = threading.Lock()
    client, server = PipeEnd(lock), PipeEnd(lock)
    client.peer, server.peer = server, client
    return client, server


def connect_in_memory(
    serve: Callable[[Stream], None],
    loop: ProtonLoop,
    host: str,
    port: int,
    **options: Any,
) -> Connection:
    """``loop.connect(host, port, ...)`` over a new pipe whose server end goes to ``serve``."""
    options.pop("ssl_domain", None)
    client, server = pipe()
    serve(server)
    connection: Connection = _REAL_CONNECT(loop, host, port, stream=client, **options)
    return connection
