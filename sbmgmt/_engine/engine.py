"""The engine: what a driver runs on one connection (a loop handler).

Theory of operation
-------------------
:class:`Engine` is the handler of a :class:`~sbmgmt.transport.proton_loop.ProtonLoop` and takes
proton's endpoint and delivery events directly (one method call per event). Two
drivers run it unchanged: :class:`~sbmgmt._drivers.io_thread.IOThread` on a thread of its own (the
selector loop, :mod:`sbmgmt.transport.selector_loop`) for ``ManagementClient``, and
:class:`~sbmgmt._drivers.event_loop.EventLoopIO` on the running asyncio event loop
(:mod:`sbmgmt.transport.asyncio_loop`) for ``AsyncManagementClient``. A driver hands work over
through ``take_inbox`` / ``take_controls`` and a wake-up (:meth:`Engine.on_wake`).

The engine owns one connection at a time and the jobs around it, each in its own
module:

- the connection (here, with :mod:`sbmgmt._engine.connection`): opened lazily when there is
  work, SASL ANONYMOUS, TLS unless the endpoint is a plain (emulator, loopback) one;
  after a loss the next one waits its backoff, and is opened only while there is work.
- CBS tokens: :class:`~sbmgmt._protocol.tokens.TokenManager`, whose put-tokens travel through
  the ``$cbs`` link pair's dispatcher.
- the management link pair of each entity and its state:
  :class:`~sbmgmt._engine.link_pairs.ManagementLinks` (IDLE -> AUTHORIZING -> ATTACHING -> READY).
- the per-request path on the wire: :mod:`sbmgmt._engine.deliveries`.
- one expiry timer at the earliest deadline of all dispatchers
  (:class:`~sbmgmt._engine.link_pairs.ExpiryTimer`).
- the ``$coordinator`` link (:class:`~sbmgmt._engine.coordinator_link.CoordinatorLink`),
  session receiver links (:class:`~sbmgmt._engine.session_links.SessionReceivers`) and
  message senders and receivers (:class:`~sbmgmt._engine.message_links.MessageLinks`) get
  their events forwarded and are told when the connection is lost.

Failures: a detached management link fails the requests on it (LinkDetachedError)
and re-attaches before the next send; a refused attach fails the waiting requests
with the error its condition names. A lost connection fails every request on the
wire at once (ConnectionLostError); queued ones wait for the next connection, unless
no connection of this client has opened yet: then the endpoint is wrong or down, and
everything queued fails at once too (ConnectFailedError, naming host, port and cause).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from cproton import (
    pn_delivery_aborted,
    pn_delivery_link,
    pn_delivery_settle,
    pn_event_delivery,
    pn_link_is_receiver,
    pn_link_name,
)

from .._protocol.dispatcher import Dispatcher, DispatcherStats, PendingRequest
from .._protocol.tokens import TokenManager, TokenSource
from ..errors import LinkDetachedError, ServiceBusManagementError, attach_refused
from ..transport.proton_loop import EngineEvent, ProtonLoop, Timer
from .connection import LOCAL_ACTIVE, REMOTE_ACTIVE, Endpoint, EndpointEvents, Reconnects
from .connection import ssl_domain as _ssl_domain
from .coordinator_link import Control, CoordinatorLink
from .deliveries import ReceiveBuffer, outcome, pump, take_replies
from .failures import (
    ConnectFailure,
    closed_error,
    closed_link,
    describe,
    fail_closed,
    for_request,
    protocol_mismatch,
)
from .failures import session_closed as _session_closed
from .link_pairs import CbsLinks, EntityLinks, ExpiryTimer, LinkState, ManagementLinks
from .message_links import LinkWork, MessageLinks
from .session_links import SessionAttach, SessionReceivers

__all__ = ["Engine", "Work"]

_log = logging.getLogger("sbmgmt.io")


# What the inbox carries: a request, a session link to attach or detach, or work on a
# message sender or receiver.
Work = tuple[str, PendingRequest | SessionAttach | LinkWork]


class Engine(EndpointEvents):
    """Everything that runs on the driver's side of one client."""

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        addresses: tuple[Callable[[str], str], Callable[[str], str]],
        window: int,
        name: str,
    ) -> None:
        self.endpoint = endpoint
        self.window = window
        self.name = name
        self.loop: ProtonLoop | None = None
        self.closing = False
        self.take_inbox: Callable[[], deque[Work]] = deque
        self.take_controls: Callable[[], deque[Control]] = deque
        self.tokens = TokenManager(
            tokens, schedule=self._schedule, attach=self._attach, refuse=self._refuse,
            send=self._pump_cbs, name=name, window=window,
        )
        self._sessions = SessionReceivers()
        self._messages = MessageLinks(self._schedule, self._is_authorized,
                                      lambda: self._reconnects.generation)
        self._coordinator = CoordinatorLink(self._schedule, self._messages.discharged)
        self._links = ManagementLinks(addresses, window)
        self._connection: Any = None
        self._reconnects = Reconnects()
        self._cbs = CbsLinks(window)
        self._reconnect_task: Timer | None = None
        self._expiry = ExpiryTimer(self._schedule_raw, self._dispatchers)
        self._stopped = False
        self._received = ReceiveBuffer()

    # ---- work from the driver ----------------------------------------------------

    @property
    def _loop(self) -> ProtonLoop:
        assert self.loop is not None
        return self.loop

    def _schedule(self, delay: float, callback: Callable[[], None]) -> Timer:
        """A timer for the token manager and the coordinator; what their callbacks
        start may carry a deadline, so the expiry timer is re-armed after each."""
        def run() -> None:
            callback()
            self._expiry.rearm()
        return self._loop.schedule(delay, run)

    def _schedule_raw(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self._loop.schedule(delay, callback)

    def _dispatchers(self) -> list[Dispatcher]:
        """Every dispatcher whose deadlines the expiry timer keeps."""
        return [*(links.dispatcher for links in self._links.entities.values()),
                self.tokens.dispatcher]

    def on_wake(self) -> None:
        if self._stopped:
            return
        if self.closing:
            self._stop()
            return
        now = time.monotonic()
        touched: dict[str, EntityLinks] = {}
        for entity, request in self.take_inbox():
            links = self._links.of(entity)
            if isinstance(request, PendingRequest):
                links.dispatcher.submit(request, now)
            elif isinstance(request, LinkWork):
                self._messages.take(request, self._connection)
                if request.operation != "attach":
                    continue
                for needed in request.link.needs():
                    touched[needed] = self._links.of(needed)
                continue
            elif request.detaching:
                self._sessions.detach(request)
                continue  # nothing to send: no reason to connect
            else:
                self._session_work(links, request)
            touched[entity] = links
        for links in touched.values():
            self._activate(links)
        for control in self.take_controls():
            self._coordinator.submit(control)
        if self._coordinator.queued:
            self._ensure_connection()
        self._expiry.rearm()

    def stats(self) -> DispatcherStats:
        return self._links.stats()

    def fail_everything(
        self, inbox: deque[Work],
        error: Callable[[PendingRequest], Exception] = closed_error,
    ) -> None:
        """Called once the driver has ended: nothing may be left waiting (the requests
        get ``error(request)``; ClientClosedError unless told otherwise)."""
        self._stopped = True
        for _, request in inbox:
            fail_closed(request)
        self._sessions.fail_all(_session_closed)
        self._messages.fail_all(closed_link)
        for links in self._links.entities.values():
            links.dispatcher.fail_all(error)
        self.tokens.close()
        self._coordinator.close()

    # ---- connection --------------------------------------------------------------

    def _activate(self, links: EntityLinks) -> None:
        """Move an entity with waiting work towards READY, and write what it can."""
        if self._connection is None:
            self._ensure_connection()
            return
        if links.state is LinkState.IDLE and self._has_work(links):
            self.tokens.authorize(links)
        elif links.state is LinkState.READY:
            self._pump(links)

    def _ensure_connection(self) -> None:
        if self._connection is not None or self._reconnect_task is not None:
            return
        delay = self._reconnects.wait()
        if delay > 0:
            self._reconnect_task = self._loop.schedule(delay, self._reconnect)
            return
        self._connect()

    def _reconnect(self) -> None:
        self._reconnect_task = None
        if not self._stopped and self._any_work():
            self._connect()

    def _any_work(self) -> bool:
        """Transaction controls, requests or session links wait for a connection."""
        return self._coordinator.queued or any(
            self._has_work(e) for e in self._links.entities.values())

    def _connect(self) -> None:
        endpoint = self.endpoint
        _log.debug("%s: connecting to %s", self.name, endpoint.url)
        connection = self._loop.connect(
            endpoint.host,
            endpoint.port,
            ssl_domain=_ssl_domain() if endpoint.tls else None,
            virtual_host=endpoint.host,
        )
        self._reconnects.opening(connection)
        self._connection = connection
        self.tokens.connected()
        self._cbs.attach(connection, self.tokens.reply_to)
        self._coordinator.connected(connection, self._reconnects.generation)
        for links in self._links.entities.values():
            if self._has_work(links):
                self.tokens.authorize(links)
        self._expiry.rearm()

    def _current(self, event: Any) -> bool:
        connection = event.connection
        return (connection is not None and self._connection is not None
                and self._reconnects.is_current(connection))

    def connection_opened(self, event: Any) -> None:
        if self._current(event):
            self._reconnects.opened()

    def connection_lost(self, event: Any, reason: str) -> None:
        if self._stopped or not self._current(event):
            return
        _log.warning("%s: connection lost (%s)", self.name, reason)
        connection = self._connection
        self._connection = None
        self._cbs.sender = None
        self._reconnects.lost()
        self.tokens.connection_lost()
        self._coordinator.connection_lost(reason)
        fatal = protocol_mismatch(reason) or (
            None if self._reconnects.ever_opened
            else ConnectFailure(self.endpoint.host, self.endpoint.port, reason))
        if isinstance(fatal, ConnectFailure):
            self._sessions.fail_all(fatal.for_attach)
            self._messages.fail_all(fatal.for_link)
            self._coordinator.refuse_queued(fatal.for_operation)
        self._sessions.connection_lost(reason)
        self._messages.connection_lost(reason)
        for links in self._links.entities.values():
            links.dispatcher.on_link_lost(f"connection lost ({reason})")
            if fatal is not None:
                # Not a drop to ride out: the peer is no AMQP 1.0 endpoint, or it never
                # accepted a connection (its error says whether retrying may help).
                links.dispatcher.fail_all(fatal.for_request)
        self._links.connection_lost()
        connection.close()
        if self._any_work():
            self._ensure_connection()
        self._expiry.rearm()

    # ---- management links --------------------------------------------------------

    def _attach(self, links: EntityLinks) -> None:
        """The entity's token was accepted: attach its link pair and its session links."""
        self._links.attach(links, self._connection)
        self._sessions.authorized(links.entity, self._connection)
        self._messages.authorized(self._connection)

    def _is_authorized(self, entity: str) -> bool:
        """Whether ``entity``'s token was accepted on the current connection."""
        links = self._links.entities.get(entity)
        return self._connection is not None and links is not None and links.state in (
            LinkState.ATTACHING, LinkState.READY)

    def _refuse(self, links: EntityLinks, error: ServiceBusManagementError) -> None:
        """Authorization or attach failed: fail what waits, start over on the next request."""
        _log.warning("%s: %s", self.name, error)
        self._links.detach(links)
        links.dispatcher.fail_all(lambda request: for_request(error, request))
        self._sessions.refused(links.entity, error)
        self._messages.refused(links.entity, error)

    def _has_work(self, links: EntityLinks) -> bool:
        """Requests or session links wait for the entity's links."""
        return (bool(links.dispatcher.queued) or self._sessions.waiting(links.entity)
                or self._messages.waiting(links.entity))

    def _session_work(self, links: EntityLinks, attach: SessionAttach) -> None:
        if self._connection is not None and links.state in (
                LinkState.ATTACHING, LinkState.READY):
            self._sessions.attach(attach, self._connection)
        else:
            self._sessions.wait(attach)

    def link_remote_open(self, link: Any) -> bool:
        return self._sessions.remote_open(link) or self._messages.remote_open(link)

    def link_remote_close(self, link: Any) -> bool:
        return self._sessions.remote_close(link) or self._messages.remote_close(link)

    def link_opened(self, link: Any) -> None:
        if self._coordinator.owns(link.name):
            self._coordinator.opened(link)
            return
        links = self._links.by_link(link.name)
        if links is None or links.state is not LinkState.ATTACHING or not links.opened():
            return
        if link.remote_source is None or (
            link.remote_source.address is None and link.remote_target.address is None
        ):
            return  # a refusal: the detach follows
        links.move(LinkState.READY)
        self._pump(links)
        self._expiry.rearm()

    def link_closed(self, link: Any) -> None:
        if self._coordinator.owns(link.name):
            self._coordinator.closed(link.remote_condition)
            return
        links = self._links.by_link(link.name)
        if links is None:
            return
        condition = link.remote_condition
        name = None if condition is None else str(condition.name)
        if links.state is LinkState.READY:
            _log.warning("%s: %s detached (%s)", self.name, links.node, describe(condition))
            self._links.detach(links)
            links.dispatcher.on_link_lost(
                f"the management link was detached ({describe(condition)})",
                error_type=LinkDetachedError,
                error_condition=name,
            )
            if links.dispatcher.queued:
                self._activate(links)
        else:
            description = None if condition is None else condition.description
            self._refuse(links, attach_refused(f"attaching {links.node}", name, description))
        self._expiry.rearm()

    # ---- the wire ----------------------------------------------------------------

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        if link.is_receiver and self._messages.owns(link.name):
            self._messages.flow(link)
            return
        state = link.state
        if (
            link.is_sender and link.credit
            and state & LOCAL_ACTIVE and state & REMOTE_ACTIVE
        ):
            self._sendable(link)

    def _sendable(self, link: Any) -> None:
        name = link.name
        if name == self._cbs.sender_name:
            self._pump_cbs()
            self._expiry.rearm()
            return
        if self._coordinator.owns(name):
            self._coordinator.pump()
            return
        if self._messages.owns(name):
            self._messages.credit(link)
            return
        links = self._links.by_link(name)
        if links is not None and links.state is LinkState.READY:
            self._pump(links)
            self._expiry.rearm()

    def _pump(self, links: EntityLinks) -> None:
        pump(links.sender._impl, links.dispatcher, self._reconnects.generation)

    def _pump_cbs(self) -> None:
        if self._cbs.sender is not None:
            pump(self._cbs.sender._impl, self.tokens.dispatcher, self._reconnects.generation)

    def on_delivery(self, event: EngineEvent) -> None:
        delivery = pn_event_delivery(event.impl)
        link = pn_delivery_link(delivery)
        name = pn_link_name(link)
        if self._messages.owns(name):
            self._messages.delivery(delivery, name, bool(pn_link_is_receiver(link)))
            return
        if pn_link_is_receiver(link):
            if pn_delivery_aborted(delivery):
                pn_delivery_settle(delivery)
            sender: Any = None
            dispatcher: Dispatcher | None = None
            if name == self._cbs.receiver_name:
                sender, dispatcher = self._cbs.sender, self.tokens.dispatcher
            elif (links := self._links.by_link(name)) is not None:
                sender, dispatcher = links.sender, links.dispatcher
            take_replies(link, dispatcher, self.window, self._received)
            if dispatcher is not None and sender is not None:
                pump(sender._impl, dispatcher, self._reconnects.generation)
        elif self._coordinator.owns(name):
            self._coordinator.outcome(delivery)
        elif name == self._cbs.sender_name:
            outcome(delivery, self.tokens.dispatcher)
        else:
            links = self._links.by_link(name)
            outcome(delivery, None if links is None else links.dispatcher)

    # ---- shutdown ----------------------------------------------------------------

    def _stop(self) -> None:
        self._stopped = True
        self._sessions.fail_all(_session_closed)
        self._messages.fail_all(closed_link)
        for links in self._links.entities.values():
            links.dispatcher.fail_all(closed_error)
            links.cancel_refresh()
        self.tokens.close()
        self._expiry.cancel()
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
        self._coordinator.close()
        if self._connection is not None:
            self._connection.close()  # the driver writes the close frame as it stops
            self._connection = None
        self._loop.stop()
