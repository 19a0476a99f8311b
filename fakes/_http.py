"""The fake's HTTP port: ``GET /health`` as the emulator answers it, and the routes behind it.

The Service Bus emulator serves a second, plain-HTTP port (5300, ``EMULATOR_HTTP_PORT``) beside
AMQP: its health check and, since its 2.0 release, the administration API. The fake does the
same on :class:`HttpPort`, with werkzeug doing the HTTP (parsing, the threaded server); this
module only routes.

Theory of operation: one werkzeug ``ThreadedWSGIServer`` per loopback address, all on the same
port (the first binds the port, asked for or picked by the system, the others take that one),
each serving on a daemon thread of its own; every request runs on a fresh thread of its
server. Handlers never touch proton: they read and change the namespace's ``Store`` under the
namespace lock, as the test-facing methods of ``FakeNamespace`` do, and wake the AMQP server
thread when its links must notice a change.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["HttpPort", "health_response"]

_log = logging.getLogger("fakes.http")
#: How often a free port is picked again when it was taken on the second loopback.
_PORT_ATTEMPTS = 5


def health_response(ready: bool) -> Response:
    """The emulator's health answer: 200 ``healthy`` when serving, 503 ``unhealthy`` before."""
    if ready:
        body = {"status": "healthy", "message": "Service is healthy."}
    else:
        body = {"status": "unhealthy", "message": "Service is not ready."}
    return Response(json.dumps(body), status=200 if ready else 503,
                    content_type="application/json; charset=utf-8")


def _listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (IPv4 or IPv6 by the address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise OSError(exc.errno, f"cannot listen for HTTP on {host} port {port}: "
                      f"{exc.strerror}") from None
    except BaseException:
        listener.close()
        raise
    return listener


class _QuietHandler(WSGIRequestHandler):
    """werkzeug's request handler, logging to ``fakes.http`` at debug level, never to stderr."""

    def log(self, type: str, message: str, *args: object) -> None:
        _log.debug("%s %s", self.address_string(), message % args)


class _Routes:
    """The WSGI application of the port: ``/health``, then the mounted application, then 404."""

    def __init__(self, ready: Callable[[], bool], mounted: WSGIApplication | None) -> None:
        self._ready = ready
        self._mounted = mounted

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        if request.path == "/health" and request.method in ("GET", "HEAD"):
            return health_response(self._ready())(environ, start_response)
        if self._mounted is not None:
            return self._mounted(environ, start_response)
        return Response("Not Found", status=404)(environ, start_response)


class HttpPort:
    """The fake's plain-HTTP port on one or more loopback addresses (the same port on each).

    ``ready`` tells ``/health`` whether the namespace serves; ``mounted`` is the application
    that answers every other path (the administration API).
    """

    def __init__(self, hosts: Sequence[str], port: int, *, ready: Callable[[], bool],
                 mounted: WSGIApplication | None = None) -> None:
        if not hosts:
            raise ValueError("the HTTP port needs at least one address to listen on")
        self._hosts = tuple(hosts)
        self._requested_port = port
        self._app = _Routes(ready, mounted)
        self._servers: list[BaseWSGIServer] = []
        self._threads: list[threading.Thread] = []

    @property
    def port(self) -> int:
        """The bound port (the real one when port 0 was asked for)."""
        return self._servers[0].port if self._servers else self._requested_port

    def start(self) -> None:
        """Bind every address (OSError if one is taken) and serve each on its own thread."""
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                self._bind()
                break
            except OSError as exc:
                # a free port picked on one address may be taken on the next: pick again
                if (self._requested_port or exc.errno != errno.EADDRINUSE
                        or attempt == _PORT_ATTEMPTS):
                    raise
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                      name=f"fake-http-{server.host}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _bind(self) -> None:
        port = self._requested_port
        try:
            for host in self._hosts:
                # Bound here, not by werkzeug: its server reports a taken port on stderr and
                # exits the process; a library raises OSError instead.
                with _listening_socket(host, port) as listener:
                    server = make_server(host, port, self._app, threaded=True,
                                         request_handler=_QuietHandler, fd=listener.fileno())
                port = server.port
                self._servers.append(server)
        except BaseException:
            self._close()
            raise

    def stop(self) -> None:
        """Stop serving on every address and join the threads (idempotent)."""
        for server in self._servers:
            server.shutdown()
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        self._close()

    def _close(self) -> None:
        for server in self._servers:
            server.server_close()
        self._servers.clear()
