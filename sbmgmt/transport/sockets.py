"""Bytes between a connection's socket (or in-memory :class:`Stream`) and its transport.

The :class:`~sbmgmt.transport.selector_loop.EngineLoop` keeps one :class:`SocketEntry` per
connection and calls these functions on its thread: :func:`read` what the socket holds into the
transport (through the server's :class:`Screen`, if any), :func:`write` what the
transport has pending, :func:`interest` to know which of the two it waits for, and
:func:`pump_stream` to move everything at once over a stream (it has no descriptor for
the selector). A socket error, or the peer going away, closes the transport's ends
with a condition; :func:`fail` does so on purpose.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
from collections.abc import Callable
from typing import Any, Protocol

from proton import Condition, Transport

from .delayed_socket import DelayedSocket

__all__ = [
    "Screen", "SocketEntry", "Stream", "close_ends", "fail", "interest", "pump_stream",
    "read", "selectable", "takes_input", "write",
]

_READ_SIZE = 1 << 16


class Stream(Protocol):
    """A connected byte stream that stands in for a socket (an in-memory pipe)."""

    def watch(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (from any thread) whenever bytes or the end arrive."""

    def send(self, data: bytes, /) -> int:
        """Take ``data``; how many bytes were taken (OSError once the peer is gone)."""

    def recv(self, size: int, /) -> bytes:
        """Up to ``size`` bytes; ``b""`` at the end; BlockingIOError when none yet."""

    def close(self) -> None:
        """Close this end (the peer reads the end once it has read the rest)."""


class Screen(Protocol):
    """Checks a server connection's incoming bytes before its transport reads them, and
    may change what its transport writes before the peer gets it."""

    def feed(self, data: bytes) -> bytes | None:
        """The bytes to pass on now (perhaps fewer, held back); ``None``: close."""

    def outgoing(self, data: bytes) -> bytes:
        """The bytes to send for ``data`` the transport wrote (perhaps changed, or some
        held back until more comes)."""


class SocketEntry:
    """A connection's socket (or :class:`Stream`) and the transport it carries."""

    __slots__ = ("backlog", "connecting", "delayed", "events", "fallbacks", "io", "screen",
                 "sock", "stream", "transport")

    def __init__(self, sock: socket.socket | None, transport: Transport,
                 fallbacks: list[Any], *, connecting: bool, stream: Stream | None = None,
                 screen: Screen | None = None) -> None:
        self.sock = sock
        self.stream = stream
        #: ``sock`` with a latency added (a server loop sets it, and ``io`` to it): read
        #: and written instead of ``sock``, which the loop still watches.
        self.delayed: DelayedSocket | None = None
        self.io: socket.socket | Stream | DelayedSocket = (
            selectable(sock) if stream is None else stream)
        self.transport = transport
        self.fallbacks = fallbacks
        self.connecting = connecting
        self.screen = screen
        #: Screened bytes taken from the transport and not yet sent (a screened entry
        #: takes all the transport has pending: the screen may change their length).
        self.backlog = b""
        self.events = 0


def selectable(sock: socket.socket | None) -> socket.socket:
    """The entry's socket (only streams have none)."""
    assert sock is not None
    return sock


def interest(transport: Transport, backlog: bytes = b"", *, reading: bool = True) -> int:
    """The socket events the transport (and the entry's ``backlog``) wait for (0 once both
    of the transport's ends closed and nothing is left to send); no reading once the
    socket has nothing more to read (``reading`` False: a delayed socket's end came)."""
    wanted = selectors.EVENT_WRITE if backlog else 0
    with contextlib.suppress(Exception):  # proton raises once an end has closed
        if reading and transport.capacity() > 0:
            wanted |= selectors.EVENT_READ
    with contextlib.suppress(Exception):
        if transport.pending() > 0:
            wanted |= selectors.EVENT_WRITE
    return wanted


def takes_input(transport: Transport) -> bool:
    """Whether the transport's input end is still open (it may be full for now)."""
    try:
        return bool(transport.capacity() >= 0)
    except Exception:  # proton raises once the end has closed
        return False


def read(entry: SocketEntry) -> bool:
    """Read what the socket holds into the transport; whether it pushed any bytes."""
    transport = entry.transport
    try:
        capacity = transport.capacity()
    except Exception:
        return False
    if capacity <= 0:
        return False
    try:
        data = entry.io.recv(min(capacity, _READ_SIZE))
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as exc:
        transport.condition = Condition("proton:io", f"recv failed: {exc}")
        transport.close_tail()
        return False
    if data and entry.screen is not None:
        screened = entry.screen.feed(data)
        if screened is None:
            fail(transport, "refused bytes from the peer", "amqp:connection:framing-error")
            return False
        if not screened:
            return False
        return _push_screened(transport, screened)
    if data:
        transport.push(data)
        return True
    # the peer is gone: nothing written from now on reaches it (as proton's Container)
    transport.close_tail()
    transport.close_head()
    return False


def _push_screened(transport: Transport, data: bytes) -> bool:
    """Push what a screen passed on, as the transport makes room: a screen may pass on
    more than was read (bytes it held back, a frame it rewrote longer)."""
    while data:
        room = transport.capacity()
        if room <= 0:
            fail(transport, "the screened bytes do not fit the transport",
                 "amqp:connection:framing-error")
            return False
        transport.push(data[:room])
        data = data[room:]
    return True


def write(entry: SocketEntry) -> bool:
    """Write what the transport has pending (through the entry's screen, if any); whether
    any bytes left."""
    transport = entry.transport
    if entry.screen is not None:
        return _write_screened(entry)
    try:
        pending = transport.pending()
    except Exception:
        return False
    if pending <= 0:
        return False
    try:
        sent = entry.io.send(transport.peek(pending) or b"")
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as exc:
        transport.condition = Condition("proton:io", f"send failed: {exc}")
        transport.close_head()
        return False
    transport.pop(sent)
    return sent > 0


def _write_screened(entry: SocketEntry) -> bool:
    """:func:`write` for a screened entry: everything pending goes through the screen to
    the backlog, and the backlog to the socket."""
    transport = entry.transport
    screen = entry.screen
    assert screen is not None
    with contextlib.suppress(Exception):  # an end closed: send what the backlog holds
        pending = transport.pending()
        if pending > 0:
            entry.backlog += screen.outgoing(transport.peek(pending) or b"")
            transport.pop(pending)
    if not entry.backlog:
        return False
    try:
        sent = entry.io.send(entry.backlog)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as exc:
        transport.condition = Condition("proton:io", f"send failed: {exc}")
        entry.backlog = b""
        with contextlib.suppress(Exception):
            transport.close_head()
        return False
    entry.backlog = entry.backlog[sent:]
    return sent > 0


def pump_stream(entry: SocketEntry) -> None:
    """A stream's turn: write everything the transport has pending (it comes out in
    pieces), then read everything the stream holds while the transport takes input."""
    while write(entry):
        pass
    while interest(entry.transport, entry.backlog) & selectors.EVENT_READ and read(entry):
        pass


def fail(transport: Transport, reason: str, condition: str = "proton:io") -> None:
    """Give the transport a condition (unless it has one) and close both its ends."""
    if transport.condition is None:
        transport.condition = Condition(condition, reason)
    close_ends(transport)


def close_ends(transport: Transport) -> None:
    with contextlib.suppress(Exception):  # an end already closed
        transport.close_tail()
    with contextlib.suppress(Exception):
        transport.close_head()
