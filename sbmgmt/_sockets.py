"""Bytes between a connection's socket (or in-memory :class:`Stream`) and its transport.

The :class:`~sbmgmt._loop.EngineLoop` keeps one :class:`SocketEntry` per connection
and calls these functions on its thread: :func:`read` what the socket holds into the
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

__all__ = [
    "Screen", "SocketEntry", "Stream", "close_ends", "fail", "interest", "pump_stream",
    "read", "selectable", "write",
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
    """Checks a server connection's incoming bytes before its transport reads them."""

    def feed(self, data: bytes) -> bytes | None:
        """The bytes to pass on now (perhaps fewer, held back); ``None``: close."""


class SocketEntry:
    """A connection's socket (or :class:`Stream`) and the transport it carries."""

    __slots__ = ("connecting", "events", "fallbacks", "io", "screen", "sock", "stream",
                 "transport")

    def __init__(self, sock: socket.socket | None, transport: Transport,
                 fallbacks: list[Any], *, connecting: bool, stream: Stream | None = None,
                 screen: Screen | None = None) -> None:
        self.sock = sock
        self.stream = stream
        self.io: socket.socket | Stream = selectable(sock) if stream is None else stream
        self.transport = transport
        self.fallbacks = fallbacks
        self.connecting = connecting
        self.screen = screen
        self.events = 0


def selectable(sock: socket.socket | None) -> socket.socket:
    """The entry's socket (only streams have none)."""
    assert sock is not None
    return sock


def interest(transport: Transport) -> int:
    """The socket events the transport waits for (0 once both of its ends closed)."""
    wanted = 0
    with contextlib.suppress(Exception):  # proton raises once an end has closed
        if transport.capacity() > 0:
            wanted |= selectors.EVENT_READ
    with contextlib.suppress(Exception):
        if transport.pending() > 0:
            wanted |= selectors.EVENT_WRITE
    return wanted


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
        data = screened
        if not data:
            return False
    if data:
        transport.push(data)
        return True
    # the peer is gone: nothing written from now on reaches it (as proton's Container)
    transport.close_tail()
    transport.close_head()
    return False


def write(entry: SocketEntry) -> bool:
    """Write what the transport has pending; whether any bytes left."""
    transport = entry.transport
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


def pump_stream(entry: SocketEntry) -> None:
    """A stream's turn: write everything the transport has pending (it comes out in
    pieces), then read everything the stream holds while the transport takes input."""
    while write(entry):
        pass
    while interest(entry.transport) & selectors.EVENT_READ and read(entry):
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
