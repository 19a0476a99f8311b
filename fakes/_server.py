"""The AMQP 1.0 side of the fake namespace: one proton handler on the server thread.

The thread runs :class:`sbmgmt.transport.server_loop.ServerLoop` (the client's own selector loop
over proton's protocol engine, with a listening socket) rather than proton's ``Container``,
whose per-event machinery cost as much as answering the request. :class:`Server` owns the
thread, the loop and the event handlers, which only dispatch, to the parts that each own
one job:

- :mod:`fakes._links`: the records of connections and links (nothing is stored on
  proton's objects), the connection and link limits;
- :mod:`fakes._routing`: each link's node, fixed at attach (``$cbs``,
  ``<entity>/$management``, a coordinator target, an entity: :mod:`fakes._nodes`), the
  transfers clients send and their settlement, the request links' credit;
- :mod:`fakes._replies`: the ``$cbs`` and ``$management`` replies and their fault plans;
- :mod:`fakes._consumers`: the entities' receivers, their settlements and the
  next-available-session waits;
- :mod:`fakes._detach`: links and connections ended from the server's side (faults,
  expired tokens, deleted entities) and connections that went away.

Every event runs under the namespace lock. :meth:`Server.pump` applies what is due and
feeds receivers with credit: after a link's attach, a wake-up, a call from another thread
or a timer at once, and once after each run of the queued events for all the transfers
and settlements that run dispatched (:meth:`Server.on_events_dispatched`; the loop
dispatches every event a read of the sockets made, so a batch of a hundred transfers
costs one pump, not a hundred), before the loop writes or waits again. Management requests go to a
:class:`~fakes._nodes.management.ManagementHandler` (the namespace's
:class:`~fakes._management.ManagementNode`, or ``sbmgmt.testing``'s mock), and connections
may also come over in-memory streams (:meth:`Server.serve_stream`) instead of the
listening socket.

Links are authorized by the CBS grants of their connection (:mod:`fakes._auth`): a grant
covers a link's address or not. Two deadline timers (:mod:`fakes._timers`) keep the
fake's clock: one for the store's next deadline (locks, schedules, TTL, session locks,
session waits), armed after every pump and every flow that took messages, whose firing
pumps; one for the earliest token expiry, whose firing detaches the links no valid grant
covers any more.

One client cannot stop it (:mod:`fakes._limits` holds the bounds): SASL frames are
screened (:mod:`fakes._screen`) before proton reads them, and delivery-ids that arrive out
of order or repeated are renumbered for proton and given back in its dispositions
(:mod:`fakes._sequencing`: the Python SDK's threads send them so, and the service takes
them); a request that fails in an unexpected way is rejected (``amqp:internal-error``) on
its own; an event whose handling fails closes only its connection
(:meth:`Server.on_handler_error`); the loop closes connections that do not open in time or
fall silent; while a node's replies wait for reply-link credit the client does not give, its
request links get no more credit; repeated warnings are throttled.

Other threads reach the server thread through :meth:`Server._call` (faults, clock moves,
:meth:`Server.serve_stream`, the links of deleted entities): :mod:`fakes._server_calls`
queues each call and hands its result or failure, in its own words, to its own caller; a
wake-up runs the queued calls, then the pump, and a stop asked for in the same wake-up
happens whatever they raised.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from typing import TypeVar

from cproton import pn_event_delivery
from proton import Condition, Endpoint, Transport

from sbmgmt.transport.server_loop import ServerLoop
from sbmgmt.transport.sockets import Stream

from ._addresses import entity_key, normalize
from ._auth import Expiries
from ._clock import FakeClock
from ._consumers import Consumer, Consumers
from ._coordinator import Coordinator
from ._detach import Detacher
from ._errors import FakeServiceError, LinkLimitExceeded
from ._faults import Faults
from ._idle import IdleWatch
from ._limits import Limits, ThrottledLog, failure_site
from ._links import Records, refuse_link
from ._log import FakeLog, LoggedManagement
from ._loopback import audience_hosts, listen_addresses
from ._management import ManagementNode
from ._nodes.cbs import TokenPolicy
from ._nodes.management import ManagementHandler
from ._ports import listen_everywhere
from ._proton import ConnectionHandle, EventHandle, LinkHandle
from ._replies import Replies
from ._routing import Router
from ._sequencing import ConnectionScreen
from ._server_calls import CallQueue, QueuedCall, ServerStopped
from ._store import Store
from ._timers import DeadlineTimer

__all__ = ["Server"]

_LOG = logging.getLogger("fakes.server")
_UNAUTHORIZED = "amqp:unauthorized-access"
_INTERNAL_ERROR = "amqp:internal-error"
_RESOURCE_LIMIT = "amqp:resource-limit-exceeded"
_CALL_TIMEOUT = 10.0
_T = TypeVar("_T")


class Server:
    """The proton handler and its engine loop, run on one background thread."""

    def __init__(self, store: Store, clock: FakeClock, lock: threading.RLock, *, host: str,
                 port: int | None, keys: dict[str, str], accept_any_token: bool,
                 faults: Faults, max_message_size: int, limits: Limits,
                 management: ManagementHandler | None = None,
                 relaxed_session_locks: bool = False, transactions: bool = True,
                 network_latency: Callable[[], float] | None = None,
                 log: FakeLog | None = None,
                 commit: Callable[[], None] | None = None) -> None:
        self._faults = faults
        #: A data directory's commit (fakes._data_dir), run after each run of events.
        self._commit = commit
        #: What the server tells of what it does (silent unless made with a level), and
        #: the counts ``/metrics`` reads.
        self.log = FakeLog() if log is None else log
        self._network_latency = network_latency
        self._limits = limits
        self._warnings = ThrottledLog(_LOG, limits.warning_interval)
        self._calls = CallQueue()
        self._store = store
        self._clock = clock
        self._lock = lock
        self.transactions = Coordinator(transactions=transactions, tier=store.tier)
        self.records = Records()
        self.consumers = Consumers(store, clock, self.transactions, max_message_size,
                                   log=self.log)
        self.management: ManagementHandler = (
            ManagementNode(store, self.consumers.owner_of, self.transactions,
                           relaxed_session_locks=relaxed_session_locks)
            if management is None else management)
        container = f"fake-servicebus-{uuid.uuid4()}"
        self._loop = ServerLoop(self, container_id=container)
        self._detacher = Detacher(self.records, self.consumers, self.transactions, clock)
        #: The service's idle timers for entity links and connections without links.
        self._idle = IdleWatch(self._loop.schedule, self.records, self._detacher, limits, lock,
                               container)
        self._replies = Replies(limits, self._warnings, self._later)
        tokens = TokenPolicy(keys, accept_any_token, audience_hosts(host), self._token_kept,
                             self.log.put_token)
        self.router = Router(self.records, self.consumers, store, clock, self.transactions,
                             LoggedManagement(self.management, self.log), faults,
                             self._replies, tokens, limits, self._warnings, max_message_size,
                             log=self.log)
        # Store deadlines (locks, schedules, TTL) and token expiries, on the fake's clock.
        self._timer = DeadlineTimer(self._loop, clock, self._on_timer)
        self._token_expiries = Expiries()
        self._token_timer = DeadlineTimer(self._loop, clock, self._on_token_timer)
        #: A transfer or settlement was handled since the last pump (on_events_dispatched).
        self._pump_owed = False
        self._signals: set[str] = set()
        self._signals_lock = threading.Lock()
        self._running = True
        # port 0 asks the OS for a free one; None: no listener (in-memory streams only)
        self.port: int = 0 if port is None else self._listen(listen_addresses(host), port)
        self._thread = threading.Thread(target=self._run, name="fake-servicebus", daemon=True)
        self._clock.on_advance(self._clock_advanced)

    def _listen(self, addresses: list[str], port: int) -> int:
        """Listen on every address on one port (the first picks it when ``port`` is 0)."""
        def listen(address: str, chosen: int) -> int:
            return self._loop.listen(address, chosen, screen=ConnectionScreen,
                                     handshake_timeout=self._limits.handshake_timeout,
                                     idle_timeout=self._limits.idle_timeout,
                                     latency=self._network_latency)
        return listen_everywhere(addresses, port, listen, self._loop.close_listeners,
                                 protocol="AMQP")

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Run the container on its thread."""
        self._faults.bind(self)
        self._idle.start()
        self._thread.start()

    def _run(self) -> None:
        try:
            self._loop.run()  # closes every socket when it ends
        except Exception:  # the thread must not die silently
            _LOG.exception("the fake namespace's server thread failed")
        finally:
            with self._signals_lock:
                self._running = False
            self._calls.close()

    def _trigger(self, name: str) -> None:
        """From any thread: run ``on_<name>`` on the server thread (if it still runs)."""
        with self._signals_lock:
            if not self._running:
                return
            self._signals.add(name)
        self._loop.wake()

    def on_wake(self) -> None:
        """The loop was woken: run what :meth:`_trigger` asked for. Each queued call's
        failure goes to its caller; a failing pump goes to :meth:`on_handler_error`, and a
        stop asked for in this wake-up happens all the same."""
        with self._signals_lock:
            signals, self._signals = self._signals, set()
        try:
            if "fake_call" in signals:
                self.on_fake_call()
            if "fake_wake" in signals:
                self.on_fake_wake()
        finally:
            if "fake_stop" in signals:
                self.on_fake_stop()

    def serve_stream(self, stream: Stream) -> None:
        """From any thread: serve one client connection over ``stream``."""
        self._call(lambda: self._loop.adopt(stream), "serve an in-memory connection")

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
            with suppress(ServerStopped):  # stopped since: no timer is left to move
                self._call(self._after_clock_move, "apply a move of the fake clock")

    def _after_clock_move(self) -> None:
        """Timers from the new time; tokens the move expired stop their links (and the
        call's pump applies the store's due work)."""
        self._timer.clock_moved()
        self._token_timer.clock_moved()
        self._on_token_timer()

    def _call(self, action: Callable[[], _T], what: str) -> _T:
        """Run ``action`` on the server thread (under the lock) and return its result, or
        raise what it raised (``what``: the words for it, in a time-out's or a stop's
        error)."""
        if threading.current_thread() is self._thread:
            with self._lock:
                return action()
        if not self._thread.is_alive():
            raise ServerStopped(f"the fake namespace's server thread is not running: it "
                                f"cannot {what}")
        call = QueuedCall(action, what)
        self._calls.put(call)
        self._trigger("fake_call")
        return call.outcome(_CALL_TIMEOUT)

    def on_fake_call(self) -> None:
        """Run the queued calls (each answered to its caller), then pump."""
        with self._lock:
            self._calls.run_queued()
            self.pump()

    def on_fake_stop(self) -> None:
        self.before_writing()  # the loop writes what is pending as it closes the sockets
        self._loop.close_listeners()
        self._timer.cancel()
        self._token_timer.cancel()
        self._idle.cancel()
        self._loop.stop()

    def _on_timer(self) -> None:
        with self._lock:
            self.pump()

    def _on_token_timer(self) -> None:
        """Tokens expired (in real time or by a clock move): stop the links they authorized."""
        with self._lock:
            now = self._clock.now()
            for key in self._token_expiries.due(now):
                record = self.records.by_key.get(key)
                if record is not None and record.tokens.prune(now):
                    self._detacher.revoke(record)
            self._token_timer.arm(self._token_expiries.next())

    def _token_kept(self, expiry: float, connection: int) -> None:
        """A put-token kept a token of ``connection`` that expires at ``expiry``."""
        self._token_expiries.add(expiry, connection)
        self._token_timer.arm(expiry)

    def _later(self, delay: float, action: Callable[[], None]) -> None:
        """Run ``action`` under the namespace lock in ``delay`` seconds (a late reply)."""
        self._loop.schedule(delay, lambda: self._locked(action))

    # --- connections --------------------------------------------------------------------

    def on_connection_remote_open(self, event: EventHandle) -> None:
        connection: ConnectionHandle = event.connection
        with self._lock:
            records = self.records
            if (records.find(connection) is None
                    and len(records.connections) >= self._limits.max_connections):
                records.refused.add(connection._impl)
                self._warnings.warning("connections", "refused a connection: the namespace "
                                       "allows %d", self._limits.max_connections)
                connection.open()
                connection.condition = Condition(
                    _RESOURCE_LIMIT, f"The namespace allows at most "
                    f"{self._limits.max_connections} concurrent connections.")
                self.log.refused("$namespace", "connection", f"the namespace allows at most "
                                 f"{self._limits.max_connections} concurrent connections")
                connection.close()
                return
            record = records.connection(connection)
            if connection.state & Endpoint.LOCAL_UNINIT:
                connection.open()
            transport = connection.transport
            self.log.connection_opened(connection._impl, record.key, "unknown" if transport
                                       is None else self._loop.peer(transport))

    def on_handler_error(self, event: EventHandle | None, error: Exception) -> None:
        """An event's handling failed: close its connection (``amqp:internal-error``);
        every other connection goes on being served. A timer or a wake-up that failed
        (``event`` None) is logged; the loop goes on."""
        connection: ConnectionHandle | None = None if event is None else event.connection
        self._warnings.warning("handler", "%s failed (%s)",
                               "an event" if connection is not None else "a timer or wake-up",
                               failure_site(error))
        if connection is None:
            return
        with self._lock:
            self._detacher.forget_connection(connection)
            if not connection.state & Endpoint.LOCAL_CLOSED:
                connection.condition = Condition(
                    _INTERNAL_ERROR, "The fake namespace could not handle a frame of this "
                    "connection.")
                connection.close()

    def on_session_remote_open(self, event: EventHandle) -> None:
        if event.session.state & Endpoint.LOCAL_UNINIT:
            event.session.open()

    def on_session_remote_close(self, event: EventHandle) -> None:
        if not event.session.state & Endpoint.LOCAL_CLOSED:
            event.session.close()

    def on_connection_remote_close(self, event: EventHandle) -> None:
        connection: ConnectionHandle = event.connection
        with self._lock:
            self.log.connection_closed(connection._impl, _close_reason(connection))
            self._detacher.forget_connection(connection)
        if not connection.state & Endpoint.LOCAL_CLOSED:
            connection.close()

    def on_transport_closed(self, event: EventHandle) -> None:
        connection: ConnectionHandle | None = event.connection
        with self._lock:
            if connection is not None:
                self.log.connection_closed(connection._impl,
                                           _transport_reason(connection, event.transport))
                self._detacher.forget_connection(connection)
                connection.free()

    # --- links --------------------------------------------------------------------------

    def on_link_remote_open(self, event: EventHandle) -> None:
        link: LinkHandle = event.link
        if not link.state & Endpoint.LOCAL_UNINIT \
                or link.connection._impl in self.records.refused:
            return
        if link.connection.state & Endpoint.LOCAL_CLOSED:
            # An attach that crossed the fake's own close (a cut: fakes/_detach.py forgot the
            # connection's record, tokens included): the service answers nothing on a
            # connection it closed, so nor does the fake (a fresh record holding no token
            # would refuse it as unauthorized, and a client rightly does not retry that).
            return
        with self._lock:
            connection = self.records.connection(link.connection)
            if connection.links >= self._limits.max_links_per_connection:
                self._warnings.warning("links", "refused a link: its connection holds %d links",
                                       connection.links)
                exc: FakeServiceError = LinkLimitExceeded(
                    f"A connection may hold at most {self._limits.max_links_per_connection} "
                    "links.")
                refuse_link(link, exc.condition, exc.description)
                return
            try:
                record = self.router.attach(link, connection)
            except FakeServiceError as exc:
                self.log.refused(_address(link), "attach", exc.description)
                refuse_link(link, exc.condition, exc.description)
            else:
                self.records.add_link(record)
                self.log.link_attached(connection.key, record.address, link.is_receiver,
                                       link.name)
            self.pump()

    def on_link_remote_close(self, event: EventHandle) -> None:
        link: LinkHandle = event.link
        with self._lock:
            record = self.records.drop_link(link)
            if record is not None:
                self.log.link_detached(record.connection.key, record.address, link.is_receiver,
                                       _detach_reason(link))
            if record is not None and record.key is not None:
                self.consumers.detached(record.key)
        if not link.state & Endpoint.LOCAL_CLOSED:
            link.close()

    # --- transfers ---------------------------------------------------------------------

    def on_link_flow(self, event: EventHandle) -> None:
        link: LinkHandle = event.link
        with self._lock:
            self._active(link)
            consumer = self._consumer_of(link)
            if consumer is not None:
                self.consumers.feed(consumer, self._clock.now())
                self._arm(consumer.entity.next_due)  # the locks it took expire
            elif link.is_sender:
                self.router.reply_credit(link)

    def on_delivery(self, event: EventHandle) -> None:
        link: LinkHandle = event.link
        with self._lock:
            self._active(link)
            if link.is_receiver:
                if not self.router.receive(link):
                    return
            else:
                consumer = self._consumer_of(link)
                if consumer is not None:
                    self.consumers.settle(consumer, pn_event_delivery(event.impl))
            self._pump_owed = True

    def on_events_dispatched(self) -> None:
        """The loop dispatched every queued event: the one pump the transfers and
        settlements among them owe (see the theory of operation)."""
        if self._pump_owed:
            self._pump_owed = False
            with self._lock:
                self.pump()
        self.before_writing()

    def before_writing(self) -> None:
        """What the loop writes next (dispositions, replies, presettled messages) leaves
        only once a data directory holds what it acknowledges (its commit; else nothing)."""
        if self._commit is not None:
            with self._lock:
                self._commit()

    def _active(self, link: LinkHandle) -> None:
        """A transfer, settlement or flow crossed ``link``: its idle timer starts again."""
        record = self.records.links.get(link._impl)
        if record is not None:
            record.active_at = time.monotonic()

    def _consumer_of(self, link: LinkHandle) -> Consumer | None:
        """The receiver ``link`` carries messages to, if it is one."""
        record = self.records.links.get(link._impl)
        key = None if record is None else record.key
        return None if key is None else self.consumers.consumers.get(key)

    # --- faults (the FaultTarget protocol; called from other threads) ----------------------

    def release_held(self) -> None:
        """Send the replies whose pauses have all been removed."""
        self._call(self._replies.release_held, "release the held replies")

    def detach_management_link(self, entity: str) -> int:
        """Detach ``entity``'s management links on every connection."""
        wanted = entity_key(entity)
        return self._call(lambda: self._detacher.management_links(wanted),
                          f"detach the management links of {entity!r}")

    def detach_deleted(self, paths: list[str]) -> int:
        """Detach every link to the deleted entity ``paths`` (their ``$management`` nodes
        too) with ``amqp:not-found``, as the service does when an entity is deleted."""
        deleted = {entity_key(path) for path in paths}
        return self._call(lambda: self._detacher.deleted(deleted),
                          "detach the links to the deleted entities")

    def close_connections(self) -> int:
        """Close every client connection with ``amqp:connection:forced``."""
        return self._call(self._detacher.connections, "close the client connections")

    def expire_tokens(self) -> int:
        """Forget every token and detach the entity links they authorised."""
        return self._call(self._detacher.expire_tokens, "expire the tokens")

    # --- time ----------------------------------------------------------------------------------

    def pump(self) -> None:
        """Apply what is due, feed receivers, and set the timer for the next deadline
        (after feeding: the locks the receivers just took are deadlines too)."""
        now = self._clock.now()
        self._store.process_due(now)
        deleted = self._store.take_deleted()  # auto-delete-on-idle
        if deleted:
            self._detacher.deleted({entity_key(path) for path in deleted})
        txn_due = self.transactions.expire(now)
        wait_due = self.consumers.serve_waits(now) if self.consumers.waits else None
        self.consumers.feed_all(now)
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


def _condition_text(condition: Condition | None) -> str:
    """``name: description`` of an AMQP error condition ("" without one)."""
    if condition is None:
        return ""
    return f"{condition.name}: {condition.description}" if condition.description else (
        str(condition.name))


def _close_reason(connection: ConnectionHandle) -> str:
    """Why a connection whose peer sent ``close`` ended: the fake closed it first (its
    condition), or the client did (with its condition, if it gave one)."""
    if connection.state & Endpoint.LOCAL_CLOSED:
        return f"closed by the fake ({_condition_text(connection.condition) or 'no error'})"
    given = _condition_text(connection.remote_condition)
    return f"closed by the client ({given})" if given else "closed by the client"


def _transport_reason(connection: ConnectionHandle, transport: Transport | None) -> str:
    """Why a connection's transport ended without the client's ``close`` (a fault, a
    time-out, a socket that went away)."""
    if connection.state & Endpoint.LOCAL_CLOSED and connection.condition is not None:
        return f"closed by the fake ({_condition_text(connection.condition)})"
    given = None if transport is None else _condition_text(transport.condition)
    return f"the transport ended ({given})" if given else "the socket closed"


def _detach_reason(link: LinkHandle) -> str:
    """Why a link was detached, as the client's detach says."""
    given = _condition_text(link.remote_condition)
    return f"by the client ({given})" if given else "by the client"


def _address(link: LinkHandle) -> str:
    """The address a link asked for (its source for a client's receiver, else its target)."""
    terminus = link.remote_source if link.is_sender else link.remote_target
    return normalize(terminus.address)
