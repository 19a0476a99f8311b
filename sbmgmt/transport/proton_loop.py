"""What every driver of proton's protocol engine shares: events, sockets, transports.

Theory of operation
-------------------
Proton's ``Container`` is a general reactor written in Python: every protocol event
is wrapped into an ``Event`` that eagerly wraps its delivery, link, session,
connection and transport, then offered to the application handler and to a global
I/O handler, and every socket readiness is itself turned into more events. At
thousands of requests per second that machinery costs as much as the work.
:class:`ProtonLoop` keeps only what a management client or the fake namespace needs,
and leaves the waiting to a driver:

- one proton ``Collector`` shared by every connection. Events are read straight
  from the C collector; the handler method for each event type is looked up once;
  types the handler has no method for are skipped without being wrapped, and the
  handler receives an :class:`EngineEvent` whose ``link``, ``delivery``,
  ``connection``, ``session`` and ``transport`` are wrapped only when read;
- one :class:`~sbmgmt.transport.sockets.SocketEntry` per connection, keyed by its transport's
  C pointer. :meth:`ProtonLoop._flush` writes what each transport has pending straight
  away (the socket is usually writable, so a reply leaves without a wait), notes
  whether it wants to read or write and tells the driver (:meth:`_watch`), and ticks
  it (idle-timeout heartbeats). A transport that wants neither any more (both ends
  closed, or failed on bytes it could not decode) has its socket closed at once: no
  descriptor outlives its connection. A transport whose ``TRANSPORT_CLOSED`` event was
  dispatched has its socket closed and is unbound. A run of events that goes on for
  more than 2 ms also writes what the socket transports have pending after each event
  (:meth:`ProtonLoop._write_ready`): a read can bring many requests at once, and the
  reply to the first leaves while the others are being handled, not after all of them
  (the fake answering a resubmit's peek pages in one run of up to 0.1 s kept the
  client idle, then itself while the client decoded them).

A driver supplies the rest: how a socket's interest is watched (:meth:`_watch`), how
names are resolved (:meth:`_resolve`), timers (:meth:`schedule`) and wake-ups from
other threads (:meth:`wake`). :class:`~sbmgmt.transport.selector_loop.EngineLoop` waits in
``select`` on a thread of its own; :class:`~sbmgmt.transport.asyncio_loop.AsyncioLoop` is driven by
a running asyncio event loop's callbacks.

A handler with an ``on_handler_error(event, error)`` method gets the exceptions its
other methods, timers and wake-ups raise (``event`` None for the last two; a server
confines them to a connection); without one they propagate to the driver.

A connection may run over a :class:`~sbmgmt.transport.sockets.Stream` instead of a socket
(``connect(..., stream=)``): an in-memory byte pipe (``sbmgmt.testing``). It has no
descriptor to watch, so each flush also reads what it holds into its transport; the
stream wakes the loop (:meth:`wake`) when bytes arrive.

Everything except :meth:`wake` runs on the driver's thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import time
from collections.abc import Callable
from typing import Any, Protocol

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

from .sockets import (
    SocketEntry,
    Stream,
    close_ends,
    fail,
    interest,
    pump_stream,
    selectable,
    takes_input,
    write,
)

__all__ = ["EngineEvent", "ProtonLoop", "Timer"]

#: A run of events that has taken longer than this writes what is ready before it goes
#: on (:meth:`ProtonLoop._dispatch`).
_WRITE_AFTER = 0.002
# proton's wrap functions (untyped): a C pointer in, a wrapper (or None for NULL) out.
_wrap_delivery: Any = Delivery.wrap
_wrap_link: Any = Link.wrap
_wrap_session: Any = Session.wrap
_wrap_connection: Any = Connection.wrap
_wrap_transport: Any = Transport.wrap


class Timer(Protocol):
    """A scheduled callback (:meth:`ProtonLoop.schedule`)."""

    def cancel(self) -> None:
        """Do not run the callback (a no-op once it has run)."""


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


class ProtonLoop:
    """Proton connections for ``handler``; a driver subclass does the waiting.

    ``handler`` has proton-style methods (``on_delivery(event)``, ``on_link_flow``,
    ``on_transport_closed`` ...) taking an :class:`EngineEvent`, and optionally
    ``on_wake()``, called on the driver's thread after :meth:`wake`.
    """

    def __init__(self, handler: Any, *, container_id: str) -> None:
        self._handler = handler
        self._container_id = container_id
        self._collector = Collector()
        self._methods: dict[int, Callable[[EngineEvent], None] | None] = {}
        # Each connection's socket, by its transport's C pointer: cffi pointers hash and
        # compare by address, while every wrapper proton hands out holds a new Python
        # object for the same pointer.
        self._sockets: dict[Any, SocketEntry] = {}
        self._stopping = False

    # ---- what a driver supplies ---------------------------------------------------

    def wake(self) -> None:
        """Have the driver call ``handler.on_wake()`` soon (from any thread)."""
        raise NotImplementedError

    def schedule(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` on the driver's thread after ``delay`` seconds."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop once the current round of work is done; every socket is then closed."""
        self._stopping = True

    def _watch(self, entry: SocketEntry, wanted: int) -> None:
        """Wait for ``wanted`` (selector event bits; 0: nothing) on the entry's socket,
        instead of what ``entry.events`` says it waits for now; then set ``entry.events``."""
        raise NotImplementedError

    def _resolve(self, transport: Transport, host: str, port: int) -> None:
        """Look ``host`` up, then :meth:`_start_connect` (here: at once, blocking)."""
        try:
            addresses = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        except OSError as exc:
            fail(transport, f"cannot resolve {host}: {exc}")
            return
        self._start_connect(transport, addresses)

    def _socket_closed(self) -> None:
        """A connection's socket was closed (a server loop may accept again)."""

    # ---- connections ---------------------------------------------------------------

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
        else:
            self._resolve(transport, host, port)
        return connection

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

    def _connected(self, entry: SocketEntry) -> None:
        """A connecting socket became writable: connected, or the next address."""
        code = selectable(entry.sock).getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code == 0:
            entry.connecting = False
            self._watch(entry, selectors.EVENT_READ | selectors.EVENT_WRITE)
            return
        self._forget(entry)
        self._connect_failed(entry.transport, entry.fallbacks, code)

    def peer(self, transport: Transport) -> str:
        """Where a connection's socket leads (``host:port``; ``in-memory`` for a stream,
        ``unknown`` once it is closed): for a log line."""
        entry = self._sockets.get(transport._impl)
        if entry is None:
            return "unknown"
        if entry.sock is None:
            return "in-memory"
        try:
            address = entry.sock.getpeername()
        except OSError:
            return "unknown"
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def _add(self, entry: SocketEntry) -> None:
        self._sockets[entry.transport._impl] = entry
        if entry.sock is None:
            assert entry.stream is not None
            entry.stream.watch(self.wake)
            return
        self._watch(entry, selectors.EVENT_WRITE if entry.connecting else selectors.EVENT_READ)

    def _forget(self, entry: SocketEntry) -> None:
        del self._sockets[entry.transport._impl]
        if entry.events:
            self._watch(entry, 0)
        entry.io.close()
        self._socket_closed()

    def _close_sockets(self) -> None:
        """Write what each transport still has pending (best effort), close every socket."""
        for entry in list(self._sockets.values()):
            write(entry)
            self._forget(entry)

    # ---- events --------------------------------------------------------------------

    def _dispatch(self) -> None:
        collector = self._collector._impl
        methods = self._methods
        monotonic = time.monotonic
        written = monotonic()
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
            if monotonic() - written > _WRITE_AFTER:
                self._write_ready()
                written = monotonic()

    def _write_ready(self) -> None:
        """Write what the socket transports have pending, in the middle of a long run of
        events: a reply made early in the run leaves then, not after the whole run."""
        for entry in list(self._sockets.values()):
            if entry.sock is not None and not entry.connecting:
                write(entry)

    def _dispatchable(self) -> bool:
        return bool(pn_collector_peek(self._collector._impl))

    def _handler_failed(self, impl: Any, error: Exception) -> None:
        """A handler method raised: its ``on_handler_error`` decides (given the event,
        or None for a timer or a wake-up), else the error propagates."""
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

    def _woken(self) -> None:
        on_wake = getattr(self._handler, "on_wake", None)
        if on_wake is not None:
            self._guarded(on_wake)

    def _method_for(self, number: int) -> Callable[[EngineEvent], None] | None:
        kind = EventType.TYPES.get(number)
        if kind is None:
            return None
        method: Callable[[EngineEvent], None] | None = getattr(self._handler, kind.method, None)
        return method

    def _transport_closed(self, impl: Any) -> None:
        transport = _wrap_transport(pn_event_transport(impl))
        if transport is None:
            return
        entry = self._sockets.get(transport._impl)
        if entry is not None:
            self._forget(entry)
        transport.unbind()

    # ---- transports ----------------------------------------------------------------

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
            delayed = entry.delayed
            if delayed is None:
                wanted = interest(transport, entry.backlog)
                finished = not wanted
            else:  # what it holds is still to be read, while the transport takes input
                wanted = interest(transport, entry.backlog, reading=delayed.reading)
                finished = not wanted and not (delayed.holding and takes_input(transport))
            if finished:
                self._finished(entry)
                continue
            if entry.sock is None:  # a stream has no descriptor to watch: move it all now
                pump_stream(entry)
            elif wanted != entry.events:
                self._watch(entry, wanted)
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
