"""The server side of the engine loop: listeners, screens, handshake and idle time-outs.

Theory of operation
-------------------
:class:`ServerLoop` is an :class:`~sbmgmt.transport.selector_loop.EngineLoop` (the fake namespace's)
that also accepts connections. :meth:`ServerLoop.listen` may screen each connection's
incoming bytes before its transport reads them (a :class:`~sbmgmt.transport.sockets.Screen`;
refused bytes close the socket), closes a connection whose peer has not opened it
within the handshake time-out, and advertises (and enforces) an idle time-out. When
``accept`` fails for want of descriptors (EMFILE), the listeners leave the selector
until a socket is closed (or a short rest passes), rather than waking the loop again
and again. :meth:`ServerLoop.adopt` serves a connection over an in-memory
:class:`~sbmgmt.transport.sockets.Stream` (``sbmgmt.testing``), as if a client had connected.
A listener may add a latency to its connections (each one's bytes held half a round trip
each way in this loop: :mod:`~sbmgmt.transport.delayed_socket`). A handler with an
``on_events_dispatched()`` method has it called after each run of
the queued events (every event the transports' last reads and writes made), guarded as
a timer is: work the events owe once, not once an event (the fake's pump), goes there. A
handler's ``before_writing()`` is called before a long run of events writes what is ready
in its middle (the fake's data directory commits there, so nothing leaves before what it
acknowledges is on disk).
Everything runs on the loop's thread.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import selectors
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cproton import PN_REMOTE_UNINIT, pn_connection_state
from proton import Connection, Transport

from .delayed_socket import DelayedSocket
from .selector_loop import EngineLoop
from .sockets import Screen, SocketEntry, Stream, fail, read

__all__ = ["ServerLoop"]

#: accept() errors that mean "no descriptor (or memory) for a new socket now".
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: How long the listeners rest after running out of descriptors, at most.
_ACCEPT_PAUSE = 0.5


@dataclass(frozen=True, slots=True)
class _Listening:
    """How a listener's connections are served."""

    screen: Callable[[], Screen] | None
    handshake_timeout: float | None
    idle_timeout: float | None
    latency: Callable[[], float] | None


class ServerLoop(EngineLoop):
    """An :class:`~sbmgmt.transport.selector_loop.EngineLoop` that serves connections too."""

    def __init__(self, handler: Any, *, container_id: str) -> None:
        super().__init__(handler, container_id=container_id)
        self._listeners: dict[socket.socket, _Listening] = {}
        self._accept_paused = False
        self._after_events: Callable[[], None] | None = getattr(
            handler, "on_events_dispatched", None)
        self._before_writing: Callable[[], None] | None = getattr(
            handler, "before_writing", None)
        #: Delayed sockets not closed yet (a closed connection's last bytes still held).
        self._delayed: set[DelayedSocket] = set()

    def _dispatch(self) -> None:
        """Dispatch the queued events, then the handler's ``on_events_dispatched``."""
        super()._dispatch()
        if self._after_events is not None:
            self._guarded(self._after_events)

    def _write_ready(self) -> None:
        """The handler's ``before_writing``, then write what the transports have pending."""
        if self._before_writing is not None:
            self._guarded(self._before_writing)
        super()._write_ready()

    def listen(self, host: str, port: int, *, screen: Callable[[], Screen] | None = None,
               handshake_timeout: float | None = None,
               idle_timeout: float | None = None,
               latency: Callable[[], float] | None = None) -> int:
        """Accept server connections on ``host:port`` (0: any free port); the port.

        ``screen`` makes each connection's :class:`Screen`; ``handshake_timeout``
        (seconds) closes a connection the peer has not opened by then;
        ``idle_timeout`` is advertised in the open frame and enforced; ``latency``, asked
        at each accept, is the round trip (seconds) added to that connection's bytes,
        half each way (a :class:`~sbmgmt.transport.delayed_socket.DelayedSocket`).
        """
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family)
        listener.setblocking(False)
        self._listeners[listener] = _Listening(screen, handshake_timeout, idle_timeout,
                                               latency)
        if not self._accept_paused:
            self._selector.register(listener, selectors.EVENT_READ, None)
        return int(listener.getsockname()[1])

    def close_listeners(self) -> None:
        """Stop accepting connections."""
        for listener in self._listeners:
            if not self._accept_paused:
                self._selector.unregister(listener)
            listener.close()
        self._listeners.clear()

    def _listener_ready(self, listener: socket.socket) -> None:
        listening = self._listeners[listener]
        while True:
            try:
                sock, _peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_DESCRIPTORS:
                    self._pause_accepting()
                return
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._serve(sock, None, listening)

    def adopt(self, stream: Stream) -> None:
        """Serve a server connection over ``stream``, as if a client had connected."""
        self._serve(None, stream, None)

    def _serve(self, sock: socket.socket | None, stream: Stream | None,
               listening: _Listening | None) -> None:
        """Serve one server connection (``listening``: its listener's settings; None for
        an adopted stream)."""
        connection = Connection()
        connection.container = self._container_id
        connection.collect(self._collector)
        transport = Transport(Transport.SERVER)
        if listening is not None and listening.idle_timeout is not None:
            transport.idle_timeout = listening.idle_timeout
        transport.bind(connection)
        screen = (listening.screen() if listening is not None and listening.screen is not None
                  else None)
        entry = SocketEntry(sock, transport, [], connecting=False, stream=stream, screen=screen)
        round_trip = (listening.latency() if sock is not None and listening is not None
                      and listening.latency is not None else 0.0)
        if round_trip > 0:
            assert sock is not None
            entry.io = entry.delayed = DelayedSocket(
                sock, round_trip / 2, schedule=self.schedule,
                on_due=functools.partial(read, entry), on_closed=self._delayed.discard)
            self._delayed.add(entry.delayed)
        self._add(entry)
        if listening is not None and listening.handshake_timeout is not None:
            self.schedule(listening.handshake_timeout,
                          functools.partial(self._handshake_due, entry))

    def _handshake_due(self, entry: SocketEntry) -> None:
        """Close a server connection whose peer has not opened it in time."""
        if self._sockets.get(entry.transport._impl) is not entry:
            return
        connection = entry.transport.connection
        if connection is None or pn_connection_state(connection._impl) & PN_REMOTE_UNINIT:
            fail(entry.transport, "the peer did not open the connection in time",
                 "amqp:resource-limit-exceeded")

    def _pause_accepting(self) -> None:
        """Out of descriptors: stop polling the listeners until a socket closes (or a
        short rest passes, for descriptors freed elsewhere in the process)."""
        if self._accept_paused:
            return
        self._accept_paused = True
        for listener in self._listeners:
            self._selector.unregister(listener)
        self.schedule(_ACCEPT_PAUSE, self._resume_accepting)

    def _socket_closed(self) -> None:
        self._resume_accepting()

    def _resume_accepting(self) -> None:
        if not self._accept_paused:
            return
        self._accept_paused = False
        for listener in self._listeners:
            self._selector.register(listener, selectors.EVENT_READ, None)

    @property
    def accepting(self) -> bool:
        """Whether the listeners are polled (False while out of descriptors)."""
        return not self._accept_paused

    def _close_all(self) -> None:
        self.close_listeners()
        super()._close_all()
        for delayed in list(self._delayed):  # no timer runs any more to close them
            delayed.close_now()
