"""The fake's HTTP port: ``GET /health`` as the emulator answers it, and the routes behind it.

The Service Bus emulator serves a second, plain-HTTP port (5300, ``EMULATOR_HTTP_PORT``) beside
AMQP: its health check and, since its 2.0 release, the administration API. The fake does the
same on :class:`HttpPort`, with waitress doing the HTTP (a production WSGI server: why this
one, in docs/architecture.md); this module routes, and adds the bounds waitress leaves to
its user, so that whoever reaches the port can hold no more of it than of the AMQP port.

Theory of operation
-------------------
One thread (``fake-http``) runs waitress's event loop over every listening socket (one per
loopback address, all on one port) and every connection: it reads each request as it arrives,
however slowly, without a thread of its own, and hands a complete one to one of
``Limits.http_threads`` worker threads, which run the WSGI application. A connection may
carry one request after another (keep-alive). Between two turns of its loop the thread sweeps
the connections (:meth:`HttpPort._sweep`, at most every :data:`_SWEEP_SECONDS`):

- a request whose line and headers have been arriving for ``http_header_timeout``, or whose
  body for ``http_body_timeout``, is answered 408 and its connection closed;
- a kept-alive connection with nothing to do for ``http_idle_timeout`` is closed.

The other bounds are checked as bytes arrive, on the same thread: past
``http_max_connections`` a new connection is answered 503 and closed at once
(:class:`_Listener`); request line and headers past ``http_max_header_bytes`` are 431; a
``Content-Length`` past ``http_max_body_bytes`` is 413 before a byte of the body is read
(waitress). Once a request's headers are in, the port's ``screen`` may refuse it (the
administration API's token check): then too it is answered and closed before any of its body
is read (:class:`_Parser`). Every refusal of the port is the service's ``<Error>`` body
(:class:`_ErrorTask`), and its connection is closed lingering (:class:`_Channel`).

Handlers never touch proton: they read and change the namespace's ``Store`` under the
namespace lock, as the test-facing methods of ``FakeNamespace`` do, and wake the AMQP server
thread when its links must notice a change. :meth:`HttpPort.stop` sets a flag and wakes the
loop (under a lock the loop holds while it closes, so that no wake-up writes to a closed
pipe); the loop thread joins the workers, then closes every socket it owns.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import ClientDisconnected, HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.receiver import ChunkedReceiver
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask, ThreadedTaskDispatcher
from waitress.utilities import BadRequest, Error, RequestEntityTooLarge
from werkzeug.wrappers import Request, Response

from ._admin import ERROR_CONTENT_TYPE, error_body
from ._limits import Limits, failure_site
from ._log import FakeLog
from ._metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from ._ports import listen_everywhere
from ._request_head import Refusal, RequestHead, Screen

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["HttpPort", "health_response"]

_log = logging.getLogger("fakes.http")
#: How often the loop thread sweeps the connections for time-outs (and the longest it
#: sleeps in one turn, so that a stop is seen this soon).
_SWEEP_SECONDS = 0.25
#: How long a refused connection is given to stop sending before it is closed.
_LINGER_SECONDS = 2.0
#: The most bytes discarded at a time from a lingering connection.
_DISCARD_BYTES = 64 * 1024
#: The most connections accepted in one turn of the loop.
_ACCEPTS_PER_TURN = 256
#: How long the listeners stop accepting when the process is out of descriptors (EMFILE).
_PAUSE_SECONDS = 0.5
#: The largest chunk size the port reads as a number: a signed 64-bit length, as servers
#: hold one (nginx refuses a larger one with 400); a larger one is no chunk size at all.
_MAX_CHUNK_SIZE = 2**63 - 1
#: The paths the port answers itself on GET and HEAD, never screened (``/health`` with an
#: ``api-version``, as a probe may send it, is still the health check).
_OWN_PATHS = frozenset({"/health", "/metrics"})


def health_response(ready: bool) -> Response:
    """The emulator's health answer: 200 ``healthy`` when serving, 503 ``unhealthy`` before."""
    if ready:
        body = {"status": "healthy", "message": "Service is healthy."}
    else:
        body = {"status": "unhealthy", "message": "Service is not ready."}
    return Response(json.dumps(body), status=200 if ready else 503,
                    content_type="application/json; charset=utf-8")


_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
            503: "Service Unavailable"}


class _Refused(Error):  # type: ignore[misc]  # waitress's errors are untyped
    """A refusal of the port itself (a screen's, a time-out), as waitress carries errors."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.code = status
        self.reason = _REASONS.get(status, "Bad Request")


def _raw_response(status: int, detail: str) -> bytes:
    """A whole ``Connection: close`` response with the ``<Error>`` body, for the loop thread
    to write where no task runs (a time-out, a connection past the cap)."""
    body = error_body(status, detail)
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Bad Request')}\r\n"
            f"Content-Type: {ERROR_CONTENT_TYPE}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("ascii") + body


class _Settings(Adjustments):  # type: ignore[misc]
    """waitress's settings, carrying what the port adds: its limits, screen and log."""

    def __init__(self, limits: Limits, screen: Screen | None, log: FakeLog) -> None:
        super().__init__(
            threads=limits.http_threads,
            max_request_header_size=limits.http_max_header_bytes,
            max_request_body_size=limits.http_max_body_bytes,
            # the port's own sweep closes idle connections and enforces the cap (with an
            # answer, where waitress would stop accepting): waitress's are set out of reach
            connection_limit=limits.http_max_connections + 1024,
            channel_timeout=10**9, cleanup_interval=10**9,
            asyncore_use_poll=True, expose_tracebacks=False, log_socket_errors=False,
            ident="fakes")
        self.limits = limits
        self.screen = screen
        self.log = log


class _ChunkedBody(ChunkedReceiver):  # type: ignore[misc]
    """waitress's chunked body, refusing a chunk at its size line: 400 for a size no
    length can hold (sixteen ``f``), 413 for one past ``http_max_body_bytes`` (waitress
    would wait for the chunk's bytes first)."""

    #: waitress's: what was wrong with the body, if anything.
    error: Error | None

    def __init__(self, buf: Any, limit: int) -> None:
        super().__init__(buf)
        self._limit = limit

    def received(self, s: bytes) -> int:
        consumed: int = super().received(s)
        size = self.chunk_remainder
        if self.error is None and len(self.buf) + size > self._limit:
            self.error = (BadRequest(f"Invalid chunk size: {size:x} is past any length")
                          if size > _MAX_CHUNK_SIZE else
                          RequestEntityTooLarge(f"a chunk of {size} bytes exceeds max_body "
                                                f"of {self._limit}"))
            self.all_chunks_received = True
        return consumed


class _Parser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser, noting when the request began and when its headers ended,
    asking the port's screen about the request once its headers are in, and closing the
    connection after a request that carries both ``Content-Length`` and
    ``Transfer-Encoding`` (RFC 9112, section 6.1: "the server MUST close the connection
    after responding to such a request"; its body is read by the transfer coding)."""

    #: waitress's: the refusal of this request, if any (answered by the error task).
    error: Error | None
    #: waitress's: the body's receiver (a chunked one replaced by :class:`_ChunkedBody`).
    body_rcv: Any
    #: waitress's, once the request line is read (None before, or for one that is none).
    command: str | None = None
    path: str | None = None

    def __init__(self, adj: _Settings) -> None:
        super().__init__(adj)
        self.started = time.monotonic()
        self.body_started: float | None = None
        self._screen = adj.screen
        self._limit = adj.limits.http_max_body_bytes

    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)
        if self.chunked:
            self.body_rcv = _ChunkedBody(self.body_rcv.buf, self._limit)
        framed_twice = self.chunked or "TRANSFER_ENCODING" in self.headers
        if framed_twice and "CONTENT_LENGTH" in self.headers:
            self.headers["CONNECTION"] = "close"  # the task answers, then closes

    def _own(self) -> bool:
        """Whether the port answers this request itself (never screened)."""
        return self.command in ("GET", "HEAD") and self.path in _OWN_PATHS

    def received(self, data: bytes) -> int:
        consumed: int = super().received(data)
        if self.headers_finished and self.body_started is None:
            self.body_started = time.monotonic()
            if (self._screen is not None and self.error is None and not self.empty
                    and not self._own()):
                refusal = self._ask_screen()
                if refusal is not None:
                    # answered as an error, the connection closed: the body is never read
                    # (and no "100 Continue" invites it: waitress would then wait for it)
                    self.error = _Refused(refusal.status, refusal.detail)
                    self.expect_continue = False
                    self.completed = True
        return consumed

    def _ask_screen(self) -> Refusal | None:
        assert self._screen is not None
        head = RequestHead(self.command or "", self.request_uri, dict(self.headers))
        try:
            return self._screen(head)
        except Exception as exc:  # the application will answer it (and log why)
            _log.warning("the HTTP port's screen failed (%s); the request goes on",
                         failure_site(exc))
            return None


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """Every refusal of the port (malformed, too large, timed out, screened) as the
    service's ``<Error>`` body; the connection is closed after it, lingering."""

    def execute(self) -> None:
        request, problem = self.request, self.request.error
        self.channel.adj.log.http_request(request.command or "-", request.path or "-",
                                          problem.code, time.monotonic() - request.started,
                                          str(problem.body))
        body = error_body(problem.code, str(problem.body))
        self.status = f"{problem.code} {problem.reason}"
        self.response_headers.append(("Content-Type", ERROR_CONTENT_TYPE))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.channel.linger_on_close = True
        self.write(body)


@dataclass
class _Linger:
    """A refused connection's last moments: what it may still send is discarded, unread."""

    until: float
    left: int


class _Channel(HTTPChannel):  # type: ignore[misc]
    """One connection: waitress's, with the port's parser and error answer, and a
    lingering close after a refusal.

    A client refused before its body was read is usually still sending it: closing the
    socket with data unread would reset the connection, and the client could lose the
    answer it was given. So after a refusal the port closes its side for writing, then
    discards (never keeps) what arrives, for at most :data:`_LINGER_SECONDS` and
    ``http_max_body_bytes``, before it closes (nginx's "lingering close").
    """

    parser_class = _Parser
    error_task_class = _ErrorTask
    #: waitress's: the request being read, if any.
    request: _Parser | None
    linger_on_close = False
    lingering: _Linger | None = None

    def refuse(self, status: int, detail: str) -> None:
        """Answer ``status`` now, drop what was read of the request, close when written
        (loop thread, no task running)."""
        request = self.request
        self.adj.log.http_request(
            "-" if request is None else request.command or "-",
            "-" if request is None else request.path or "-",
            status, 0.0 if request is None else time.monotonic() - request.started, detail)
        self.request = None
        self.linger_on_close = True
        with contextlib.suppress(ClientDisconnected):
            self.write_soon(_raw_response(status, detail))
        self.close_when_flushed = True

    def handle_close(self) -> None:
        if self.linger_on_close and self.lingering is None and self.connected:
            with contextlib.suppress(OSError):
                self.socket.shutdown(socket.SHUT_WR)
            limits = self.adj.limits
            self.lingering = _Linger(time.monotonic() + _LINGER_SECONDS,
                                     limits.http_max_body_bytes)
            self.will_close = self.close_when_flushed = False
            return
        super().handle_close()

    def readable(self) -> bool:
        return self.lingering is not None or bool(super().readable())

    def writable(self) -> bool:
        return self.lingering is None and bool(super().writable())

    def handle_read(self) -> None:
        lingering = self.lingering
        if lingering is None:
            super().handle_read()
            return
        try:
            data = self.socket.recv(_DISCARD_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        lingering.left -= len(data)
        if not data or lingering.left <= 0:
            super().handle_close()


class _Listener(TcpWSGIServer):  # type: ignore[misc]
    """One listening socket: waitress's, answering 503 past the port's connection cap."""

    channel_class = _Channel

    def __init__(self, port: HttpPort, application: WSGIApplication, sock: socket.socket,
                 channels: dict[int, Any], dispatcher: ThreadedTaskDispatcher,
                 settings: _Settings) -> None:
        self._port = port
        self._paused_until = 0.0
        super().__init__(application, channels, _sock=sock, dispatcher=dispatcher,
                         adj=settings, sockinfo=(sock.family, socket.SOCK_STREAM, None, None),
                         bind_socket=False)

    def readable(self) -> bool:
        if time.monotonic() < self._paused_until:
            return False  # out of descriptors: accept again when some may be free
        return bool(super().readable())

    def handle_accept(self) -> None:
        """Accept what waits, up to :data:`_ACCEPTS_PER_TURN` (one a turn would leave a
        burst of connections, and a health check behind them, waiting one turn of the whole
        loop each)."""
        for _ in range(_ACCEPTS_PER_TURN):
            if not self._accept_one():
                return

    def _accept_one(self) -> bool:
        full = self._port.open_connections() >= self._port.limits.http_max_connections
        try:
            accepted = self.accept()
            if accepted is None:
                return False
            conn, addr = accepted
            self.set_socket_options(conn)
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                self._paused_until = time.monotonic() + _PAUSE_SECONDS
            return False
        channel = self.channel_class(self, conn, self.fix_addr(addr), self.adj, map=self._map)
        if full:
            self._port.refused += 1
            channel.refuse(503, "The fake's HTTP port holds as many connections as it "
                                "allows; retry later.")
        return True

    def maintenance(self, now: float) -> None:
        """Nothing: :meth:`HttpPort._sweep` does waitress's upkeep and more."""


class _Routes:
    """The WSGI application of the port: ``/health``, ``/metrics``, then the mounted
    application, then 404; each request's line in the log."""

    def __init__(self, ready: Callable[[], bool], mounted: WSGIApplication | None,
                 metrics: Callable[[], bytes] | None, log: FakeLog) -> None:
        self._ready = ready
        self._mounted = mounted
        self._metrics = metrics
        self._log = log

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        request = Request(environ)
        status = 500

        def noting(code: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            nonlocal status
            status = int(code.split(" ", 1)[0])
            return start_response(code, headers, *args)

        try:
            return self._answer(request)(environ, noting)
        finally:
            self._log.http_request(request.method, request.path, status,
                                   time.perf_counter() - started)

    def _answer(self, request: Request) -> WSGIApplication:
        if request.method in ("GET", "HEAD"):
            if request.path == "/health":
                return health_response(self._ready())
            if request.path == "/metrics" and self._metrics is not None:
                return Response(self._metrics(), status=200,
                                content_type=METRICS_CONTENT_TYPE)
        if self._mounted is not None:
            return self._mounted
        return Response(error_body(404, "Not Found"), status=404,
                        content_type=ERROR_CONTENT_TYPE)


def _listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (IPv4 or IPv6 by the address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((host, port))
        listener.listen(1024)
    except BaseException:
        listener.close()
        raise
    return listener


class HttpPort:
    """The fake's plain-HTTP port on one or more loopback addresses (the same port on each).

    ``ready`` tells ``/health`` whether the namespace serves; ``metrics`` writes the
    ``/metrics`` page (none without it); ``mounted`` is the application that answers every
    other path (the administration API), ``screen`` its check of a request's head, before
    the body is read; ``limits`` bound each client; ``log`` is told of every request.
    """

    def __init__(self, hosts: Sequence[str], port: int, *, ready: Callable[[], bool],
                 mounted: WSGIApplication | None = None, screen: Screen | None = None,
                 limits: Limits | None = None, metrics: Callable[[], bytes] | None = None,
                 log: FakeLog | None = None) -> None:
        if not hosts:
            raise ValueError("the HTTP port needs at least one address to listen on")
        self._hosts = tuple(hosts)
        self._requested_port = port
        log = FakeLog() if log is None else log
        self._app = _Routes(ready, mounted, metrics, log)
        self.limits = Limits() if limits is None else limits
        self._settings = _Settings(self.limits, screen, log)
        self._sockets: list[socket.socket] = []
        self._listeners: list[_Listener] = []
        self._channels: dict[int, Any] = {}
        self._dispatcher: ThreadedTaskDispatcher | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        #: Held while the loop closes its sockets and while :meth:`stop` pulls the trigger,
        #: so that no pull writes to the trigger's pipe once it is closed.
        self._closing = threading.Lock()
        self._last_sweep = 0.0
        #: Connections answered 503 for the cap, since start.
        self.refused = 0

    @property
    def port(self) -> int:
        """The bound port (the real one when port 0 was asked for)."""
        if self._sockets:
            port: int = self._sockets[0].getsockname()[1]
            return port
        return self._requested_port

    def open_connections(self) -> int:
        """The connections open now (loop thread)."""
        return sum(len(listener.active_channels) for listener in self._listeners)

    def start(self) -> None:
        """Bind every address (OSError if one is taken) and serve on the loop thread."""
        listen_everywhere(self._hosts, self._requested_port, self._listen, self._release,
                          protocol="HTTP")
        self._dispatcher = ThreadedTaskDispatcher()
        self._dispatcher.set_thread_count(self.limits.http_threads)
        for sock in self._sockets:
            self._listeners.append(_Listener(self, self._app, sock, self._channels,
                                             self._dispatcher, self._settings))
        self._stopping.clear()
        self._thread = threading.Thread(target=self._serve, name="fake-http", daemon=True)
        self._thread.start()

    def _listen(self, host: str, port: int) -> int:
        sock = _listening_socket(host, port)
        self._sockets.append(sock)
        bound: int = sock.getsockname()[1]
        return bound

    def _release(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()

    def stop(self) -> None:
        """Stop serving on every address, close every connection, join the threads
        (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            with self._closing:  # the loop may be closing the trigger's pipe just now
                if self._listeners:
                    self._listeners[0].pull_trigger()
            thread.join()
        self._release()

    def _serve(self) -> None:
        try:
            while not self._stopping.is_set():
                wasyncore.loop(timeout=_SWEEP_SECONDS, map=self._channels, use_poll=True,
                               count=1)
                self._sweep(time.monotonic())
        finally:
            # the workers first (a running request finishes, one waiting is cancelled),
            # so that none writes to a connection or pulls the trigger once it is closed
            if self._dispatcher is not None:
                self._dispatcher.shutdown()
            self._dispatcher = None
            with self._closing:
                wasyncore.close_all(self._channels)
                self._listeners.clear()

    def _sweep(self, now: float) -> None:
        """The time-outs: 408 for a request read too slowly, a close for an idle connection."""
        if now - self._last_sweep < _SWEEP_SECONDS:
            return
        self._last_sweep = now
        limits, idle_since = self.limits, time.time() - self.limits.http_idle_timeout
        for listener in self._listeners:
            for channel in list(listener.active_channels.values()):
                if channel.lingering is not None:
                    if now > channel.lingering.until:
                        HTTPChannel.handle_close(channel)
                    continue
                if channel.requests or channel.will_close or channel.close_when_flushed:
                    continue  # a task runs, or it closes already
                request = channel.request
                if request is None:
                    if channel.last_activity < idle_since and not channel.total_outbufs_len:
                        channel.will_close = True
                elif request.body_started is None:
                    if now - request.started > limits.http_header_timeout:
                        channel.refuse(408, "The request line and headers did not arrive "
                                            f"within {limits.http_header_timeout:g} s.")
                elif now - request.body_started > limits.http_body_timeout:
                    channel.refuse(408, "The request body did not arrive within "
                                        f"{limits.http_body_timeout:g} s.")
