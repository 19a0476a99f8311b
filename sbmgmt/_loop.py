"""A small event loop that drives proton's protocol engine over our own sockets.

Theory of operation
-------------------
Proton's ``Container`` is a general reactor written in Python: every protocol event
is wrapped into an ``Event`` that eagerly wraps its delivery, link, session,
connection and transport, then offered to the application handler and to a global
I/O handler, and every socket readiness is itself turned into more events. At
thousands of requests per second that machinery costs as much as the work. This
loop keeps only what a management client or the fake namespace needs:

- one ``selectors`` selector over the connection sockets, the listening sockets and
  one wake-up socket pair (:meth:`EngineLoop.wake`, callable from any thread);
- a timer heap (:meth:`EngineLoop.schedule`, cancellable tasks);
- one proton ``Collector`` shared by every connection. Events are read straight
  from the C collector; the handler method for each event type is looked up once;
  types the handler has no method for are skipped without being wrapped, and the
  handler receives an :class:`EngineEvent` whose ``link``, ``delivery``,
  ``connection``, ``session`` and ``transport`` are wrapped only when read.

One iteration: dispatch every queued event; for each transport, write what it has
pending straight away (the socket is usually writable, so a reply leaves without a
select round), note whether it wants to read or write, and tick it (idle-timeout
heartbeats); then wait in ``select`` until a socket is ready, a timer is due, a
transport's tick deadline passes or another thread wakes the loop; read what is
readable into the transports; run due timers; repeat. A transport whose both ends
have closed has its ``TRANSPORT_CLOSED`` event dispatched to the handler, then its
socket is closed and it is unbound. A transport that wants neither to read nor to
write any more (both ends closed, or failed on bytes it could not decode) has its
socket closed at once: no descriptor outlives its connection. :meth:`EngineLoop.stop`
ends the loop after the current iteration; :meth:`EngineLoop.run` then writes what
each transport still has pending (best effort) and closes every socket, the
listeners and the wake-up pair.

The server side (listeners, screens, handshake and idle time-outs) is
:class:`~sbmgmt._server_loop.ServerLoop`. A handler with an
``on_handler_error(event, error)`` method gets the exceptions its other methods,
timers and wake-ups raise (``event`` None for the last two; a server confines them
to a connection); without one they end the loop.

A connection may run over a :class:`Stream` instead of a socket (``connect(...,
stream=)``, :meth:`~sbmgmt._server_loop.ServerLoop.adopt`): an in-memory byte pipe
(``sbmgmt.testing``). It has no descriptor for the selector, so each iteration also
reads what it holds into its transport; the stream wakes the loop
(:meth:`EngineLoop.wake`) when bytes arrive.

Everything except :meth:`EngineLoop.wake` runs on the loop's thread.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import itertools
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from cproton import (
    PN_TRANSPORT_CLOSED,
    pn_collector_peek,
    pn_collector_pop,
    pn_event_connection,
    pn_event_delivery,
    pn_event_link,
    pn_event_session,
    pn_event_transport,
    pn_event_type,
)
from proton import (
    SSL,
    Collector,
    Connection,
    Delivery,
    Link,
    Session,
    SSLDomain,
    Transport,
)
from proton._events import EventType

from ._open_links import create_coordinator, create_receiver, create_sender
from ._sockets import (
    Screen,
    SocketEntry,
    Stream,
    close_ends,
    fail,
    interest,
    pump_stream,
    read,
    selectable,
    write,
)

__all__ = [
    "EngineEvent", "EngineLoop", "Screen", "Stream", "Task", "create_coordinator",
    "create_receiver", "create_sender",
]

#: accept() errors that mean "no descriptor (or memory) for a new socket now".
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: How long the listeners rest after running out of descriptors, at most.
_ACCEPT_PAUSE = 0.5
_MAX_WAIT = 3600.0  # epoll refuses far-off timeouts (a message scheduled for 2099)
# proton's wrap functions (untyped): a C pointer in, a wrapper (or None for NULL) out.
_wrap_delivery: Any = Delivery.wrap
_wrap_link: Any = Link.wrap
_wrap_session: Any = Session.wrap
_wrap_connection: Any = Connection.wrap
_wrap_transport: Any = Transport.wrap


class EngineEvent:
    """One protocol event, handed to the handler while it is current.

    Its endpoints are wrapped only when read, and only during the handler call: the
    underlying C event (``impl``, for handlers that call proton's C functions on hot
    paths) is gone once the handler returns.
    """

    __slots__ = ("impl",)

    def __init__(self, impl: Any) -> None:
        self.impl = impl

    @property
    def delivery(self) -> Any:
        """The event's ``Delivery``, if it concerns one."""
        return _wrap_delivery(pn_event_delivery(self.impl))

    @property
    def link(self) -> Any:
        """The event's link (a ``Sender`` or ``Receiver``), if it concerns one."""
        return _wrap_link(pn_event_link(self.impl))

    @property
    def session(self) -> Any:
        """The event's ``Session``, if it concerns one."""
        return _wrap_session(pn_event_session(self.impl))

    @property
    def connection(self) -> Any:
        """The event's ``Connection`` (through its session, link or transport)."""
        return _wrap_connection(pn_event_connection(self.impl))

    @property
    def transport(self) -> Any:
        """The event's ``Transport``, if the connection is bound to one."""
        return _wrap_transport(pn_event_transport(self.impl))


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


class EngineLoop:
    """Runs proton connections for ``handler`` on the calling thread (:meth:`run`).

    ``handler`` has proton-style methods (``on_delivery(event)``, ``on_link_flow``,
    ``on_transport_closed`` ...) taking an :class:`EngineEvent`, and optionally
    ``on_wake()``, called on the loop thread after :meth:`wake`.
    """

    def __init__(self, handler: Any, *, container_id: str) -> None:
        self._handler = handler
        self._container_id = container_id
        self._selector = selectors.DefaultSelector()
        self._collector = Collector()
        self._methods: dict[int, Callable[[EngineEvent], None] | None] = {}
        self._timers: list[tuple[float, int, Task]] = []
        self._order = itertools.count()
        # Each connection's socket, by its transport's C pointer: cffi pointers hash and
        # compare by address, while every wrapper proton hands out holds a new Python
        # object for the same pointer.
        self._sockets: dict[Any, SocketEntry] = {}
        self._stopping = False
        self._wake_lock = threading.Lock()
        self._woken = False
        self._wake_reader, self._wake_writer = socket.socketpair()
        for end in (self._wake_reader, self._wake_writer):
            end.setblocking(False)
        self._selector.register(self._wake_reader, selectors.EVENT_READ, None)

    # ---- any thread --------------------------------------------------------------

    def wake(self) -> None:
        """Have the loop call ``handler.on_wake()`` soon (from any thread)."""
        with self._wake_lock:
            if self._woken:
                return
            self._woken = True
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    # ---- the loop thread ---------------------------------------------------------

    def schedule(self, delay: float, callback: Callable[[], None]) -> Task:
        """Run ``callback`` on the loop after ``delay`` seconds."""
        task = Task(time.monotonic() + max(0.0, delay), callback)
        heapq.heappush(self._timers, (task.deadline, next(self._order), task))
        return task

    def stop(self) -> None:
        """End :meth:`run` after the current iteration."""
        self._stopping = True

    def connect(self, host: str, port: int, *, ssl_domain: SSLDomain | None = None,
                virtual_host: str | None = None, sasl_mechs: str = "ANONYMOUS",
                stream: Stream | None = None) -> Connection:
        """Open a client connection (SASL ``sasl_mechs``; TLS if ``ssl_domain``), over
        ``stream`` if given (then ``host`` and ``port`` only name the peer)."""
        connection = Connection()
        connection.container = self._container_id
        connection.hostname = virtual_host or host
        connection.collect(self._collector)
        transport = Transport()
        transport.sasl().allowed_mechs(sasl_mechs)
        if ssl_domain is not None:
            ssl = SSL(transport, ssl_domain)
            ssl.peer_hostname = virtual_host or host
        transport.bind(connection)
        connection.open()
        if stream is not None:
            self._add(SocketEntry(None, transport, [], connecting=False, stream=stream))
            return connection
        try:
            addresses = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        except OSError as exc:
            fail(transport, f"cannot resolve {host}: {exc}")
            return connection
        self._start_connect(transport, addresses)
        return connection

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
                self._wait(timeout)
                self._run_timers()
        finally:
            self._close_all()

    # ---- events ------------------------------------------------------------------

    def _dispatch(self) -> None:
        collector = self._collector._impl
        methods = self._methods
        while True:
            impl = pn_collector_peek(collector)
            if not impl:
                return
            number = pn_event_type(impl)
            try:
                method = methods[number]
            except KeyError:
                method = methods[number] = self._method_for(number)
            if method is not None:
                try:
                    method(EngineEvent(impl))
                except Exception as exc:
                    self._handler_failed(impl, exc)
            if number == PN_TRANSPORT_CLOSED:
                self._transport_closed(impl)
            pn_collector_pop(collector)

    def _handler_failed(self, impl: Any, error: Exception) -> None:
        """A handler method raised: its ``on_handler_error`` decides (given the event,
        or None for a timer or a wake-up), else the loop ends."""
        on_error = getattr(self._handler, "on_handler_error", None)
        if on_error is None:
            raise error
        on_error(None if impl is None else EngineEvent(impl), error)

    def _guarded(self, callback: Callable[[], None]) -> None:
        """Run a timer's or a wake-up's callback; what it raises goes to the handler."""
        try:
            callback()
        except Exception as exc:
            self._handler_failed(None, exc)

    def _method_for(self, number: int) -> Callable[[EngineEvent], None] | None:
        kind = EventType.TYPES.get(number)
        if kind is None:
            return None
        method: Callable[[EngineEvent], None] | None = getattr(self._handler, kind.method, None)
        return method

    def _dispatchable(self) -> bool:
        return bool(pn_collector_peek(self._collector._impl))

    def _transport_closed(self, impl: Any) -> None:
        transport = _wrap_transport(pn_event_transport(impl))
        if transport is None:
            return
        entry = self._sockets.get(transport._impl)
        if entry is not None:
            self._forget(entry)
        transport.unbind()

    # ---- sockets -----------------------------------------------------------------

    def _start_connect(self, transport: Transport, addresses: list[Any]) -> None:
        family, kind, proto, _name, address = addresses[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            self._connect_failed(transport, addresses[1:], code)
            return
        self._add(SocketEntry(sock, transport, addresses[1:], connecting=True))

    def _connect_failed(self, transport: Transport, rest: list[Any], code: int) -> None:
        if rest:
            self._start_connect(transport, rest)
        else:
            fail(transport, f"connection failed: {errno.errorcode.get(code, code)} "
                             f"({os.strerror(code)})")

    def _add(self, entry: SocketEntry) -> None:
        self._sockets[entry.transport._impl] = entry
        if entry.sock is None:
            assert entry.stream is not None
            entry.stream.watch(self.wake)
            return
        entry.events = selectors.EVENT_WRITE if entry.connecting else selectors.EVENT_READ
        self._selector.register(entry.sock, entry.events, entry)

    def _forget(self, entry: SocketEntry) -> None:
        del self._sockets[entry.transport._impl]
        if entry.events:
            self._selector.unregister(entry.sock)  # type: ignore[arg-type]
        entry.events = 0
        entry.io.close()
        self._socket_closed()

    def _listener_ready(self, listener: socket.socket) -> None:
        """A listening socket is readable (a server loop accepts there)."""

    def _socket_closed(self) -> None:
        """A connection's socket was closed (a server loop may accept again)."""

    def _flush(self) -> float | None:
        """Write what every transport has pending, set each socket's interest and
        tick the transports; the earliest tick deadline (None: no deadline)."""
        now = time.monotonic()
        earliest: float | None = None
        for entry in list(self._sockets.values()):
            if entry.connecting:
                continue
            transport = entry.transport
            write(entry)
            wanted = interest(transport)
            if not wanted:
                self._finished(entry)
                continue
            if entry.sock is None:  # a stream has no descriptor to select: move it all now
                pump_stream(entry)
            elif wanted != entry.events:
                if not entry.events:
                    self._selector.register(entry.sock, wanted, entry)
                else:
                    self._selector.modify(entry.sock, wanted, entry)
                entry.events = wanted
            deadline = transport.tick(now)
            if deadline and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    def _finished(self, entry: SocketEntry) -> None:
        """The transport will read and write no more (both ends closed, or it failed):
        close its socket now. Closing the transport's ends queues its TRANSPORT_CLOSED
        event if proton has not, which tells the handler and unbinds it."""
        close_ends(entry.transport)
        self._forget(entry)

    def _wait(self, tick_deadline: float | None) -> None:
        deadline = tick_deadline
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if self._timers and (deadline is None or self._timers[0][0] < deadline):
            deadline = self._timers[0][0]
        timeout = None
        if deadline is not None:
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
                self._woken = False
            on_wake = getattr(self._handler, "on_wake", None)
            if on_wake is not None:
                self._guarded(on_wake)

    def _connected(self, entry: SocketEntry) -> None:
        sock = selectable(entry.sock)
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code == 0:
            entry.connecting = False
            entry.events = selectors.EVENT_READ | selectors.EVENT_WRITE
            self._selector.modify(sock, entry.events, entry)
            return
        self._forget(entry)
        self._connect_failed(entry.transport, entry.fallbacks, code)

    def _run_timers(self) -> None:
        now = time.monotonic()
        timers = self._timers
        while timers and timers[0][0] <= now:
            _deadline, _order, task = heapq.heappop(timers)
            if not task.cancelled:
                task.cancelled = True
                self._guarded(task.callback)

    def _close_all(self) -> None:
        for entry in list(self._sockets.values()):
            write(entry)
            self._forget(entry)
        self._selector.close()
        self._wake_reader.close()
        with self._wake_lock:
            self._woken = True  # nobody reads the pair any more
            self._wake_writer.close()


