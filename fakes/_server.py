"""The AMQP 1.0 side of the fake namespace: one proton handler on the server thread.

The thread runs :class:`sbmgmt.transport.server_loop.ServerLoop` (the client's own selector loop
over proton's protocol engine, with a listening socket) rather than proton's ``Container``,
whose per-event machinery cost as much as answering the request. It routes each link by
address: ``$cbs`` (put-token), ``<entity>/$management`` (management requests, answered
by :mod:`fakes._management`), a coordinator target (transactions, :mod:`fakes._coordinator`),
and entities (senders enqueue, receivers get deliveries). Work whose transfer or
disposition carries a transactional-state is staged on its transaction, not applied.
Every event runs under the namespace lock, and after each one :meth:`Server.pump`
applies what is due and feeds receivers with credit. Management requests go to a
:class:`ManagementHandler` (the namespace's :class:`~fakes._management.ManagementNode`,
or ``sbmgmt.testing``'s mock), and connections may also come over in-memory streams
(:meth:`Server.serve_stream`) instead of the listening socket.

Links are authorized by the CBS grants of their connection (:mod:`fakes._auth`): a grant
covers a link's address or not. Two deadline timers (:mod:`fakes._timers`) keep the
fake's clock: one for the store's next deadline (locks, schedules, TTL, session locks),
armed after every pump and every flow that took messages, whose firing pumps; one for the
earliest token expiry, whose firing detaches the links no valid grant covers any more.
A receiver asking for the next available session (a null session filter) when no unlocked
session has messages waits, as on the service, for the time its ``com.microsoft:timeout`` link
property asks (the service's default, 60 s, without one): :class:`_SessionWait` entries, served
by every pump in the order they came and armed on the store timer. A session that gets
messages in time is locked for it and the attach answered; at the deadline the attach is
answered without a source and detached with ``com.microsoft:timeout``, which the SDKs raise as
an operation time-out (Python's ``OperationTimeoutError``, JavaScript's ``ServiceTimeout``).
Every link advertises the namespace's ``max-message-size``; a larger transfer is rejected
(and dropped as it arrives) before anything decodes it.

One client cannot stop it (:mod:`fakes._limits` holds the bounds): SASL frames are
screened (:mod:`fakes._screen`) before proton reads them, and delivery-ids that arrive out
of order or repeated are renumbered for proton and given back in its dispositions
(:mod:`fakes._sequencing`: the Python SDK's threads send them so, and the service takes
them); a request that fails in an unexpected way is rejected (``amqp:internal-error``) on
its own; an event whose handling fails closes only its connection
(:meth:`Server.on_handler_error`); the loop closes connections that do not open in time or
fall silent; while a node's replies wait for reply-link credit the client does not give, its
request links get no more credit (:meth:`Server._top_up`); repeated warnings are throttled.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import math
import os
import threading
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from cproton import (
    PN_ACCEPTED,
    pn_delivery,
    pn_delivery_aborted,
    pn_delivery_partial,
    pn_delivery_pending,
    pn_delivery_readable,
    pn_delivery_settle,
    pn_delivery_update,
    pn_link_advance,
    pn_link_credit,
    pn_link_current,
    pn_link_flow,
    pn_link_send,
    pn_link_state,
)
from proton import (
    Condition,
    Delivery,
    Endpoint,
    Link,
    Message,
    Terminus,
    symbol,
)

from sbmgmt.amqp.envelope import Request, parse_request
from sbmgmt.amqp.sections import SECTION_CODES
from sbmgmt.amqp.transaction_frames import DECLARED, set_transactional_state, transactional_state
from sbmgmt.auth import SasTokenError, verify_sas_token
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message as SbMessage
from sbmgmt.transport.receive_buffer import ReceiveBuffer
from sbmgmt.transport.server_loop import ServerLoop
from sbmgmt.transport.sockets import Stream

from ._addresses import CBS_NODE, entity_key, normalize, split_management
from ._auth import Expiries, TokenBook, audience_scope, scope_of
from ._clock import FakeClock
from ._coordinator import Coordinator, Staged
from ._entity import Entity, SessionOwner, StoredMessage
from ._errors import (
    ArgumentError,
    EntityNotFound,
    FakeServiceError,
    LinkLimitExceeded,
    MessageLockLost,
    NoSessionAvailable,
    Unauthorized,
)
from ._faults import NO_FAULTS, Faults, ReplyPlan
from ._limits import Limits, ThrottledLog, failure_site
from ._loopback import audience_hosts, listen_addresses
from ._management import ManagementNode, Reply
from ._outcomes import Outcome
from ._sequencing import ConnectionScreen
from ._storable import check_storable
from ._store import Store
from ._timers import DeadlineTimer

__all__ = ["ManagementHandler", "Server"]

_LOG = logging.getLogger("fakes.server")
_CREDIT = 500
_SESSION_FILTER = symbol("com.microsoft:session-filter")
_OPERATION_TIMEOUT = symbol("com.microsoft:timeout")
#: How long the service waits for a next available session when the receiver names no time.
_DEFAULT_SESSION_WAIT = 60.0
_LOCKED_UNTIL_UTC = symbol("com.microsoft:locked-until-utc")
_DEAD_LETTER = "com.microsoft:dead-letter"
_DOTNET_EPOCH_TICKS = 621355968000000000
_SERVER_BUSY = "com.microsoft:server-busy"
_UNAUTHORIZED = "amqp:unauthorized-access"
_INTERNAL_ERROR = "amqp:internal-error"
_RESOURCE_LIMIT = "amqp:resource-limit-exceeded"
_SIZE_EXCEEDED = "amqp:link:message-size-exceeded"
_TRACKING_ID = symbol("com.microsoft:tracking-id")
_CALL_TIMEOUT = 10.0
#: How often a free port is picked again when it was taken on the second loopback.
_PORT_ATTEMPTS = 5
_T = TypeVar("_T")
# proton's wrap function (untyped): a C delivery pointer in, its wrapper out.
_wrap_delivery: Any = Delivery.wrap


class ManagementHandler(Protocol):
    """What answers the requests sent to ``<entity>/$management`` (on the server thread)."""

    #: (entity key, operation) -> how many requests were applied (answered with success).
    applied: Counter[tuple[str, str]]

    def handle(self, path: str, message: Request, connection: int,
               now: float, txn_id: bytes | None = None) -> Reply | None:
        """The reply to one request (``txn_id``: the transaction its transfer names, if
        any); None sends none. A FakeServiceError raised here rejects the request's
        delivery with its condition."""


@dataclass
class _ConnectionState:
    """What one client connection holds: its tokens and its reply links."""

    key: int
    connection: Any
    tokens: TokenBook = field(default_factory=TokenBook)
    reply_links: dict[str, list[Link]] = field(default_factory=dict)
    #: (node, reply-to as sent) -> the link last chosen for it (the hot path's shortcut).
    reply_cache: dict[tuple[str, str | None], Link] = field(default_factory=dict)
    reply_tag: int = 0
    #: Request links whose credit was not topped up while their node's replies waited.
    starved: set[Link] = field(default_factory=set)
    #: Links attached and not yet detached (bounded by ``Limits.max_links_per_connection``).
    links: int = 0


@dataclass(slots=True)
class _Route:
    """Where the messages a client sends on one link go, fixed when the link attaches."""

    state: _ConnectionState
    #: The entity path as attached ("" for ``$cbs``).
    path: str
    #: Which node's reply links answer it: ``$cbs`` or the entity path in lower case.
    node: str
    cbs: bool = False
    management: bool = False
    coordinator: bool = False


@dataclass
class _Consumer:
    """A receiver's link: the server sends the entity's messages on it."""

    link: Link
    entity: Entity
    peek_lock: bool
    session_id: str | None = None
    owner: SessionOwner | None = None


@dataclass(slots=True)
class _SessionWait:
    """A receiver's attach for the next available session, unanswered until one has
    messages or its deadline passes."""

    link: Link
    entity: Entity
    key: int
    deadline: float


def _session_wait(link: Link) -> float:
    """The seconds a next-available-session receiver asked to wait (its link's
    ``com.microsoft:timeout``, milliseconds), else the service's default."""
    properties = link.remote_properties
    requested = properties.get(_OPERATION_TIMEOUT) if isinstance(properties, dict) else None
    if isinstance(requested, int) and not isinstance(requested, bool) and requested >= 0:
        return requested / 1000
    return _DEFAULT_SESSION_WAIT


def _dotnet_ticks(seconds: float) -> int:
    return _DOTNET_EPOCH_TICKS + int(seconds * 10_000_000)


def _filter_map(terminus: Terminus) -> dict[Any, Any]:
    data = terminus.filter
    data.rewind()
    if not data.next():
        return {}
    value = data.get_object()
    return value if isinstance(value, dict) else {}


def _split_batch(message: SbMessage) -> list[SbMessage]:
    """A batch (message-format 0x80013700) carries one encoded message per data section."""
    body = message.body
    parts = body if isinstance(body, list) else [body]
    if message.body_type != "data":
        return [message]
    if not all(len(p) > 3 and p[0] == 0 and p[1] == 0x53 and p[2] in SECTION_CODES
               for p in parts):
        return [message]
    try:
        return [SbMessage.from_bytes(bytes(p)) for p in parts]
    except ProtocolError:
        return [message]


class Server:
    """The proton handler and its engine loop, run on one background thread."""

    def __init__(self, store: Store, clock: FakeClock, lock: threading.RLock, *, host: str,
                 port: int | None, keys: dict[str, str], accept_any_token: bool,
                 faults: Faults, max_message_size: int, limits: Limits,
                 management: ManagementHandler | None = None,
                 relaxed_session_locks: bool = False) -> None:
        self._faults = faults
        self._limits = limits
        self._warnings = ThrottledLog(_LOG, limits.warning_interval)
        self._held: list[tuple[ReplyPlan, Callable[[], None]]] = []
        self._calls: deque[Callable[[], None]] = deque()
        self._store = store
        self._clock = clock
        self._lock = lock
        self._audience_hosts = audience_hosts(host)
        self._keys = keys
        self._accept_any_token = accept_any_token
        self._max_message_size = max_message_size
        #: Incoming deliveries (C pointers) already larger than the limit while partial: their
        #: bytes are dropped. A hint; the mark on the delivery itself decides (a pointer of a
        #: delivery whose connection died may be reused).
        self._oversized: set[Any] = set()
        self._received = ReceiveBuffer()
        self.transactions = Coordinator()
        self.management: ManagementHandler = (
            ManagementNode(store, self._session_owner, self.transactions,
                           relaxed_session_locks=relaxed_session_locks)
            if management is None else management)
        self._connections: dict[int, _ConnectionState] = {}
        self._consumers: dict[int, _Consumer] = {}
        #: Next-available-session attaches waiting for a session, in the order they came.
        self._session_waits: list[_SessionWait] = []
        self._next_key = 1
        self._loop = ServerLoop(self, container_id=f"fake-servicebus-{uuid.uuid4()}")
        # Store deadlines (locks, schedules, TTL) and token expiries, on the fake's clock.
        self._timer = DeadlineTimer(self._loop, clock, self._on_timer)
        self._token_expiries = Expiries()
        self._token_timer = DeadlineTimer(self._loop, clock, self._on_token_timer)
        self._signals: set[str] = set()
        self._signals_lock = threading.Lock()
        self._running = True
        # port 0 asks the OS for a free one; None: no listener (in-memory streams only)
        self.port: int = 0 if port is None else self._listen(listen_addresses(host), port)
        self._thread = threading.Thread(target=self._run, name="fake-servicebus", daemon=True)
        self._clock.on_advance(self._clock_advanced)

    def _listen(self, addresses: list[str], port: int) -> int:
        """Listen on every address on one port (the first picks it when ``port`` is 0);
        an OSError names the address and port that could not be had."""
        for _attempt in range(_PORT_ATTEMPTS):
            chosen = port
            try:
                for address in addresses:
                    chosen = self._loop.listen(address, chosen, screen=ConnectionScreen,
                                               handshake_timeout=self._limits.handshake_timeout,
                                               idle_timeout=self._limits.idle_timeout)
                return chosen
            except OSError as exc:
                self._loop.close_listeners()
                # a free port picked on one address may be taken on the next: pick again
                if port == 0 and exc.errno == errno.EADDRINUSE:
                    continue
                reason = os.strerror(exc.errno) if exc.errno else str(exc)
                raise OSError(exc.errno, f"cannot listen for AMQP on {address} port {chosen}: "
                              f"{reason}") from None
        raise OSError(errno.EADDRINUSE, "no port was free on every address: "
                      f"{', '.join(addresses)}")

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Run the container on its thread."""
        self._faults.bind(self)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._loop.run()  # closes every socket when it ends
        except Exception:  # the thread must not die silently
            _LOG.exception("the fake namespace's server thread failed")
        finally:
            with self._signals_lock:
                self._running = False

    def _trigger(self, name: str) -> None:
        """From any thread: run ``on_<name>`` on the server thread (if it still runs)."""
        with self._signals_lock:
            if not self._running:
                return
            self._signals.add(name)
        self._loop.wake()

    def on_wake(self) -> None:
        """The loop was woken: run what :meth:`_trigger` asked for."""
        with self._signals_lock:
            signals, self._signals = self._signals, set()
        if "fake_call" in signals:
            self.on_fake_call()
        if "fake_wake" in signals:
            self.on_fake_wake()
        if "fake_stop" in signals:
            self.on_fake_stop()

    def serve_stream(self, stream: Stream) -> None:
        """From any thread: serve one client connection over ``stream``."""
        self._call(lambda: self._loop.adopt(stream))

    def wake(self) -> None:
        """From any thread: apply what is due and feed receivers (on the server thread)."""
        self._trigger("fake_wake")

    def stop(self, timeout: float = 10.0) -> None:
        """Close every connection and the listener, and join the thread."""
        self._clock.remove_listener(self._clock_advanced)
        self._faults.bind(None)
        if self._thread.is_alive():
            self._trigger("fake_stop")
            self._thread.join(timeout)

    def on_fake_wake(self) -> None:
        with self._lock:
            self.pump()

    def _clock_advanced(self) -> None:
        """Apply what the move made due (expired locks and tokens) before ``advance`` returns."""
        if self._thread.is_alive():
            self._call(self._after_clock_move)

    def _after_clock_move(self) -> None:
        """Timers from the new time; tokens the move expired stop their links (and the
        call's pump applies the store's due work)."""
        self._timer.clock_moved()
        self._token_timer.clock_moved()
        self._on_token_timer()

    def _call(self, action: Callable[[], _T]) -> _T:
        """Run ``action`` on the server thread (under the lock) and return its result."""
        if threading.current_thread() is self._thread:
            with self._lock:
                return action()
        if not self._thread.is_alive():
            raise RuntimeError("the fake namespace's server thread is not running")
        done = threading.Event()
        result: list[_T] = []

        def run() -> None:
            try:
                result.append(action())
            finally:
                done.set()

        self._calls.append(run)
        self._trigger("fake_call")
        if not done.wait(_CALL_TIMEOUT) or not result:
            raise RuntimeError("the fake namespace's server thread did not carry out a fault")
        return result[0]

    def on_fake_call(self) -> None:
        with self._lock:
            while self._calls:
                self._calls.popleft()()
            self.pump()

    def on_fake_stop(self) -> None:
        self._loop.close_listeners()
        self._timer.cancel()
        self._token_timer.cancel()
        self._loop.stop()

    def _on_timer(self) -> None:
        with self._lock:
            self.pump()

    def _on_token_timer(self) -> None:
        """Tokens expired (in real time or by a clock move): stop the links they authorized."""
        with self._lock:
            now = self._clock.now()
            for key in self._token_expiries.due(now):
                state = self._connections.get(key)
                if state is not None and state.tokens.prune(now):
                    self._revoke(state)
            self._token_timer.arm(self._token_expiries.next())

    # --- endpoints --------------------------------------------------------------------

    def _state(self, link_or_connection: Any) -> _ConnectionState:
        cached: _ConnectionState | None = getattr(link_or_connection, "fake_state", None)
        if cached is not None:
            return cached
        connection = getattr(link_or_connection, "connection", link_or_connection)
        key = getattr(connection, "fake_key", None)
        if key is None or key not in self._connections:
            key = self._next_key
            self._next_key += 1
            connection.fake_key = key
            self._connections[key] = _ConnectionState(key, connection)
        return self._connections[key]

    def on_connection_remote_open(self, event: Any) -> None:
        connection = event.connection
        with self._lock:
            if (getattr(connection, "fake_key", None) not in self._connections
                    and len(self._connections) >= self._limits.max_connections):
                connection.fake_refused = True
                self._warnings.warning("connections", "refused a connection: the namespace "
                                       "allows %d", self._limits.max_connections)
                connection.open()
                connection.condition = Condition(
                    _RESOURCE_LIMIT, f"The namespace allows at most "
                    f"{self._limits.max_connections} concurrent connections.")
                connection.close()
                return
            self._state(connection)
            if connection.state & Endpoint.LOCAL_UNINIT:
                connection.open()

    def on_handler_error(self, event: Any, error: Exception) -> None:
        """An event's handling failed: close its connection (``amqp:internal-error``);
        every other connection goes on being served. A timer or a wake-up that failed
        (``event`` None) is logged; the loop goes on."""
        connection = None if event is None else event.connection
        self._warnings.warning("handler", "%s failed (%s)",
                               "an event" if connection is not None else "a timer or wake-up",
                               failure_site(error))
        if connection is None:
            return
        with self._lock:
            self._forget_connection(connection)
            if not connection.state & Endpoint.LOCAL_CLOSED:
                connection.condition = Condition(
                    _INTERNAL_ERROR, "The fake namespace could not handle a frame of this "
                    "connection.")
                connection.close()

    def on_session_remote_open(self, event: Any) -> None:
        if event.session.state & Endpoint.LOCAL_UNINIT:
            event.session.open()

    def on_session_remote_close(self, event: Any) -> None:
        if not event.session.state & Endpoint.LOCAL_CLOSED:
            event.session.close()

    def on_connection_remote_close(self, event: Any) -> None:
        with self._lock:
            self._forget_connection(event.connection)
        if not event.connection.state & Endpoint.LOCAL_CLOSED:
            event.connection.close()

    def on_transport_closed(self, event: Any) -> None:
        with self._lock:
            if event.connection is not None:
                self._forget_connection(event.connection)
                event.connection.free()

    def _forget_connection(self, connection: Any) -> None:
        key = getattr(connection, "fake_key", None)
        if key is None:
            return
        for link_key, consumer in list(self._consumers.items()):
            if getattr(consumer.link.connection, "fake_key", None) == key:
                self._drop_consumer(link_key)
        self._session_waits = [w for w in self._session_waits
                               if getattr(w.link.connection, "fake_key", None) != key]
        self.transactions.connection_closed(key)
        self._connections.pop(key, None)

    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if not link.state & Endpoint.LOCAL_UNINIT or getattr(link.connection, "fake_refused",
                                                              False):
            return
        with self._lock:
            state = self._state(link)
            if state.links >= self._limits.max_links_per_connection:
                self._warnings.warning("links", "refused a link: its connection holds %d links",
                                  state.links)
                self._refuse(link, LinkLimitExceeded(
                    f"A connection may hold at most {self._limits.max_links_per_connection} "
                    "links."))
                return
            try:
                self._attach(link)
            except FakeServiceError as exc:
                self._refuse(link, exc)
            else:
                state.links += 1
                link.fake_counted = True
            self.pump()

    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        with self._lock:
            key = getattr(link, "fake_key", None)
            if key is not None:
                self._drop_consumer(key)
                self._session_waits = [w for w in self._session_waits if w.key != key]
            state = self._state(link)
            if getattr(link, "fake_counted", False):
                link.fake_counted = False
                state.links -= 1
            for links in state.reply_links.values():
                if link in links:
                    links.remove(link)
            state.starved.discard(link)
        if not link.state & Endpoint.LOCAL_CLOSED:
            link.close()

    def _refuse(self, link: Link, exc: FakeServiceError) -> None:
        link.open()
        link.condition = Condition(exc.condition, exc.description)
        link.close()

    def _authorize(self, link: Link, address: str) -> None:
        """A valid token on the link's connection must cover the link's address."""
        if not self._state(link).tokens.covers(scope_of(address), self._clock.now()):
            raise Unauthorized(
                f"Unauthorized access to {address!r}: no valid token for it on this connection.")

    def _open(self, link: Link, *, session_id: str | None = None,
              properties: dict[symbol, Any] | None = None) -> None:
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        if session_id is not None:
            link.source.filter.clear()
            link.source.filter.put_object({_SESSION_FILTER: session_id})
        if properties is not None:
            link.properties = properties
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = link.remote_rcv_settle_mode
        link.max_message_size = self._max_message_size
        link.open()
        if link.is_receiver:
            link.flow(_CREDIT)

    def _attach(self, link: Link) -> None:
        if link.is_receiver and link.remote_target.type == Terminus.COORDINATOR:
            state = link.fake_state = self._state(link)
            link.fake_route = _Route(state, "", "", coordinator=True)
            self._open(link)
            return
        address = normalize(link.remote_source.address if link.is_sender
                            else link.remote_target.address)
        link.fake_address = address
        state = link.fake_state = self._state(link)
        path, management = split_management(address)
        link.fake_route = self._route(state, address)
        if address.lower() == CBS_NODE:
            if link.is_sender:
                state.reply_links.setdefault(CBS_NODE, []).append(link)
            self._open(link)
            return
        if not self._store.exists(path):
            raise EntityNotFound.of(path)
        self._authorize(link, address)
        if management:
            if link.is_sender:
                state.reply_links.setdefault(path.lower(), []).append(link)
            self._open(link)
        elif link.is_receiver:
            self._open(link)
        else:
            self._attach_consumer(link, path)

    def _attach_consumer(self, link: Link, path: str) -> None:
        entity = self._store.entity(path)
        filters = _filter_map(link.remote_source)
        wants_session = _SESSION_FILTER in filters
        if entity.settings.requires_session and not wants_session:
            raise ArgumentError(
                f"It is not possible for an entity that requires sessions ({path!r}) to "
                "create a non-sessionful message receiver.")
        if wants_session and not entity.settings.requires_session:
            raise ArgumentError(
                "A sessionful message receiver cannot be created on an entity that does not "
                f"require sessions ({path!r}).")
        key = self._next_key
        self._next_key += 1
        link.fake_key = key
        if not wants_session:
            self._open(link)
            self._consumers[key] = _Consumer(link, entity, peek_lock=_peek_lock(link))
            return
        requested = filters[_SESSION_FILTER]
        now = self._clock.now()
        try:
            self._open_session(link, entity, key,
                               None if requested is None else str(requested), now)
        except NoSessionAvailable:
            if requested is not None:
                raise
            self._session_waits.append(
                _SessionWait(link, entity, key, now + _session_wait(link)))

    def _open_session(self, link: Link, entity: Entity, key: int, session_id: str | None,
                      now: float) -> None:
        """Lock the session (the next available one for ``None``) and answer the attach."""
        owner = SessionOwner(self._state(link).key, key)
        record = entity.lock_session(session_id, owner, now)
        consumer = _Consumer(link, entity, peek_lock=_peek_lock(link),
                             session_id=record.session_id, owner=owner)
        self._open(link, session_id=record.session_id,
                   properties={_LOCKED_UNTIL_UTC: _dotnet_ticks(record.locked_until)})
        self._consumers[key] = consumer

    def _serve_session_waits(self, now: float) -> float | None:
        """Answer the waiting next-available-session attaches that a session now has
        messages for, or whose time is up; the earliest deadline still waiting."""
        waiting: list[_SessionWait] = []
        for wait in self._session_waits:
            if not wait.link.state & Endpoint.REMOTE_ACTIVE:
                continue
            try:
                self._open_session(wait.link, wait.entity, wait.key, None, now)
                continue
            except NoSessionAvailable:
                pass
            if now >= wait.deadline:
                self._time_out(wait.link)
            else:
                waiting.append(wait)
        self._session_waits = waiting
        return min((w.deadline for w in waiting), default=None)

    @staticmethod
    def _time_out(link: Link) -> None:
        """Answer a waiting attach as the service does when no session came: no source,
        then a detach with ``com.microsoft:timeout``."""
        link.source.type = Terminus.UNSPECIFIED  # encoded as a null source
        link.target.copy(link.remote_target)
        link.open()
        link.condition = Condition(NoSessionAvailable.condition, (
            "The operation did not complete within the allocated time: no unlocked session "
            "with messages became available."))
        link.close()

    def _session_owner(self, connection: int, link_name: str) -> SessionOwner | None:
        """The session lock owner of the receiver link ``link_name`` on ``connection``."""
        for consumer in self._consumers.values():
            owner = consumer.owner
            if owner is not None and owner.connection == connection \
                    and consumer.link.name == link_name:
                return owner
        return None

    def _drop_consumer(self, key: int) -> None:
        consumer = self._consumers.pop(key, None)
        if consumer is not None and consumer.session_id is not None and consumer.owner:
            consumer.entity.release_session(consumer.session_id, consumer.owner,
                                            self._clock.now())

    # --- transfers ---------------------------------------------------------------------

    def on_link_flow(self, event: Any) -> None:
        with self._lock:
            key = getattr(event.link, "fake_key", None)
            consumer = self._consumers.get(key) if key is not None else None
            if consumer is not None:
                self._feed(consumer, self._clock.now())
                self._arm(consumer.entity.next_due)  # the locks it took expire
            elif event.link.is_sender:
                self._reply_credit(event.link)

    def on_delivery(self, event: Any) -> None:
        link = event.link
        with self._lock:
            if link.is_receiver:
                if not self._receive(link):
                    return
            else:
                self._settlement(link, event.delivery)
            self.pump()

    @staticmethod
    def _route(state: _ConnectionState, address: str) -> _Route:
        if address.lower() == CBS_NODE:
            return _Route(state, "", CBS_NODE, cbs=True)
        path, management = split_management(address)
        return _Route(state, path, path.lower(), management=management)

    def _receive(self, link: Link) -> bool:
        """Take every complete message waiting on a receiver link, settling each; whether
        any was taken. Called for each delivery event, it finds nothing left by the time
        the events of messages taken together with an earlier one are dispatched."""
        route: _Route | None = getattr(link, "fake_route", None)
        if route is None:
            route = self._route(self._state(link), getattr(link, "fake_address", ""))
        impl = link._impl
        limit = self._max_message_size
        oversized = self._oversized
        taken = False
        while True:
            delivery = pn_link_current(impl)
            if not delivery or not pn_delivery_readable(delivery):
                break
            if pn_delivery_partial(delivery):
                if pn_delivery_pending(delivery) > limit or _was_oversized(oversized, delivery):
                    # too large already: note it on the delivery, drop its bytes as they come
                    oversized.add(delivery)
                    _wrap_delivery(delivery).fake_oversized = True
                    self._received.receive(impl, pn_delivery_pending(delivery))
                break
            if pn_delivery_aborted(delivery):  # an aborted transfer is discarded
                oversized.discard(delivery)
                pn_link_advance(impl)
                pn_delivery_settle(delivery)
                continue
            data = self._received.receive(impl, pn_delivery_pending(delivery))
            pn_link_advance(impl)
            taken = True
            if len(data) > limit or (oversized and _was_oversized(oversized, delivery)):
                oversized.discard(delivery)
                self._reject(delivery, Condition(_SIZE_EXCEEDED, (
                    f"The received message exceeds the limit of {limit} bytes on this link "
                    "(max-message-size); it was not stored.")))
                pn_delivery_settle(delivery)
                continue
            self._incoming(route, delivery, data)
        if taken and pn_link_credit(impl) < _CREDIT // 2:
            self._top_up(route, link)
        return taken

    def _top_up(self, route: _Route, link: Link) -> None:
        """Give a request link its credit back, unless its node's replies are waiting
        for reply-link credit beyond the limit: then it waits too (in ``starved``)."""
        state = route.state
        if route.cbs or route.management:
            # A sender's credit goes below 0 by the deliveries queued without credit.
            waiting = sum(max(0, -pn_link_credit(r._impl))
                          for r in state.reply_links.get(route.node, ()))
            if waiting >= self._limits.max_waiting_replies:
                if link not in state.starved:
                    state.starved.add(link)
                    self._warnings.warning(
                        "starved", "%d replies for %s wait for reply-link credit; its request "
                        "link gets no more credit until they leave", waiting, route.node)
                return
        state.starved.discard(link)
        impl = link._impl
        pn_link_flow(impl, _CREDIT - pn_link_credit(impl))

    def _reply_credit(self, link: Link) -> None:
        """A reply link got credit: top up the request links starved for it."""
        state: _ConnectionState | None = getattr(link, "fake_state", None)
        if state is None or not state.starved:
            return
        for starved in list(state.starved):
            route: _Route | None = getattr(starved, "fake_route", None)
            if route is None or not starved.state & Endpoint.LOCAL_ACTIVE:
                state.starved.discard(starved)
            else:
                self._top_up(route, starved)

    def _incoming(self, route: _Route, delivery: Any, data: bytes) -> None:
        """Apply one message sent to the fake (or stage it on its transaction) and settle
        its delivery with the outcome."""
        txn = transactional_state(delivery)
        txn_id = None if txn is None else txn[0]
        declared = None
        try:
            if route.coordinator:
                declared = self.transactions.control(data, route.state.key, self._clock.now())
            elif route.cbs:
                self._put_token(route, data)
            elif route.management:
                self._management_request(route, data, txn_id)
            else:
                self._enqueue(route, data, txn_id)
        except FakeServiceError as exc:
            self._reject(delivery, Condition(exc.condition, exc.description))
        except ProtocolError as exc:
            self._reject(delivery, Condition("amqp:decode-error", str(exc)))
        except Exception as exc:  # confined to this delivery: the server goes on
            self._warnings.warning("delivery", "a message to %s failed (%s); rejected",
                                   route.node or route.path, failure_site(exc))
            self._reject(delivery, Condition(
                _INTERNAL_ERROR, f"The fake namespace could not handle the message "
                f"({type(exc).__name__})."))
        else:
            if declared is not None:  # declared (0x33): [txn-id]
                wrapped = _wrap_delivery(delivery)
                wrapped.local.data = [declared]
                wrapped.update(DECLARED)
            elif txn_id is not None:
                set_transactional_state(delivery, txn_id, PN_ACCEPTED)
            else:
                pn_delivery_update(delivery, PN_ACCEPTED)
        pn_delivery_settle(delivery)

    @staticmethod
    def _reject(delivery: Any, condition: Condition) -> None:
        """Reject with an error that carries an info map, as the service's do (a tracking
        id): the Python SDK's sender reads the error's third field and stalls without it."""
        wrapped = _wrap_delivery(delivery)
        wrapped.local.condition = Condition(condition.name, condition.description,
                                            {_TRACKING_ID: str(uuid.uuid4())})
        wrapped.update(Delivery.REJECTED)

    def _enqueue(self, route: _Route, data: bytes, txn_id: bytes | None) -> None:
        now = self._clock.now()
        path, store = route.path, self._store
        messages = _split_batch(SbMessage.from_bytes(data))
        for message in messages:  # all checked before any is kept
            check_storable(message)
        if txn_id is None:
            for message in messages:
                store.send(path, message, now)
            return
        transaction = self.transactions.transaction(txn_id, route.state.key, now)
        store.check_send(path)

        def send(at: float) -> None:
            for message in messages:
                store.send(path, message, at)

        transaction.stage(Staged(send))

    def _reply(self, route: _Route, reply_to: Any, reply: Reply | Message) -> None:
        state, node = route.state, route.node
        if not isinstance(reply_to, str):  # a list, a map, a number: no address
            reply_to = None
        chosen = state.reply_cache.get((node, reply_to))
        if chosen is None or not pn_link_state(chosen._impl) & Endpoint.LOCAL_ACTIVE:
            chosen = self._reply_link(state, node, reply_to)
            if chosen is None:
                self._warnings.warning("no-reply-link", "no reply link for %s on this "
                                       "connection; reply dropped", node)
                return
            if len(state.reply_cache) >= self._limits.reply_cache_size:
                state.reply_cache.clear()
            state.reply_cache[(node, reply_to)] = chosen
        try:
            encoded = reply.encode()
        except Exception as exc:  # e.g. a request's message-id that is no correlation-id
            self._warnings.warning("reply-encoding", "a reply for %s could not be encoded "
                                   "(%s); reply dropped", node, failure_site(exc))
            return
        state.reply_tag += 1
        impl = chosen._impl
        delivery = pn_delivery(impl, state.reply_tag.to_bytes(8, "big"))
        pn_link_send(impl, encoded)
        pn_link_advance(impl)
        pn_delivery_settle(delivery)

    def _reply_link(self, state: _ConnectionState, node: str,
                    reply_to: str | None) -> Link | None:
        """The node's active sender link whose target is ``reply_to``, else any active one."""
        links = state.reply_links.get(node, [])
        target = normalize(reply_to)
        chosen = next((r for r in links if normalize(r.remote_target.address) == target
                       and r.state & Endpoint.LOCAL_ACTIVE), None)
        if chosen is None:
            chosen = next((r for r in links if r.state & Endpoint.LOCAL_ACTIVE), None)
        return chosen

    def _put_token(self, route: _Route, data: bytes) -> None:
        request = parse_request(data)
        properties = request.application_properties
        props = properties if isinstance(properties, dict) else {}
        token, audience = request.body, props.get("name")
        state = route.state
        status, description = 202, "Accepted"
        if self._accept_any_token:
            state.tokens.any_token = True
        else:
            try:
                if not isinstance(token, str) or not isinstance(audience, str):
                    raise SasTokenError("put-token needs a string token and a name (audience)")
                now = self._clock.now()
                expiry = verify_sas_token(token, self._keys, audience, now)
                state.tokens.put(audience_scope(audience, self._audience_hosts), expiry, now)
                self._token_expiries.add(expiry, state.key)
                self._token_timer.arm(expiry)
            except SasTokenError as exc:
                status, description = 401, str(exc)
            except FakeServiceError as exc:
                status, description = exc.status_code, exc.description
        reply = Reply(request.message_id, status, description=description,
                      status_key="status-code")
        self._reply(route, request.reply_to, reply)

    def _management_request(self, route: _Route, data: bytes, txn_id: bytes | None) -> None:
        request = parse_request(data)
        path = route.path
        plan = self._faults.plan(path, request.operation)
        if plan.server_busy:
            reply = Reply(request.message_id, 503,
                          description="The server is busy (injected fault).",
                          error_condition=_SERVER_BUSY)
        else:
            handled = self.management.handle(path, request, route.state.key, self._clock.now(),
                                             txn_id)
            if handled is None:
                return
            reply = handled
        if plan is NO_FAULTS:
            self._reply(route, request.reply_to, reply)
        else:
            self._planned_reply(route, request, reply, plan)

    def _planned_reply(self, route: _Route, request: Request, planned: Reply,
                       plan: ReplyPlan) -> None:
        """Send ``planned`` as the fault plan says: dropped, changed, repeated, late or held."""
        if plan.drop:
            return
        reply: Reply | Message = planned
        if plan.malformed is not None:
            reply = plan.malformed(request.message_id)
        if plan.wrong_correlation_id:
            if isinstance(reply, Reply):
                reply = dataclasses.replace(reply, correlation_id=uuid.uuid4())
            else:
                reply.correlation_id = uuid.uuid4()
        reply_to = request.reply_to

        def send() -> None:
            for _ in range(plan.copies):
                self._reply(route, reply_to, reply)

        if plan.paused_by:
            self._held.append((plan, send))
        elif plan.delay > 0:
            self._loop.schedule(plan.delay, lambda: self._locked(send))
        else:
            send()

    # --- faults (the FaultTarget protocol; called from other threads) ----------------------

    def release_held(self) -> None:
        """Send the replies whose pauses have all been removed."""
        self._call(self._release_held)

    def _release_held(self) -> None:
        ready = [send for plan, send in self._held if not plan.held()]
        self._held = [(plan, send) for plan, send in self._held if plan.held()]
        for send in ready:
            send()

    def detach_management_link(self, entity: str) -> int:
        """Detach ``entity``'s management links on every connection."""
        wanted = entity_key(entity)

        def detach() -> int:
            links = [link for link in self._links() if _is_management_of(link, wanted)]
            for link in links:
                self._force_close_link(link, "amqp:link:detach-forced",
                                       "The management link was detached (injected fault).")
            return len(links)

        return self._call(detach)

    def detach_deleted(self, paths: list[str]) -> int:
        """Detach every link to the deleted entity ``paths`` (their ``$management`` nodes
        too) with ``amqp:not-found``, as the service does when an entity is deleted."""
        deleted = {entity_key(path) for path in paths}

        def detach() -> int:
            links = [link for link in self._links()
                     if entity_key(split_management(getattr(link, "fake_address", ""))[0])
                     in deleted]
            for link in links:
                self._force_close_link(link, "amqp:not-found",
                                       f"The messaging entity {link.fake_address!r} was deleted.")
            return len(links)

        return self._call(detach)

    def close_connections(self) -> int:
        """Close every client connection with ``amqp:connection:forced``."""

        def close() -> int:
            states = list(self._connections.values())
            for state in states:
                connection = state.connection
                self._forget_connection(connection)
                if not connection.state & Endpoint.LOCAL_CLOSED:
                    connection.condition = Condition(
                        "amqp:connection:forced", "The connection was closed (injected fault).")
                    connection.close()
            return len(states)

        return self._call(close)

    def expire_tokens(self) -> int:
        """Forget every token and detach the entity links they authorised."""

        def expire() -> int:
            revoked = 0
            for state in self._connections.values():
                state.tokens.clear()
                revoked += self._revoke(state)
            return revoked

        return self._call(expire)

    def _links(self, states: list[_ConnectionState] | None = None) -> list[Link]:
        found: list[Link] = []
        for state in self._connections.values() if states is None else states:
            link = state.connection.link_head(Endpoint.LOCAL_ACTIVE)
            while link is not None:
                found.append(link)
                link = link.next(Endpoint.LOCAL_ACTIVE)
        return found

    def _revoke(self, state: _ConnectionState) -> int:
        """Detach the connection's entity links that no valid token of it covers any more
        (as the service does when a token expires: ``amqp:unauthorized-access``)."""
        revoked = 0
        now = self._clock.now()
        for link in self._links([state]):
            address: str = getattr(link, "fake_address", "")
            if not address or address.lower() == CBS_NODE:
                continue
            if not state.tokens.covers(scope_of(address), now):
                self._force_close_link(link, _UNAUTHORIZED,
                                       f"The token for {address!r} has expired.")
                revoked += 1
        return revoked

    def _force_close_link(self, link: Link, condition: str, description: str) -> None:
        key = getattr(link, "fake_key", None)
        if key is not None:
            self._drop_consumer(key)
        for links in self._state(link).reply_links.values():
            if link in links:
                links.remove(link)
        link.condition = Condition(condition, description)
        link.close()

    # --- deliveries to receivers -------------------------------------------------------------

    def _send(self, consumer: _Consumer, stored: StoredMessage) -> None:
        link = consumer.link
        token = stored.lock_token if consumer.peek_lock else None
        tag = (token or uuid.uuid4()).bytes_le
        # proton's stubs say str, but a binary tag is what Service Bus sends (lock token).
        delivery = link.delivery(cast(str, tag))
        link.send(stored.wire())
        link.advance()
        if token is None:
            delivery.settle()
        else:
            delivery.fake_token = token

    def _feed(self, consumer: _Consumer, now: float) -> None:
        link = consumer.link
        if not link.state & Endpoint.LOCAL_ACTIVE:
            return
        if consumer.session_id is not None:
            record = consumer.entity.sessions.get(consumer.session_id)
            if record is None or record.owner != consumer.owner or not record.held(now):
                self._consumers.pop(getattr(link, "fake_key", 0), None)
                link.condition = Condition("com.microsoft:session-lock-lost",
                                           "The session lock has expired.")
                link.close()
                return
        while link.credit > 0:
            stored = consumer.entity.take(now, consumer.session_id, peek_lock=consumer.peek_lock)
            if stored is None:
                break
            self._send(consumer, stored)
        if link.drain_mode and link.credit > 0:
            link.drained()

    def _settlement(self, link: Link, delivery: Delivery) -> None:
        key = getattr(link, "fake_key", None)
        consumer = self._consumers.get(key) if key is not None else None
        if consumer is None or delivery.remote_state is None or delivery.settled:
            return
        token: uuid.UUID | None = getattr(delivery, "fake_token", None)
        now = self._clock.now()
        entity = consumer.entity
        txn = transactional_state(delivery._impl)
        outcome = Outcome.of_delivery(delivery) if txn is None else Outcome.of_described(txn[1])
        if outcome is None and txn is None:
            return
        try:
            if token is None:
                raise MessageLockLost("The lock supplied is invalid.")
            if txn is None:
                assert outcome is not None
                outcome.apply(entity, token, now)
                delivery.update(outcome.code)
            else:
                code = self._settle_in_transaction(consumer, token, outcome, txn[0], now)
                # Staged, and left unsettled: after a rollback the receiver still holds
                # the lock and may settle the message again.
                set_transactional_state(delivery._impl, txn[0], code)
                return
        except FakeServiceError as exc:
            delivery.local.condition = Condition(exc.condition, exc.description)
            delivery.update(Delivery.REJECTED)
        delivery.settle()

    def _settle_in_transaction(self, consumer: _Consumer, token: uuid.UUID,
                               outcome: Outcome | None, txn_id: bytes, now: float) -> int:
        """Stage a settlement on its transaction (its lock must be valid now and at the
        commit); the outcome's code."""
        if outcome is None:
            raise ArgumentError("A transactional settlement needs a known outcome.")
        transaction = self.transactions.transaction(txn_id, self._state(consumer.link).key, now)
        entity = consumer.entity

        def check(at: float) -> None:
            entity.locked(token, at)

        check(now)
        transaction.stage(Staged(lambda at: outcome.apply(entity, token, at), check, (token,)))
        return outcome.code

    # --- time ----------------------------------------------------------------------------------

    def pump(self) -> None:
        """Apply what is due, feed receivers, and set the timer for the next deadline
        (after feeding: the locks the receivers just took are deadlines too)."""
        now = self._clock.now()
        self._store.process_due(now)
        txn_due = self.transactions.expire(now)
        wait_due = self._serve_session_waits(now) if self._session_waits else None
        for consumer in list(self._consumers.values()):
            self._feed(consumer, now)
        due = min([self._store.next_due()] + [d for d in (txn_due, wait_due) if d is not None])
        self._arm(due)

    def _arm(self, due: float) -> None:
        """Wake up at ``due`` (fake-clock seconds; ``inf``: nothing is due)."""
        if due != math.inf:
            self._timer.arm(due)

    def _locked(self, action: Callable[[], None]) -> None:
        """Run ``action`` under the namespace lock (a delayed reply's timer)."""
        with self._lock:
            action()


def _peek_lock(link: Link) -> bool:
    """Whether a receiver settles what it gets (peek-lock) or takes it pre-settled."""
    return bool(link.remote_snd_settle_mode != Link.SND_SETTLED)


def _is_management_of(link: Link, path: str) -> bool:
    address: str = getattr(link, "fake_address", "")
    found, management = split_management(address)
    return management and entity_key(found) == path


def _was_oversized(oversized: set[Any], delivery: Any) -> bool:
    """Whether bytes of ``delivery`` were dropped for its size (the set is only a hint)."""
    if delivery not in oversized:
        return False
    if getattr(_wrap_delivery(delivery), "fake_oversized", False):
        return True
    oversized.discard(delivery)  # a stale pointer, reused by a new delivery
    return False


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

