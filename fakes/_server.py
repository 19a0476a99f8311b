"""The AMQP 1.0 side of the fake namespace: one proton handler on the server thread.

The thread runs :class:`sbmgmt._loop.EngineLoop` (the client's own selector loop over
proton's protocol engine, with a listening socket) rather than proton's ``Container``,
whose per-event machinery cost as much as answering the request. It routes each link by
address: ``$cbs`` (put-token), ``<entity>/$management`` (management requests, answered
by :mod:`fakes._management`), and entities (senders enqueue, receivers get deliveries).
Every event runs under the namespace lock, and after each one :meth:`Server.pump`
applies what is due and feeds receivers with credit.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

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
    pn_link_recv,
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
    int32,
    symbol,
)

from sbmgmt import _protocol
from sbmgmt._loop import EngineLoop, Task
from sbmgmt.auth import SasTokenError, audience_for, verify_sas_token
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message as SbMessage

from ._addresses import CBS_NODE, entity_key, normalize, split_management
from ._clock import FakeClock
from ._entity import Entity, SessionOwner, StoredMessage
from ._errors import ArgumentError, EntityNotFound, FakeServiceError, MessageLockLost, Unauthorized
from ._faults import NO_FAULTS, Faults, ReplyPlan
from ._management import ManagementNode, Reply, RequestMessage
from ._store import Store

__all__ = ["Server"]

_LOG = logging.getLogger("fakes.server")
_CREDIT = 500
_SESSION_FILTER = symbol("com.microsoft:session-filter")
_LOCKED_UNTIL_UTC = symbol("com.microsoft:locked-until-utc")
_DEAD_LETTER = "com.microsoft:dead-letter"
_DOTNET_EPOCH_TICKS = 621355968000000000
_SECTION_CODES = frozenset(range(0x70, 0x79))
_SERVER_BUSY = "com.microsoft:server-busy"
_UNAUTHORIZED = "amqp:unauthorized-access"
_CALL_TIMEOUT = 10.0
_T = TypeVar("_T")
# proton's wrap function (untyped): a C delivery pointer in, its wrapper out.
_wrap_delivery: Any = Delivery.wrap


@dataclass
class _ConnectionState:
    """What one client connection holds: its tokens and its reply links."""

    key: int
    connection: Any
    tokens: list[str] = field(default_factory=list)
    any_token: bool = False
    reply_links: dict[str, list[Link]] = field(default_factory=dict)
    #: (node, reply-to as sent) -> the link last chosen for it (the hot path's shortcut).
    reply_cache: dict[tuple[str, str | None], Link] = field(default_factory=dict)
    reply_tag: int = 0


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


@dataclass
class _Consumer:
    """A receiver's link: the server sends the entity's messages on it."""

    link: Link
    entity: Entity
    peek_lock: bool
    session_id: str | None = None
    owner: SessionOwner | None = None


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
    if not all(len(p) > 3 and p[0] == 0 and p[1] == 0x53 and p[2] in _SECTION_CODES
               for p in parts):
        return [message]
    try:
        return [SbMessage.from_bytes(bytes(p)) for p in parts]
    except ProtocolError:
        return [message]


class Server:
    """The proton handler and its engine loop, run on one background thread."""

    def __init__(self, store: Store, clock: FakeClock, lock: threading.RLock, *, host: str,
                 port: int, keys: dict[str, str], accept_any_token: bool,
                 faults: Faults, relaxed_session_locks: bool = False) -> None:
        self._faults = faults
        self._held: list[tuple[ReplyPlan, Callable[[], None]]] = []
        self._calls: deque[Callable[[], None]] = deque()
        self._store = store
        self._clock = clock
        self._lock = lock
        self._host = host
        self._keys = keys
        self._accept_any_token = accept_any_token
        self.management = ManagementNode(store, self._session_owner,
                                         relaxed_session_locks=relaxed_session_locks)
        self._connections: dict[int, _ConnectionState] = {}
        self._consumers: dict[int, _Consumer] = {}
        self._next_key = 1
        self._timer: Task | None = None
        self._timer_due: float | None = None
        self._loop = EngineLoop(self, container_id=f"fake-servicebus-{uuid.uuid4()}")
        self._signals: set[str] = set()
        self._signals_lock = threading.Lock()
        self._running = True
        self.port: int = self._loop.listen(host, port)  # port 0 asks the OS for a free one
        self._thread = threading.Thread(target=self._run, name="fake-servicebus", daemon=True)
        self._clock.on_advance(self._clock_advanced)

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
            self._call(self._revoke_expired_tokens)

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
        if self._timer is not None:
            self._timer.cancel()
        self._loop.stop()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
            self._timer_due = None
            self.pump()

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
        with self._lock:
            self._state(event.connection)
            if event.connection.state & Endpoint.LOCAL_UNINIT:
                event.connection.open()

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
        self._connections.pop(key, None)

    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if not link.state & Endpoint.LOCAL_UNINIT:
            return
        with self._lock:
            try:
                self._attach(link)
            except FakeServiceError as exc:
                self._refuse(link, exc)
            self.pump()

    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        with self._lock:
            key = getattr(link, "fake_key", None)
            if key is not None:
                self._drop_consumer(key)
            state = self._state(link)
            for links in state.reply_links.values():
                if link in links:
                    links.remove(link)
        if not link.state & Endpoint.LOCAL_CLOSED:
            link.close()

    def _refuse(self, link: Link, exc: FakeServiceError) -> None:
        link.open()
        link.condition = Condition(exc.condition, exc.description)
        link.close()

    def _authorized(self, state: _ConnectionState, path: str) -> bool:
        if state.any_token:
            return True
        audience = audience_for(self._host, path)
        now = self._clock.now()
        for token in state.tokens:
            try:
                verify_sas_token(token, self._keys, audience, now)
            except SasTokenError:
                continue
            return True
        return False

    def _authorize(self, link: Link, path: str) -> None:
        if not self._authorized(self._state(link), path):
            raise Unauthorized(
                f"Unauthorized access to {path!r}: no valid token on this connection.")

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
        link.open()
        if link.is_receiver:
            link.flow(_CREDIT)

    def _attach(self, link: Link) -> None:
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
            raise EntityNotFound(f"The messaging entity {path!r} could not be found.")
        self._authorize(link, path)
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
        consumer = _Consumer(link, entity,
                             peek_lock=link.remote_snd_settle_mode != Link.SND_SETTLED)
        if wants_session:
            requested = filters[_SESSION_FILTER]
            owner = SessionOwner(self._state(link).key, key)
            record = entity.lock_session(None if requested is None else str(requested),
                                         owner, self._clock.now())
            consumer.session_id, consumer.owner = record.session_id, owner
            self._open(link, session_id=record.session_id,
                       properties={_LOCKED_UNTIL_UTC: _dotnet_ticks(record.locked_until)})
        else:
            self._open(link)
        self._consumers[key] = consumer

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
        taken = False
        while True:
            delivery = pn_link_current(impl)
            if not delivery or pn_delivery_partial(delivery) or not pn_delivery_readable(delivery):
                break
            if pn_delivery_aborted(delivery):  # an aborted transfer is discarded
                pn_link_advance(impl)
                pn_delivery_settle(delivery)
                continue
            size, data = pn_link_recv(impl, pn_delivery_pending(delivery))
            pn_link_advance(impl)
            taken = True
            self._incoming(route, delivery, bytes(data) if size >= 0 else b"")
        credit = pn_link_credit(impl)
        if taken and credit < _CREDIT // 2:
            link.flow(_CREDIT - credit)
        return taken

    def _incoming(self, route: _Route, delivery: Any, data: bytes) -> None:
        """Apply one message sent to the fake and settle its delivery with the outcome."""
        try:
            if route.cbs:
                self._put_token(route, data)
            elif route.management:
                self._management_request(route, data)
            else:
                self._enqueue(route.path, data)
        except FakeServiceError as exc:
            self._reject(delivery, Condition(exc.condition, exc.description))
        except ProtocolError as exc:
            self._reject(delivery, Condition("amqp:decode-error", str(exc)))
        else:
            pn_delivery_update(delivery, PN_ACCEPTED)
        pn_delivery_settle(delivery)

    @staticmethod
    def _reject(delivery: Any, condition: Condition) -> None:
        wrapped = _wrap_delivery(delivery)
        wrapped.local.condition = condition
        wrapped.update(Delivery.REJECTED)

    def _enqueue(self, path: str, data: bytes) -> None:
        now = self._clock.now()
        for message in _split_batch(SbMessage.from_bytes(data)):
            self._store.send(path, message, now)

    def _reply(self, route: _Route, reply_to: str | None, reply: Reply | Message) -> None:
        state, node = route.state, route.node
        chosen = state.reply_cache.get((node, reply_to))
        if chosen is None or not pn_link_state(chosen._impl) & Endpoint.LOCAL_ACTIVE:
            chosen = self._reply_link(state, node, reply_to)
            if chosen is None:
                _LOG.warning("no reply link for %s on this connection; reply dropped", node)
                return
            state.reply_cache[(node, reply_to)] = chosen
        try:
            encoded = reply.encode()
        except Exception:  # an injected reply proton cannot encode must not stop the server
            _LOG.exception("a reply for %s could not be encoded; reply dropped", node)
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
        request = RequestMessage.decode(data)
        props: dict[Any, Any] = request.properties or {}
        token, audience = request.body, props.get("name")
        state = route.state
        status, description = 202, "Accepted"
        if self._accept_any_token:
            state.any_token = True
        else:
            try:
                if not isinstance(token, str) or not isinstance(audience, str):
                    raise SasTokenError("put-token needs a string token and a name (audience)")
                verify_sas_token(token, self._keys, audience, self._clock.now())
                state.tokens.append(token)
            except SasTokenError as exc:
                status, description = 401, str(exc)
        reply = Message(correlation_id=request.id, properties={
            "status-code": int32(status), "status-description": description})
        self._reply(route, request.reply_to, reply)

    def _management_request(self, route: _Route, data: bytes) -> None:
        request = RequestMessage.decode(data)
        props = request.properties
        operation = props.get(_protocol.OPERATION) if isinstance(props, dict) else None
        path = route.path
        plan = self._faults.plan(path, operation if isinstance(operation, str) else None)
        if plan.server_busy:
            reply = Reply(request.id, 503, description="The server is busy (injected fault).",
                          error_condition=_SERVER_BUSY)
        else:
            reply = self.management.handle(path, request, route.state.key, self._clock.now())
        if plan is NO_FAULTS:
            self._reply(route, request.reply_to, reply)
        else:
            self._planned_reply(route, request, reply, plan)

    def _planned_reply(self, route: _Route, request: RequestMessage, planned: Reply,
                       plan: ReplyPlan) -> None:
        """Send ``planned`` as the fault plan says: dropped, changed, repeated, late or held."""
        if plan.drop:
            return
        reply: Reply | Message = planned
        if plan.malformed is not None:
            reply = plan.malformed(request.id)
        if plan.wrong_correlation_id:
            reply = reply.message() if isinstance(reply, Reply) else reply
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
            for state in self._connections.values():
                state.tokens.clear()
                state.any_token = False
            return self._revoke_expired_tokens()

        return self._call(expire)

    def _links(self) -> list[Link]:
        found: list[Link] = []
        for state in self._connections.values():
            link = state.connection.link_head(Endpoint.LOCAL_ACTIVE)
            while link is not None:
                found.append(link)
                link = link.next(Endpoint.LOCAL_ACTIVE)
        return found

    def _revoke_expired_tokens(self) -> int:
        """Detach entity links whose connection no longer holds a valid token for them."""
        revoked = 0
        for link in self._links():
            address: str = getattr(link, "fake_address", "")
            if not address or address.lower() == CBS_NODE:
                continue
            path, _management = split_management(address)
            if not self._authorized(self._state(link), path):
                self._force_close_link(link, _UNAUTHORIZED,
                                       f"The token for {path!r} has expired.")
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
        state = delivery.remote_state
        entity = consumer.entity
        try:
            if token is None:
                raise MessageLockLost("The lock supplied is invalid.")
            if state == Delivery.ACCEPTED:
                entity.complete(token, now)
            elif state == Delivery.REJECTED:
                condition = delivery.remote.condition
                raw_info = condition.info if condition is not None else None
                info = raw_info if isinstance(raw_info, dict) else {}
                entity.dead_letter(token, now, _text(info.get("DeadLetterReason")),
                                   _text(info.get("DeadLetterErrorDescription")))
            elif state == Delivery.MODIFIED and delivery.remote.undeliverable:
                entity.defer(token, now)
            elif state in (Delivery.RELEASED, Delivery.MODIFIED):
                entity.abandon(token, now)
            else:
                return
            delivery.update(state)
        except FakeServiceError as exc:
            delivery.local.condition = Condition(exc.condition, exc.description)
            delivery.update(Delivery.REJECTED)
        delivery.settle()

    # --- time ----------------------------------------------------------------------------------

    def pump(self) -> None:
        """Apply what is due, feed receivers, and set the timer for the next deadline."""
        now = self._clock.now()
        due = self._store.process_due(now)
        for consumer in list(self._consumers.values()):
            self._feed(consumer, now)
        if due is not None and (self._timer_due is None or due < self._timer_due):
            if self._timer is not None:
                self._timer.cancel()
            self._timer_due = due
            self._timer = self._loop.schedule(max(0.0, due - now) + 0.001, self._on_timer)

    def _locked(self, action: Callable[[], None]) -> None:
        """Run ``action`` under the namespace lock (a delayed reply's timer)."""
        with self._lock:
            action()


def _is_management_of(link: Link, path: str) -> bool:
    address: str = getattr(link, "fake_address", "")
    found, management = split_management(address)
    return management and entity_key(found) == path


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

