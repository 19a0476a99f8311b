"""The I/O thread: one proton engine loop, one connection, a link pair per entity.

Theory of operation
-------------------
:class:`IOThread` starts one daemon thread (``sbmgmt-io-<n>``) that runs an
:class:`~sbmgmt._loop.EngineLoop` (our own selector loop over proton's protocol
engine; proton's ``Container`` cost as much per request as the work itself).
Nothing else touches proton objects. Other threads hand work over through
:meth:`IOThread.submit`, which appends to an inbox under a lock and wakes the loop
only when the inbox was empty, so a burst of a thousand requests costs one wake-up;
the I/O thread drains the whole inbox per wake. Callers wait on the
``concurrent.futures.Future`` of their
:class:`~sbmgmt._dispatcher.PendingRequest` (the request bytes are encoded on the
caller's thread, the reply is decoded on this one).

Per connection (opened lazily, on the first request):

- SASL ANONYMOUS; TLS with certificate and host-name verification unless the
  endpoint is a plain (emulator, loopback) one.
- A ``$cbs`` link pair. Before an entity's management links attach, a put-token
  for its audience (``sb://host/entity``) goes out on ``$cbs``; the reply's status
  decides: 2xx attaches, anything else fails the entity's waiting requests with
  UnauthorizedError. A timer sends a fresh token before the current one expires.

Per entity, an :class:`_EntityLinks`: a sender to ``<entity>/$management`` and a
receiver from it whose target (the ``reply-to`` of every request) is unique, with
uuid link names, and a :class:`~sbmgmt._dispatcher.Dispatcher` whose window is the
receiver's credit. Requests are written while the sender has credit and the window
has room.

Session receiver links (:mod:`sbmgmt._session_link`) lock a session for the client's
session requests: they wait for their entity's CBS token like the management links,
then attach with the session filter and no credit.

Failures: a detached management link fails the requests on it (LinkDetachedError)
and re-attaches before the next send; a refused attach fails the waiting requests
with the error its condition names. A lost connection fails every request on the
wire at once (ConnectionLostError); queued ones wait, and the next connection is
opened with exponential backoff (and only while there is work). One timer, set to
the earliest deadline of all dispatchers, expires requests. ``close()`` fails all
work with ClientClosedError, stops the container and joins the thread.

Transactions: :meth:`IOThread.submit_control` hands declares and discharges to the
connection's :class:`~sbmgmt._transaction.CoordinatorLink` (the ``$coordinator``
sender link, attached on first use); the engine forwards that link's events to it
and tells it when the connection is lost. A request in a transaction carries its
txn-id as the transfer's transactional-state, and is failed unsent when its
transaction was lost with an earlier connection.
"""

from __future__ import annotations

import itertools
import logging
import ssl
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cproton import (
    PN_ACCEPTED,
    PN_REJECTED,
    PN_RELEASED,
    pn_delivery,
    pn_delivery_aborted,
    pn_delivery_link,
    pn_delivery_partial,
    pn_delivery_pending,
    pn_delivery_readable,
    pn_delivery_remote_state,
    pn_delivery_settle,
    pn_delivery_settled,
    pn_delivery_update,
    pn_delivery_updated,
    pn_event_delivery,
    pn_link_advance,
    pn_link_credit,
    pn_link_current,
    pn_link_flow,
    pn_link_is_receiver,
    pn_link_name,
    pn_link_recv,
    pn_link_send,
    pn_link_state,
)
from proton import Delivery, Link, SSLDomain
from proton import Endpoint as ProtonEndpoint

from ._dispatcher import DEFAULT_WINDOW, Dispatcher, DispatcherStats, PendingRequest
from ._loop import EngineEvent, EngineLoop, Task, create_receiver, create_sender
from ._retry import RECONNECT_BACKOFF, TOKEN_REFRESH_RETRY
from ._session_link import SessionAttach, SessionReceivers
from ._session_link import end as end_session_link
from ._transaction import Control, CoordinatorLink, set_transactional_state
from ._validate import access_token
from .amqp.envelope import PUT_TOKEN, correlation_key, encode_put_token, reply_of, reply_parts
from .errors import (
    ClientClosedError,
    ConnectionLostError,
    LinkDetachedError,
    ProtocolError,
    ProtocolMismatchError,
    ServiceBusManagementError,
    UnauthorizedError,
    attach_refused,
    error_for_status,
)

__all__ = ["AccessTokenLike", "Endpoint", "IOThread", "TokenSource"]

_log = logging.getLogger("sbmgmt.io")

_CBS_NODE = "$cbs"
_REFRESH_MARGIN = 300.0
_thread_numbers = itertools.count(1)

_CONNECTION_FORCED = "amqp:connection:forced"
_LOCAL_ACTIVE = ProtonEndpoint.LOCAL_ACTIVE
_LOCAL_CLOSED = ProtonEndpoint.LOCAL_CLOSED
_REMOTE_ACTIVE = ProtonEndpoint.REMOTE_ACTIVE

# What the inbox carries: a request, or a session link to attach or detach.
_Work = tuple[str, PendingRequest | SessionAttach]

_IDLE = "idle"
_AUTHORIZING = "authorizing"
_ATTACHING = "attaching"
_READY = "ready"


class AccessTokenLike(Protocol):
    """What a token source returns (``sbmgmt.auth.AccessToken`` fits)."""

    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> float: ...

    @property
    def token_type(self) -> str: ...


class TokenSource(Protocol):
    """Anything that can produce a CBS token for an audience."""

    def get_token(self, audience: str) -> AccessTokenLike: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to connect: ``tls=False`` only for a loopback emulator."""

    host: str
    port: int
    tls: bool = True

    @property
    def url(self) -> str:
        return f"{'amqps' if self.tls else 'amqp'}://{self.host}:{self.port}"


class _EntityLinks:
    """The management link pair of one entity, and its dispatcher."""

    def __init__(self, entity: str, audience: str, reply_to: str, window: int) -> None:
        self.entity = entity
        self.audience = audience
        self.node = f"{entity}/$management"
        self.reply_to = reply_to
        self.dispatcher = Dispatcher(window=window, name=self.node)
        self.state = _IDLE
        self.sender: Any = None
        self.receiver: Any = None
        self.refresh_task: Task | None = None

    def opened(self) -> bool:
        return all(
            link is not None and link.state & link.REMOTE_ACTIVE
            for link in (self.sender, self.receiver)
        )


class IOThread:
    """The client's I/O thread; any thread may call :meth:`submit` and :meth:`close`."""

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        *,
        audience_for: Callable[[str], str],
        reply_to_for: Callable[[str], str],
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.name = f"sbmgmt-io-{next(_thread_numbers)}"
        self._engine = _Engine(
            endpoint, tokens, (audience_for, reply_to_for), window, self.name
        )
        self._lock = threading.Lock()
        self._inbox: deque[_Work] = deque()
        self._controls: deque[Control] = deque()
        self._wake_pending = False
        self._closed = False
        self._loop = EngineLoop(self._engine, container_id=self.name)
        self._engine.loop = self._loop
        self._engine.take_inbox = self._take_inbox
        self._engine.take_controls = self._take_controls
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, entity: str, request: PendingRequest | SessionAttach) -> None:
        """Hand a request to the I/O thread; its future resolves there. A
        :class:`SessionAttach` is attached (or, once ``detaching`` is set, detached)."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._inbox.append((entity, request))
                if not self._wake_pending:
                    self._wake_pending = True
                    self._loop.wake()
        if closed:
            _fail_closed(request)

    def submit_control(self, control: Control) -> None:
        """Hand a transaction's declare or discharge to the I/O thread."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._controls.append(control)
                if not self._wake_pending:
                    self._wake_pending = True
                    self._loop.wake()
        if closed:
            control.future.set_exception(ClientClosedError(
                f"{control.operation}: the client is closed", operation=control.operation))

    def stats(self) -> DispatcherStats:
        """Counters summed over every entity (``max_in_flight`` is the largest seen)."""
        return self._engine.stats()

    def close(self, timeout: float = 5.0) -> None:
        """Fail all pending work with ClientClosedError, stop and join the thread."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._engine.closing = True
                self._loop.wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _take_inbox(self) -> deque[_Work]:
        with self._lock:
            items = self._inbox
            self._inbox = deque()
            self._wake_pending = False
        return items

    def _take_controls(self) -> deque[Control]:
        with self._lock:
            items = self._controls
            self._controls = deque()
        return items

    def _run(self) -> None:
        try:
            self._loop.run()
        except Exception:
            _log.exception("%s: the I/O loop failed; failing all pending requests", self.name)
        finally:
            with self._lock:
                self._closed = True
            self._engine.fail_everything(self._take_inbox())
            for control in self._take_controls():
                control.future.set_exception(ClientClosedError(
                    f"{control.operation}: the client was closed", operation=control.operation))


class _Engine:
    """Everything that runs on the I/O thread.

    It is the loop's handler, and takes proton's endpoint and delivery events
    directly (one method call per event, no helper handlers): the peer
    opening or closing the connection and links, credit, replies (every complete
    one on the link at once, accepted and settled) and the outcome of requests.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        addresses: tuple[Callable[[str], str], Callable[[str], str]],
        window: int,
        name: str,
    ) -> None:
        self.endpoint = endpoint
        self.tokens = tokens
        self.audience_for, self.reply_to_for = addresses
        self.window = window
        self.name = name
        self.loop: EngineLoop | None = None
        self.closing = False
        self.take_inbox: Callable[[], deque[_Work]] = deque
        self.take_controls: Callable[[], deque[Control]] = deque
        self._coordinator = CoordinatorLink(lambda delay, callback: self._loop.schedule(
            delay, callback))
        self._sessions = SessionReceivers()
        self._entities: dict[str, _EntityLinks] = {}
        self._by_link_name: dict[str, _EntityLinks] = {}
        self._connection: Any = None
        self._generation = 0
        self._cbs_sender: Any = None
        self._cbs_sender_name = ""
        self._cbs_receiver_name = ""
        self._cbs_reply_to = ""
        self._cbs_outbox: deque[bytes] = deque()
        self._cbs_waiting: dict[str, tuple[_EntityLinks, AccessTokenLike]] = {}
        self._failures = 0
        self._next_connect_at = 0.0
        self._reconnect_task: Task | None = None
        self._timer_task: Task | None = None
        self._timer_at: float | None = None
        self._stopped = False

    # ---- work from other threads -------------------------------------------------

    @property
    def _loop(self) -> EngineLoop:
        assert self.loop is not None
        return self.loop

    def on_wake(self) -> None:
        if self._stopped:
            return
        if self.closing:
            self._stop()
            return
        now = time.monotonic()
        touched: dict[str, _EntityLinks] = {}
        for entity, request in self.take_inbox():
            links = self._entities.get(entity)
            if links is None:
                links = _EntityLinks(
                    entity, self.audience_for(entity), self.reply_to_for(entity), self.window
                )
                self._entities[entity] = links
            if isinstance(request, PendingRequest):
                links.dispatcher.submit(request, now)
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
        self._rearm_timer()

    def stats(self) -> DispatcherStats:
        total = DispatcherStats()
        for links in list(self._entities.values()):
            s = links.dispatcher.stats
            total.submitted += s.submitted
            total.sent += s.sent
            total.completed += s.completed
            total.failed += s.failed
            total.timed_out += s.timed_out
            total.late_replies += s.late_replies
            total.unknown_replies += s.unknown_replies
            total.max_in_flight = max(total.max_in_flight, s.max_in_flight)
        return total

    def fail_everything(self, inbox: deque[_Work]) -> None:
        """Called once the loop has ended: nothing may be left waiting."""
        self._stopped = True
        for _, request in inbox:
            _fail_closed(request)
        self._sessions.fail_all(_session_closed)
        for links in self._entities.values():
            links.dispatcher.fail_all(_closed_error)
        self._coordinator.close()

    # ---- connection --------------------------------------------------------------

    def _activate(self, links: _EntityLinks) -> None:
        """Move an entity with waiting work towards READY, and write what it can."""
        if self._connection is None:
            self._ensure_connection()
            return
        if links.state == _IDLE and self._has_work(links):
            self._authorize(links)
        elif links.state == _READY:
            self._pump(links)

    def _ensure_connection(self) -> None:
        if self._connection is not None or self._reconnect_task is not None:
            return
        delay = self._next_connect_at - time.monotonic()
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
            self._has_work(e) for e in self._entities.values())

    def _connect(self) -> None:
        self._generation += 1
        endpoint = self.endpoint
        _log.debug("%s: connecting to %s", self.name, endpoint.url)
        connection = self._loop.connect(
            endpoint.host,
            endpoint.port,
            ssl_domain=_ssl_domain() if endpoint.tls else None,
            virtual_host=endpoint.host,
        )
        connection.sbmgmt_generation = self._generation
        self._connection = connection
        self._cbs_reply_to = f"$cbs/sbmgmt-reply-{uuid.uuid4()}"
        self._cbs_sender_name = f"sbmgmt-cbs-sender-{uuid.uuid4()}"
        self._cbs_receiver_name = f"sbmgmt-cbs-receiver-{uuid.uuid4()}"
        self._cbs_sender = create_sender(
            connection, target=_CBS_NODE, name=self._cbs_sender_name
        )
        cbs_receiver = create_receiver(
            connection, source=_CBS_NODE, target=self._cbs_reply_to, name=self._cbs_receiver_name
        )
        cbs_receiver.flow(self.window)
        self._coordinator.connected(connection, self._generation)
        for links in self._entities.values():
            if self._has_work(links):
                self._authorize(links)

    def _current(self, event: Any) -> bool:
        connection = event.connection
        return (
            connection is not None
            and self._connection is not None
            and getattr(connection, "sbmgmt_generation", None) == self._generation
        )

    # Proton's endpoint events, as MessagingHandler would turn them into callbacks: an
    # endpoint is "opened" once both ends are open; the peer closing one is an error
    # or a closing (both lose it here) unless we had closed it first.

    def on_connection_local_open(self, event: Any) -> None:
        if event.connection.state & _REMOTE_ACTIVE:
            self._connection_opened(event)

    def on_connection_remote_open(self, event: Any) -> None:
        if event.connection.state & _LOCAL_ACTIVE:
            self._connection_opened(event)

    def _connection_opened(self, event: Any) -> None:
        if self._current(event):
            self._failures = 0

    def on_connection_remote_close(self, event: Any) -> None:
        connection = event.connection
        condition = connection.remote_condition
        if condition is not None and condition.name == _CONNECTION_FORCED:
            return  # like a dropped socket: the transport closing follows
        if condition is not None or not connection.state & _LOCAL_CLOSED:
            self._connection_lost(event, _describe(condition))
        connection.close()

    def on_session_remote_close(self, event: Any) -> None:
        condition = event.session.remote_condition
        if condition is not None:
            self._connection_lost(event, f"session closed ({_describe(condition)})")
        event.session.close()

    def on_transport_error(self, event: Any) -> None:
        self._connection_lost(event, _describe(event.transport.condition))

    def on_transport_tail_closed(self, event: Any) -> None:
        self._disconnected(event)

    def on_transport_closed(self, event: Any) -> None:
        self._disconnected(event)

    def _disconnected(self, event: Any) -> None:
        connection = event.connection
        if connection is not None and connection.state & _LOCAL_ACTIVE:
            self._connection_lost(event, "disconnected")

    def _connection_lost(self, event: Any, reason: str) -> None:
        if self._stopped or not self._current(event):
            return
        _log.warning("%s: connection lost (%s)", self.name, reason)
        connection = self._connection
        self._connection = None
        self._failures += 1
        self._next_connect_at = time.monotonic() + RECONNECT_BACKOFF.delay(self._failures)
        self._cbs_outbox.clear()
        self._cbs_waiting.clear()
        self._by_link_name.clear()
        self._coordinator.connection_lost(reason)
        self._sessions.connection_lost(reason)
        mismatch = _protocol_mismatch(reason)
        for links in self._entities.values():
            links.dispatcher.on_link_lost(f"connection lost ({reason})")
            if mismatch is not None:
                # Not a transient failure: retrying cannot make the peer speak AMQP 1.0.
                links.dispatcher.fail_all(mismatch.for_request)
            self._forget_links(links)
        connection.close()
        if self._any_work():
            self._ensure_connection()
        self._rearm_timer()

    def _forget_links(self, links: _EntityLinks) -> None:
        links.state = _IDLE
        links.sender = links.receiver = None
        if links.refresh_task is not None:
            links.refresh_task.cancel()
            links.refresh_task = None

    # ---- CBS ---------------------------------------------------------------------

    def _authorize(self, links: _EntityLinks) -> None:
        links.state = _AUTHORIZING
        try:
            token = access_token(self.tokens.get_token(links.audience))
        except ServiceBusManagementError as exc:
            self._refuse(links, _unauthorized(links, str(exc)))
            return
        except Exception as exc:
            self._refuse(links, _unauthorized(links, f"no token ({type(exc).__name__})"))
            return
        self._put_token(links, token)

    def _put_token(self, links: _EntityLinks, token: AccessTokenLike) -> None:
        message_id = uuid.uuid4()
        self._cbs_waiting[str(message_id)] = (links, token)
        self._cbs_outbox.append(encode_put_token(
            message_id=message_id, reply_to=self._cbs_reply_to, token_type=token.token_type,
            audience=links.audience, token=token.token,
        ))
        self._pump_cbs()

    def _pump_cbs(self) -> None:
        sender = self._cbs_sender
        while self._cbs_outbox and sender is not None and sender.credit > 0:
            delivery = sender.delivery(sender.delivery_tag())
            sender.stream(self._cbs_outbox.popleft())
            sender.advance()
            if sender.snd_settle_mode == Link.SND_SETTLED:
                delivery.settle()

    def _on_cbs_reply(self, raw: bytes) -> None:
        try:
            correlation, properties, body = reply_parts(raw)
        except ProtocolError:
            _log.warning("%s: dropped a CBS reply that is not an AMQP message", self.name)
            return
        try:
            reply = reply_of(correlation, properties, body)
        except ProtocolError as exc:
            key = None if correlation is None else correlation_key(correlation)
            waiting = self._cbs_waiting.pop(key, None) if key else None
            if waiting is not None:
                self._refuse(waiting[0], _unauthorized(waiting[0], f"bad CBS reply: {exc}"))
            return
        waiting = self._cbs_waiting.pop(reply.correlation_key or "", None)
        if waiting is None:
            _log.warning("%s: dropped a CBS reply nobody waits for", self.name)
            return
        links, token = waiting
        if 200 <= reply.status_code < 300:
            self._schedule_refresh(links, token.expires_on)
            if links.state == _AUTHORIZING:
                self._attach(links)
            return
        if reply.status_code >= 500 or links.state != _AUTHORIZING:
            error: ServiceBusManagementError = error_for_status(
                PUT_TOKEN, reply.status_code, reply.error_condition, reply.description
            )
        else:
            error = UnauthorizedError(
                f"{PUT_TOKEN} for {links.entity} was refused with status {reply.status_code}"
                + (f": {reply.description}" if reply.description else ""),
                operation=PUT_TOKEN,
                status_code=reply.status_code,
                error_condition=reply.error_condition,
                description=reply.description,
            )
        if links.state == _AUTHORIZING:
            self._refuse(links, error)
        else:
            _log.warning("%s: token refresh for %s failed: %s", self.name, links.entity, error)
            self._schedule_refresh(links, time.time() + TOKEN_REFRESH_RETRY)

    def _schedule_refresh(self, links: _EntityLinks, expires_on: float) -> None:
        if links.refresh_task is not None:
            links.refresh_task.cancel()
        remaining = expires_on - time.time()
        delay = max(0.5, remaining - min(_REFRESH_MARGIN, remaining * 0.2))
        links.refresh_task = self._loop.schedule(delay, lambda: self._refresh(links))

    def _refresh(self, links: _EntityLinks) -> None:
        links.refresh_task = None
        if self._connection is None or links.state not in (_ATTACHING, _READY):
            return
        try:
            token = access_token(self.tokens.get_token(links.audience))
        except Exception as exc:
            _log.warning(
                "%s: token refresh for %s failed (%s)", self.name, links.entity,
                type(exc).__name__,
            )
            self._schedule_refresh(links, time.time() + TOKEN_REFRESH_RETRY)
            return
        _log.debug("%s: refreshing the token of %s", self.name, links.entity)
        self._put_token(links, token)

    def _refuse(self, links: _EntityLinks, error: ServiceBusManagementError) -> None:
        """Authorization or attach failed: fail what waits, start over on the next request."""
        _log.warning("%s: %s", self.name, error)
        for link in (links.sender, links.receiver):
            if link is not None:
                self._by_link_name.pop(link.name, None)
                link.close()
        self._forget_links(links)
        links.dispatcher.fail_all(lambda request: _for_request(error, request))
        self._sessions.refused(links.entity, error)

    # ---- management links --------------------------------------------------------

    def _attach(self, links: _EntityLinks) -> None:
        links.state = _ATTACHING
        suffix = uuid.uuid4()
        links.sender = create_sender(
            self._connection, target=links.node, name=f"{links.node}-sender-{suffix}"
        )
        links.receiver = create_receiver(
            self._connection,
            source=links.node,
            target=links.reply_to,
            name=f"{links.node}-receiver-{suffix}",
        )
        links.receiver.flow(self.window)
        self._by_link_name[links.sender.name] = links
        self._by_link_name[links.receiver.name] = links
        self._sessions.authorized(links.entity, self._connection)

    def _has_work(self, links: _EntityLinks) -> bool:
        """Requests or session links wait for the entity's links."""
        return bool(links.dispatcher.queued) or self._sessions.waiting(links.entity)

    def _session_work(self, links: _EntityLinks, attach: SessionAttach) -> None:
        if self._connection is not None and links.state in (_ATTACHING, _READY):
            self._sessions.attach(attach, self._connection)
        else:
            self._sessions.wait(attach)

    def on_link_local_open(self, event: Any) -> None:
        if event.link.state & _REMOTE_ACTIVE:
            self._link_opened(event.link)

    def on_link_remote_open(self, event: Any) -> None:
        if self._sessions.remote_open(event.link):
            return
        if event.link.state & _LOCAL_ACTIVE:
            self._link_opened(event.link)

    def _link_opened(self, link: Any) -> None:
        if self._coordinator.owns(link.name):
            self._coordinator.opened(link)
            return
        links = self._by_link_name.get(link.name)
        if links is None or links.state != _ATTACHING or not links.opened():
            return
        if link.remote_source is None or (
            link.remote_source.address is None and link.remote_target.address is None
        ):
            return  # a refusal: the detach follows
        links.state = _READY
        self._pump(links)
        self._rearm_timer()

    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        if self._sessions.remote_close(link):
            return
        if link.remote_condition is not None or not link.state & _LOCAL_CLOSED:
            self._link_closed(link)
        link.close()

    def _link_closed(self, link: Any) -> None:
        if self._coordinator.owns(link.name):
            self._coordinator.closed(link.remote_condition)
            return
        links = self._by_link_name.get(link.name)
        if links is None:
            return
        condition = link.remote_condition
        name = None if condition is None else str(condition.name)
        description = None if condition is None else condition.description
        if links.state == _READY:
            _log.warning("%s: %s detached (%s)", self.name, links.node, _describe(condition))
            for ours in (links.sender, links.receiver):
                self._by_link_name.pop(ours.name, None)
                ours.close()
            self._forget_links(links)
            links.dispatcher.on_link_lost(
                f"the management link was detached ({_describe(condition)})",
                error_type=LinkDetachedError,
                error_condition=name,
            )
            if links.dispatcher.queued:
                self._activate(links)
        else:
            self._refuse(links, _attach_error(links, name, description))
        self._rearm_timer()

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        state = link.state
        if (
            link.is_sender and link.credit
            and state & _LOCAL_ACTIVE and state & _REMOTE_ACTIVE
        ):
            self._sendable(link)

    def _sendable(self, link: Any) -> None:
        name = link.name
        if name == self._cbs_sender_name:
            self._pump_cbs()
            return
        if self._coordinator.owns(name):
            self._coordinator.pump()
            return
        links = self._by_link_name.get(name)
        if links is not None and links.state == _READY:
            self._pump(links)
            self._rearm_timer()

    # The per-request paths below call proton's C functions on the raw link and delivery
    # pointers: wrapping each delivery in proton's Python objects cost more than the rest
    # of the work done for it.

    def _pump(self, links: _EntityLinks) -> None:
        sender = links.sender._impl
        dispatcher = links.dispatcher
        now = time.monotonic()
        while pn_link_credit(sender) > 0:
            request = dispatcher.next_sendable()
            if request is None:
                break
            transaction = request.transaction
            if transaction is not None and (
                    transaction.lost is not None or transaction.generation != self._generation):
                transaction.lost = transaction.lost or "its connection was closed"
                dispatcher.on_reply_error(request.key, transaction.lost_error(request.operation))
                continue
            delivery = pn_delivery(sender, request.key.encode())
            if transaction is not None:
                assert transaction.txn_id is not None
                set_transactional_state(delivery, transaction.txn_id)
            pn_link_send(sender, request.payload)
            pn_link_advance(sender)
            dispatcher.on_sent(request, now)

    def on_delivery(self, event: EngineEvent) -> None:
        delivery = pn_event_delivery(event.impl)
        link = pn_delivery_link(delivery)
        if pn_link_is_receiver(link):
            if pn_delivery_aborted(delivery):
                pn_delivery_settle(delivery)
            self._receive(link)
        elif self._coordinator.owns(pn_link_name(link)):
            self._coordinator.outcome(delivery)
        else:
            self._outcome(link, delivery)

    def _receive(self, receiver: Any) -> None:
        """Take every complete reply waiting on ``receiver`` (accepting each), then
        top up its credit and write what the freed window allows, once."""
        name = pn_link_name(receiver)
        cbs = name == self._cbs_receiver_name
        links = None if cbs else self._by_link_name.get(name)
        taken = False
        while True:
            delivery = pn_link_current(receiver)
            if (not delivery or pn_delivery_aborted(delivery) or pn_delivery_partial(delivery)
                    or not pn_delivery_readable(delivery)):
                break
            _, raw = pn_link_recv(receiver, pn_delivery_pending(delivery))
            pn_link_advance(receiver)
            if pn_link_state(receiver) & _LOCAL_CLOSED:
                _settle(delivery, PN_RELEASED)
                continue
            if cbs:
                self._on_cbs_reply(raw)
            elif links is not None:
                self._on_reply(links.dispatcher, raw)
            taken = True
            _settle(delivery, PN_ACCEPTED)
        if not taken or not (cbs or links is not None):
            return
        credit = pn_link_credit(receiver)
        if credit <= self.window // 2:
            pn_link_flow(receiver, self.window - credit)
        if links is not None:
            self._pump(links)

    def _on_reply(self, dispatcher: Dispatcher, raw: bytes) -> None:
        try:
            correlation, properties, body = reply_parts(raw)
        except ProtocolError as exc:
            dispatcher.on_reply_error(None, exc)
            return
        try:
            reply = reply_of(correlation, properties, body)
        except ProtocolError as exc:
            dispatcher.on_reply_error(
                None if correlation is None else correlation_key(correlation), exc
            )
        else:
            dispatcher.on_reply(reply.correlation_key, reply)

    def _outcome(self, sender: Any, delivery: Any) -> None:
        """A request's delivery was updated: a rejection fails it; settle what the peer
        settled."""
        if not pn_delivery_updated(delivery):
            return
        if pn_delivery_remote_state(delivery) == PN_REJECTED:
            self._rejected(sender, Delivery.wrap(delivery))  # type: ignore[no-untyped-call]
        if pn_delivery_settled(delivery):
            pn_delivery_settle(delivery)

    def _rejected(self, sender: Any, delivery: Any) -> None:
        links = self._by_link_name.get(pn_link_name(sender))
        if links is None:
            return
        condition = delivery.remote.condition
        tag = delivery.tag  # proton 0.40 gives the tag as str (it was our key's bytes)
        key = tag if isinstance(tag, str) else bytes(tag).decode("utf-8", "replace")
        request_error = ProtocolError(f"the service rejected the request ({_describe(condition)})")
        links.dispatcher.on_reply_error(key, request_error)

    # ---- timers and shutdown -----------------------------------------------------

    def _rearm_timer(self) -> None:
        now = time.monotonic()
        deadlines = [
            d for d in (links.dispatcher.tick(now) for links in self._entities.values())
            if d is not None
        ]
        if not deadlines:
            return
        earliest = min(deadlines)
        if self._timer_at is not None and self._timer_at <= earliest:
            return
        if self._timer_task is not None:
            self._timer_task.cancel()
        self._timer_at = earliest
        self._timer_task = self._loop.schedule(max(0.0, earliest - now) + 0.001, self._on_timer)

    def _on_timer(self) -> None:
        self._timer_task = None
        self._timer_at = None
        self._rearm_timer()

    def _stop(self) -> None:
        self._stopped = True
        self._sessions.fail_all(_session_closed)
        for links in self._entities.values():
            links.dispatcher.fail_all(_closed_error)
            if links.refresh_task is not None:
                links.refresh_task.cancel()
        for task in (self._timer_task, self._reconnect_task):
            if task is not None:
                task.cancel()
        self._coordinator.close()
        if self._connection is not None:
            self._connection.close()  # the loop writes the close frame as it stops
            self._connection = None
        self._loop.stop()


def _settle(delivery: Any, outcome: int) -> None:
    """Settle a received delivery (a C pointer) with ``outcome``: ``Delivery.update`` then
    ``settle``, without proton's copy of an (empty) local disposition first."""
    pn_delivery_update(delivery, outcome)
    pn_delivery_settle(delivery)


def _describe(condition: Any) -> str:
    if condition is None:
        return "no error condition"
    if condition.description:
        return f"{condition.name}: {condition.description}"
    return str(condition.name)


# Protocol headers of the older AMQP versions (a RabbitMQ-style broker, not Service Bus).
_OTHER_AMQP_HEADERS = {
    "AMQP\\x00\\x00\\x09\\x01": "AMQP 0-9-1",
    "AMQP\\x01\\x01\\x00\\x09": "AMQP 0-9",
    "AMQP\\x01\\x01\\x08\\x00": "AMQP 0-8",
    "AMQP\\x01\\x01\\x09\\x01": "AMQP 0-9-1",
}


@dataclass(frozen=True, slots=True)
class _Mismatch:
    text: str

    def for_request(self, request: PendingRequest) -> ProtocolMismatchError:
        return ProtocolMismatchError(f"{request.operation}: {self.text}",
                                     operation=request.operation)


def _protocol_mismatch(reason: str) -> _Mismatch | None:
    """A clear message when the peer answered with another protocol's header."""
    if "protocol header" not in reason:
        return None
    for header, version in _OTHER_AMQP_HEADERS.items():
        if header in reason:
            return _Mismatch(f"the peer answered with the {version} protocol header: it is "
                             "not an AMQP 1.0 endpoint such as Service Bus (check the host "
                             "and port)")
    return _Mismatch(f"the peer does not speak AMQP 1.0 ({reason})")


def _ssl_domain() -> SSLDomain:
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    cafile = ssl.get_default_verify_paths().cafile
    if cafile:
        domain.set_trusted_ca_db(cafile)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    return domain


def _closed_error(request: PendingRequest) -> ClientClosedError:
    return ClientClosedError(
        f"{request.operation}: the client was closed", operation=request.operation
    )


def _session_closed(attach: SessionAttach) -> ClientClosedError:
    return ClientClosedError(f"locking {attach.what()}: the client was closed",
                             operation="attach")


def _fail_closed(work: PendingRequest | SessionAttach) -> None:
    """Fail work that reached a closed client."""
    if isinstance(work, SessionAttach):
        end_session_link(work, _session_closed(work))
    else:
        work.future.set_exception(_closed_error(work))


def _unauthorized(links: _EntityLinks, reason: str) -> UnauthorizedError:
    return UnauthorizedError(
        f"{PUT_TOKEN} for {links.entity} failed: {reason}", operation=PUT_TOKEN
    )


def _attach_error(
    links: _EntityLinks, condition: str | None, description: str | None
) -> ServiceBusManagementError:
    return attach_refused(f"attaching {links.node}", condition, description)


def _for_request(error: ServiceBusManagementError, request: PendingRequest) -> Exception:
    """A copy of ``error`` naming the request's operation (one exception per future)."""
    if isinstance(error, ConnectionLostError):
        return type(error)(
            f"{request.operation}: {error}", operation=request.operation,
            error_condition=error.error_condition, description=error.description,
        )
    return type(error)(
        f"{request.operation}: {error}", operation=request.operation,
        status_code=error.status_code, error_condition=error.error_condition,
        description=error.description,
    )

