"""The explorer served: uvicorn on a thread, the app behind its guard.

Theory of operation. :class:`Explorer` binds its socket itself (so that port 0 gives a free
port known before anything is served), builds the app behind
:class:`~sbmgmt.explorer._guard.Guard` with a fresh random token, and runs uvicorn's server
on a daemon thread with its own event loop. Beside it, the charts' sampler
(:class:`~sbmgmt.actions.watch.Sampler`) lists the namespace every ``sample_seconds`` on a
thread of its own; both start in :meth:`Explorer.start` and stop in :meth:`Explorer.stop`.
:meth:`Explorer.start` returns once the server accepts connections; :meth:`Explorer.stop`
asks it to exit and joins the thread (an unfinished request is given a few seconds). The
server runs no signal handlers (it is not on the main thread): whoever started it stops it.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
import time
from types import TracebackType

import uvicorn

from ..actions.watch import DEFAULT_INTERVAL, DEFAULT_LENGTH, History, Sampler
from ._app import create_app
from ._guard import Guard
from ._namespace import Namespace

__all__ = ["Explorer"]

_START_TIMEOUT = 10.0


class Explorer:
    """The explorer of one namespace, served on ``host:port`` (loopback by default).

    Args:
        namespace: What it shows.
        host: The address to listen on (127.0.0.1: only this machine).
        port: The port (0: a free one).
        refresh_seconds: How often the counts refresh themselves.
        allowed_hosts: More ``host:port`` values the Host header may carry (a name the
            machine is reached by, when ``host`` is not loopback).
        sample_seconds: How often the charts' sampler lists the namespace.
        history_length: How many samples the charts keep (with ``sample_seconds``: how
            far back they go; 720 at 5 s is an hour).

    Attributes:
        sampler: The charts' sampler (its ``history`` is what they draw).
    """

    def __init__(self, namespace: Namespace, *, host: str = "127.0.0.1", port: int = 0,
                 refresh_seconds: float = 5.0, allowed_hosts: tuple[str, ...] = (),
                 sample_seconds: float = DEFAULT_INTERVAL,
                 history_length: int = DEFAULT_LENGTH) -> None:
        self._namespace = namespace
        self._host = host
        self._port = port
        self._refresh = refresh_seconds
        self._allowed = allowed_hosts
        self._token = secrets.token_urlsafe(32)
        self.sampler = Sampler(namespace.entities, interval=sample_seconds,
                               history=History(history_length))
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        """The port served (known once started)."""
        return self._port

    @property
    def base_url(self) -> str:
        """The address without the token: what answers 403 until the token is given."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def url(self) -> str:
        """The address to open: with the token, which the first answer turns into a
        cookie."""
        return f"{self.base_url}/?token={self._token}"

    def start(self) -> Explorer:
        """Bind, start serving on a thread, and return once connections are accepted.

        Returns:
            This explorer.

        Raises:
            OSError: The address could not be bound.
            RuntimeError: The server did not start in time.
        """
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        self._socket = sock
        self._port = sock.getsockname()[1]
        app = Guard(create_app(self._namespace, refresh_seconds=self._refresh,
                               sampler=self.sampler),
                    token=self._token, hosts=self._hosts(), port=self._port)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=3)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="sbmgmt-explorer", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the explorer's server did not start")
            time.sleep(0.01)
        self.sampler.start()
        return self

    def _hosts(self) -> list[str]:
        hosts = [f"{h}:{self._port}" for h in ("localhost", "127.0.0.1", "[::1]")]
        bound = f"[{self._host}]" if ":" in self._host else self._host
        try:
            unspecified = ipaddress.ip_address(self._host).is_unspecified
        except ValueError:  # a name, not an address
            unspecified = False
        if not unspecified:
            hosts.append(f"{bound}:{self._port}")
        return [*hosts, *self._allowed]

    def stop(self) -> None:
        """Stop sampling and serving and wait for the threads (idempotent)."""
        self.sampler.stop()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> Explorer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
