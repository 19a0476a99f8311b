"""What one client may hold of the fake, and the log that a flood cannot fill.

The fake is meant to run as a shared test server: whoever reaches its port must not
be able to stop it or make it grow without bound. :class:`Limits` gathers every
bound in one place (``FakeNamespace(limits=Limits(...))`` sets short ones for
tests); docs/fake.md lists them. Where the service publishes a quota the default
is the service's (5,000 AMQP connections per namespace); the others are the
fake's own, chosen so that a well-behaved client never meets them.

:class:`ThrottledLog` writes a repeated warning once, then at most once per
interval with the number left out, so a flood of bad requests costs one log line
per interval rather than one per request.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any

__all__ = ["Limits", "ThrottledLog", "failure_site"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The fake's bounds on each client (seconds, counts)."""

    #: A connection must complete its AMQP open (SASL included) within this time.
    handshake_timeout: float = 30.0
    #: A connection silent for longer is closed (``amqp:resource-limit-exceeded``).
    #: The open frame advertises half of it as the idle-time-out (proton's rule), so
    #: a client's heartbeats arrive with a margin.
    idle_timeout: float = 240.0
    #: "Number of concurrent connections on a namespace | AMQP: 5,000 | Subsequent
    #: requests for additional connections are rejected" (Service Bus quotas).
    max_connections: int = 5000
    #: Links attached at once on one connection (the service publishes no such quota; the
    #: fake's own bound, far above what an SDK opens); an attach beyond it is refused with
    #: ``amqp:resource-limit-exceeded``.
    max_links_per_connection: int = 4096
    #: Replies waiting on one connection's reply links for credit the client does not
    #: give; past it the fake stops granting credit on that node's request links.
    max_waiting_replies: int = 1000
    #: Remembered (node, reply-to) -> reply link choices per connection.
    reply_cache_size: int = 64
    #: The service's idle timers (service-bus-amqp-troubleshoot; fakes/_idle.py): an
    #: entity link with no transfer, settlement or flow for this long is detached with
    #: ``amqp:link:detach-forced`` ("Idle timeout: 00:10:00") ...
    link_idle_timeout: float = 600.0
    #: ... a connection whose links have all gone is closed (``amqp:connection:forced``)
    #: when it attaches no new one within this time ("300000 milliseconds") ...
    linkless_timeout: float = 300.0
    #: ... and a new connection when it attaches no link within this time ("60000").
    first_link_timeout: float = 60.0
    #: How often a repeated warning is written.
    warning_interval: float = 10.0
    #: The HTTP port (health check, administration API; fakes/_http.py): a request's line
    #: and headers must arrive within this time of its first byte, else 408 and the
    #: connection is closed.
    http_header_timeout: float = 10.0
    #: ... and its body within this time of the end of its headers.
    http_body_timeout: float = 30.0
    #: A kept-alive HTTP connection with no request in progress is closed after this time.
    http_idle_timeout: float = 60.0
    #: Open HTTP connections at once; past it a new one is answered 503 and closed.
    http_max_connections: int = 4096
    #: The most bytes of a request line and headers (431 past it).
    http_max_header_bytes: int = 64 * 1024
    #: The most bytes of a request body (413 past it, from ``Content-Length`` before
    #: any of the body is read).
    http_max_body_bytes: int = 1024 * 1024
    #: Threads that run HTTP requests (connections are read on one thread of their own).
    http_threads: int = 4

    def __post_init__(self) -> None:
        for name in ("handshake_timeout", "idle_timeout", "warning_interval",
                     "link_idle_timeout", "linkless_timeout", "first_link_timeout",
                     "http_header_timeout", "http_body_timeout", "http_idle_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("max_connections", "max_links_per_connection", "max_waiting_replies",
                     "reply_cache_size", "http_max_connections", "http_max_header_bytes",
                     "http_max_body_bytes", "http_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)!r}")


class ThrottledLog:
    """Warnings keyed by kind: the first of each is written, then one per ``interval``."""

    def __init__(self, logger: logging.Logger, interval: float) -> None:
        self._logger = logger
        self._interval = interval
        #: kind -> (when it was last written, how many were left out since)
        self._seen: dict[str, tuple[float, int]] = {}

    def warning(self, kind: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        last = self._seen.get(kind)
        if last is not None and now - last[0] < self._interval:
            self._seen[kind] = (last[0], last[1] + 1)
            return
        left_out = 0 if last is None else last[1]
        self._seen[kind] = (now, 0)
        suffix = f" ({left_out} more like it in the last {self._interval:g} s)" if left_out else ""
        self._logger.warning(message + suffix, *args)


def failure_site(error: BaseException) -> str:
    """``TypeError at _server.py:123 (_reply)``: what failed and where, without the
    exception's message (which may quote a client's token)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return type(error).__name__
    last = frames[-1]
    where = f"{os.path.basename(last.filename)}:{last.lineno}"
    return f"{type(error).__name__} at {where} ({last.name})"
