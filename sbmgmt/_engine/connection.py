"""The engine's connection job: where to connect, when again, and what its events mean.

Theory of operation
-------------------
- :class:`Endpoint` says where; :func:`ssl_domain` how (TLS with certificate and
  host-name verification; a plain endpoint is only for a loopback emulator).
- :class:`Reconnects` (sans-I/O, its clock given) numbers the connections (an event
  of an earlier one changes nothing) and says how long the next one must wait: after
  the n-th failure in a row :data:`~sbmgmt._protocol.retry.RECONNECT_BACKOFF`; once a
  connection opens, the count starts over. Until a first connection has opened
  (``ever_opened``) a failure is not a drop to ride out but a wrong or unreachable
  endpoint: the engine fails what waits at once (ConnectFailedError).
- :class:`EndpointEvents` turns proton's endpoint events into what they mean, as
  proton's MessagingHandler would: an endpoint is *opened* once both ends are open;
  the peer closing one is an error or a closing (both lose it) unless we had closed it
  first; a forced connection close is like a dropped socket (the transport closing
  follows). The engine subclasses it and says what to do with each.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proton import Endpoint as ProtonEndpoint
from proton import SSLDomain

from .._protocol.retry import RECONNECT_BACKOFF, Backoff
from .failures import describe

__all__ = ["Endpoint", "EndpointEvents", "Reconnects", "ssl_domain"]

_CONNECTION_FORCED = "amqp:connection:forced"
LOCAL_ACTIVE = ProtonEndpoint.LOCAL_ACTIVE
LOCAL_CLOSED = ProtonEndpoint.LOCAL_CLOSED
REMOTE_ACTIVE = ProtonEndpoint.REMOTE_ACTIVE


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to connect: ``host`` (the namespace's host name, or a loopback address for the
    emulator), ``port`` (5671 over TLS, 5672 without) and ``tls`` (False only for a
    loopback emulator)."""

    host: str
    port: int
    tls: bool = True

    @property
    def url(self) -> str:
        return f"{'amqps' if self.tls else 'amqp'}://{self.host}:{self.port}"


class Reconnects:
    """The generation of the current connection and the backoff before the next."""

    def __init__(self, backoff: Backoff = RECONNECT_BACKOFF,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.generation = 0
        #: proton's C pointer of the current connection (nothing is stored on its objects).
        self._current: object = None
        self.failures = 0
        self.ever_opened = False
        self._backoff = backoff
        self._clock = clock
        self._next_at = 0.0

    def wait(self) -> float:
        """Seconds before the next connection may be opened (0: now)."""
        return max(0.0, self._next_at - self._clock())

    def opening(self, connection: Any) -> int:
        """``connection`` is the new current one: its generation."""
        self.generation += 1
        self._current = connection._impl
        return self.generation

    def is_current(self, connection: Any) -> bool:
        """Whether an event's ``connection`` is the current one, not an earlier one's."""
        return self._current is not None and connection._impl == self._current

    def opened(self) -> None:
        self.failures = 0
        self.ever_opened = True

    def lost(self) -> None:
        self.failures += 1
        self._next_at = self._clock() + self._backoff.delay(self.failures)


def ssl_domain() -> SSLDomain:
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    cafile = ssl.get_default_verify_paths().cafile
    if cafile:
        domain.set_trusted_ca_db(cafile)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    return domain


class EndpointEvents:
    """Proton's endpoint events as opened / closed / lost calls (a loop handler base)."""

    def connection_opened(self, event: Any) -> None:
        """Both ends of the connection are open."""

    def connection_lost(self, event: Any, reason: str) -> None:
        """The connection is gone (closed by the peer, an error, the socket)."""

    def link_opened(self, link: Any) -> None:
        """Both ends of ``link`` are open."""

    def link_closed(self, link: Any) -> None:
        """The peer closed ``link`` (with an error, or before we did)."""

    def link_remote_open(self, link: Any) -> bool:
        """The peer opened ``link``; True if that was all there was to do."""
        return False

    def link_remote_close(self, link: Any) -> bool:
        """The peer closed ``link``; True if that was all there was to do."""
        return False

    def on_connection_local_open(self, event: Any) -> None:
        if event.connection.state & REMOTE_ACTIVE:
            self.connection_opened(event)

    def on_connection_remote_open(self, event: Any) -> None:
        if event.connection.state & LOCAL_ACTIVE:
            self.connection_opened(event)

    def on_connection_remote_close(self, event: Any) -> None:
        connection = event.connection
        condition = connection.remote_condition
        if condition is not None and condition.name == _CONNECTION_FORCED:
            return  # like a dropped socket: the transport closing follows
        if condition is not None or not connection.state & LOCAL_CLOSED:
            self.connection_lost(event, describe(condition))
        connection.close()

    def on_session_remote_close(self, event: Any) -> None:
        condition = event.session.remote_condition
        if condition is not None:
            self.connection_lost(event, f"session closed ({describe(condition)})")
        event.session.close()

    def on_transport_error(self, event: Any) -> None:
        self.connection_lost(event, describe(event.transport.condition))

    def on_transport_tail_closed(self, event: Any) -> None:
        self._disconnected(event)

    def on_transport_closed(self, event: Any) -> None:
        self._disconnected(event)

    def _disconnected(self, event: Any) -> None:
        connection = event.connection
        if connection is not None and connection.state & LOCAL_ACTIVE:
            transport = event.transport
            condition = None if transport is None else transport.condition
            self.connection_lost(event, "disconnected" if condition is None
                                 else describe(condition))

    def on_link_local_open(self, event: Any) -> None:
        if event.link.state & REMOTE_ACTIVE:
            self.link_opened(event.link)

    def on_link_remote_open(self, event: Any) -> None:
        if self.link_remote_open(event.link):
            return
        if event.link.state & LOCAL_ACTIVE:
            self.link_opened(event.link)

    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        if self.link_remote_close(link):
            return
        if link.remote_condition is not None or not link.state & LOCAL_CLOSED:
            self.link_closed(link)
        link.close()
