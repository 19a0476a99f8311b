"""The entities' receivers: the server's sender links that carry an entity's messages.

Theory of operation
-------------------
A client's receiver attaches a link whose source is an entity; the server keeps a
:class:`Consumer` for it (by the link's key) and, on every pump and every flow, sends it
messages while it has credit (:meth:`Consumers.feed`). A peek-lock consumer's deliveries
are tagged with their lock token and left unsettled; the token is kept by delivery
pointer until the client settles it (:meth:`Consumers.settle`, which applies the outcome
or stages it on the transaction its transactional-state names; a staged settlement
leaves the delivery unsettled, so after a rollback the receiver may settle it again, and
the commit settles it).

A sessionful receiver locks its session at attach (the lock's expiry in the attach's
``com.microsoft:locked-until-utc``); one asking for the next available session when no
unlocked session has messages waits, as on the service, for the time its
``com.microsoft:timeout`` link property asks (the service's default, 60 s, without one):
:class:`SessionWait` entries, served by every pump in the order they came. A session that
gets messages in time is locked for it and the attach answered; at the deadline the attach
is answered without a source and detached with ``com.microsoft:timeout``, which the SDKs
raise as an operation time-out. A consumer whose session lock is lost is detached with
``com.microsoft:session-lock-lost``. Not thread-safe: the server calls it under the
namespace lock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from cproton import (
    pn_delivery,
    pn_delivery_remote_state,
    pn_delivery_settle,
    pn_delivery_settled,
    pn_delivery_update,
    pn_link_advance,
    pn_link_send,
)
from proton import Condition, Delivery, Endpoint, Link, symbol

from sbmgmt.amqp.transaction_frames import set_transactional_state, transactional_state

from ._clock import FakeClock
from ._coordinator import Coordinator, Staged
from ._delivery_annotations import for_transfer
from ._entity import Entity
from ._entity_state import SessionOwner, StoredMessage
from ._errors import ArgumentError, FakeServiceError, MessageLockLost, NoSessionAvailable
from ._links import SESSION_FILTER, LinkRecord, open_link, refuse_link
from ._log import FakeLog
from ._outcomes import Outcome
from ._proton import LinkHandle, Pointer, TerminusHandle, wrap_delivery
from ._store import Store

__all__ = ["Consumer", "Consumers", "SessionWait"]

_OPERATION_TIMEOUT = symbol("com.microsoft:timeout")
#: How long the service waits for a next available session when the receiver names no time.
_DEFAULT_SESSION_WAIT = 60.0
_LOCKED_UNTIL_UTC = symbol("com.microsoft:locked-until-utc")
_DOTNET_EPOCH_TICKS = 621355968000000000


@dataclass(eq=False)
class Consumer:
    """A receiver's link: the server sends the entity's messages on it."""

    link: LinkHandle
    entity: Entity
    peek_lock: bool
    #: Its key (the link record's) and its connection's.
    key: int
    connection: int
    session_id: str | None = None
    owner: SessionOwner | None = None
    #: The lock token of each unsettled delivery it sent (by delivery pointer).
    tokens: dict[Pointer, uuid.UUID] = field(default_factory=dict)


@dataclass(slots=True)
class SessionWait:
    """A receiver's attach for the next available session, unanswered until one has
    messages or its deadline passes."""

    link: LinkHandle
    entity: Entity
    key: int
    connection: int
    deadline: float


class Consumers:
    """Every receiver of an entity the server serves, and the attaches that wait."""

    def __init__(self, store: Store, clock: FakeClock, transactions: Coordinator,
                 max_message_size: int, *, log: FakeLog | None = None) -> None:
        self._log = FakeLog() if log is None else log
        self._store = store
        self._clock = clock
        self._transactions = transactions
        self._max_message_size = max_message_size
        self.consumers: dict[int, Consumer] = {}
        #: Next-available-session attaches waiting for a session, in the order they came.
        self.waits: list[SessionWait] = []

    # --- attach and detach -----------------------------------------------------------

    def attach(self, record: LinkRecord, key: int, path: str) -> None:
        """Answer a receiver's attach to the entity ``path`` (keyed ``key``)."""
        link = record.link
        entity = self._store.entity(path)
        filters = _filter_map(link.remote_source)
        wants_session = SESSION_FILTER in filters
        if entity.settings.requires_session and not wants_session:
            raise ArgumentError(
                f"It is not possible for an entity that requires sessions ({path!r}) to "
                "create a non-sessionful message receiver.")
        if wants_session and not entity.settings.requires_session:
            raise ArgumentError(
                "A sessionful message receiver cannot be created on an entity that does not "
                f"require sessions ({path!r}).")
        connection = record.connection.key
        if not wants_session:
            open_link(link, self._max_message_size)
            self.consumers[key] = Consumer(link, entity, _peek_lock(link), key, connection)
            return
        requested = filters[SESSION_FILTER]
        now = self._clock.now()
        wait = SessionWait(link, entity, key, connection, now + _session_wait(link))
        try:
            self._open_session(wait, None if requested is None else str(requested), now)
        except NoSessionAvailable:
            if requested is not None:
                raise
            self.waits.append(wait)

    def _open_session(self, wait: SessionWait, session_id: str | None, now: float) -> None:
        """Lock the session (the next available one for ``None``) and answer the attach."""
        link, entity = wait.link, wait.entity
        owner = SessionOwner(wait.connection, wait.key)
        record = entity.lock_session(session_id, owner, now)
        consumer = Consumer(link, entity, _peek_lock(link), wait.key, wait.connection,
                            session_id=record.session_id, owner=owner)
        open_link(link, self._max_message_size, session_id=record.session_id,
                  properties={_LOCKED_UNTIL_UTC: _dotnet_ticks(record.locked_until)})
        self.consumers[wait.key] = consumer

    def serve_waits(self, now: float) -> float | None:
        """Answer the waiting next-available-session attaches that a session now has
        messages for, or whose time is up; the earliest deadline still waiting."""
        waiting: list[SessionWait] = []
        for wait in self.waits:
            if not wait.link.state & Endpoint.REMOTE_ACTIVE:
                continue
            try:
                self._open_session(wait, None, now)
                continue
            except NoSessionAvailable:
                pass
            if now >= wait.deadline:
                _time_out(wait.link)
            else:
                waiting.append(wait)
        self.waits = waiting
        return min((w.deadline for w in waiting), default=None)

    def owner_of(self, connection: int, link_name: str) -> SessionOwner | None:
        """The session lock owner of the receiver link ``link_name`` on ``connection``."""
        for consumer in self.consumers.values():
            owner = consumer.owner
            if owner is not None and owner.connection == connection \
                    and consumer.link.name == link_name:
                return owner
        return None

    def drop(self, key: int) -> None:
        """The receiver ``key`` is gone: its session lock (if any) is released."""
        consumer = self.consumers.pop(key, None)
        if consumer is not None and consumer.session_id is not None and consumer.owner:
            consumer.entity.release_session(consumer.session_id, consumer.owner,
                                            self._clock.now())

    def detached(self, key: int) -> None:
        """The client detached the receiver ``key``: drop it, or its wait."""
        self.drop(key)
        self.waits = [w for w in self.waits if w.key != key]

    def connection_closed(self, connection: int) -> None:
        """Drop the receivers and waits of a connection that went away."""
        for key, consumer in list(self.consumers.items()):
            if consumer.connection == connection:
                self.drop(key)
        self.waits = [w for w in self.waits if w.connection != connection]

    # --- deliveries --------------------------------------------------------------------

    def feed(self, consumer: Consumer, now: float) -> None:
        """Send the consumer what it has credit for (detach it if its session lock is
        lost)."""
        link = consumer.link
        if not link.state & Endpoint.LOCAL_ACTIVE:
            return
        if consumer.session_id is not None:
            record = consumer.entity.sessions.get(consumer.session_id)
            if record is None or record.owner != consumer.owner or not record.held(now):
                self.consumers.pop(consumer.key, None)
                link.condition = Condition("com.microsoft:session-lock-lost",
                                           "The session lock has expired.")
                link.close()
                return
        while link.credit > 0:
            stored = consumer.entity.take(now, consumer.session_id, peek_lock=consumer.peek_lock)
            if stored is None:
                break
            _send(consumer, stored)
            self._log.delivered(consumer.connection, consumer.entity.path, stored.sequence_number)
        if link.drain_mode and link.credit > 0:
            link.drained()

    def feed_all(self, now: float) -> None:
        """Feed every receiver."""
        for consumer in list(self.consumers.values()):
            self.feed(consumer, now)

    def settle(self, consumer: Consumer, delivery: Pointer) -> None:
        """The client settled (or changed the state of) a delivery (its C pointer): apply
        its outcome. A transactional one (every settlement of a move) is read with
        proton-C's calls; proton's wrapper is made only for another state.

        A disposition the client settled itself (``settled=True``: it waits for no
        answer, as the Python SDK releases what arrives outside a receive call) is
        applied all the same, unless it is transactional (a staged settlement waits for
        its commit: one the client already settled is not staged again) or names a
        delivery the fake no longer holds (settled by the fake already: nothing to
        answer)."""
        if not pn_delivery_remote_state(delivery):
            return
        token = consumer.tokens.get(delivery)
        txn = transactional_state(delivery)
        if pn_delivery_settled(delivery) and (token is None or txn is not None):
            return
        now = self._clock.now()
        entity = consumer.entity
        wrapped = None
        if txn is None:
            wrapped = wrap_delivery(delivery)
            outcome = Outcome.of_delivery(wrapped)
            if outcome is None:
                return
        else:
            outcome = Outcome.of_described(txn[1])
        try:
            if token is None:
                raise MessageLockLost("The lock supplied is invalid.")
            if txn is None:
                assert outcome is not None
                outcome.apply(entity, token, now)
                pn_delivery_update(delivery, outcome.code)
            else:
                code = self._settle_in_transaction(consumer, delivery, token, outcome, txn[0],
                                                   now)
                # Staged, and left unsettled until the commit settles it: after a rollback
                # the receiver still holds the lock and may settle the message again.
                set_transactional_state(delivery, txn[0], code)
                return
        except FakeServiceError as exc:
            rejected = wrapped or wrap_delivery(delivery)
            rejected.local.condition = Condition(exc.condition, exc.description)
            rejected.update(Delivery.REJECTED)
        consumer.tokens.pop(delivery, None)
        pn_delivery_settle(delivery)

    def _settle_in_transaction(self, consumer: Consumer, delivery: Pointer, token: uuid.UUID,
                               outcome: Outcome | None, txn_id: bytes, now: float) -> int:
        """Stage a settlement on its transaction (its lock must be valid now and at the
        commit); the outcome's code. The commit applies it and settles the delivery with
        that outcome, as a settlement outside a transaction is settled: both ends forget
        it (kept unsettled, every delivery a long move completes would stay on both ends
        of the link until it detaches)."""
        if outcome is None:
            raise ArgumentError("A transactional settlement needs a known outcome.")
        transaction = self._transactions.transaction(txn_id, consumer.connection, now)
        entity = consumer.entity

        def check(at: float) -> None:
            entity.locked(token, at)

        def apply(at: float) -> None:
            outcome.apply(entity, token, at)
            self._settle_committed(consumer, delivery, outcome.code)

        check(now)
        transaction.stage(Staged(apply, check, (token,), entity=entity.path))
        return outcome.code

    def _settle_committed(self, consumer: Consumer, delivery: Pointer, code: int) -> None:
        """Settle a delivery whose settlement its transaction committed, if its link is
        still there (a receiver gone took its deliveries with it)."""
        if self.consumers.get(consumer.key) is not consumer \
                or consumer.tokens.pop(delivery, None) is None:
            return
        pn_delivery_update(delivery, code)
        pn_delivery_settle(delivery)


def _send(consumer: Consumer, stored: StoredMessage) -> None:
    link = consumer.link
    token = stored.lock_token if consumer.peek_lock else None
    tag = (token or uuid.uuid4()).bytes_le
    # proton-C's calls: a delivery's wrapper costs more than the rest of the send.
    impl = link._impl
    delivery = pn_delivery(impl, tag)  # a binary tag, as Service Bus sends (lock token)
    pn_link_send(impl, for_transfer(stored.wire(), stored.content, token))
    pn_link_advance(impl)
    if token is None:
        pn_delivery_settle(delivery)
    else:
        consumer.tokens[delivery] = token


def _time_out(link: LinkHandle) -> None:
    """Answer a waiting attach as the service does when no session came: no source,
    then a detach with ``com.microsoft:timeout``."""
    refuse_link(link, NoSessionAvailable.condition, (
        "The operation did not complete within the allocated time: no unlocked session "
        "with messages became available."))


def _session_wait(link: LinkHandle) -> float:
    """The seconds a next-available-session receiver asked to wait (its link's
    ``com.microsoft:timeout``, milliseconds), else the service's default."""
    properties = link.remote_properties
    requested = properties.get(_OPERATION_TIMEOUT) if isinstance(properties, dict) else None
    if isinstance(requested, int) and not isinstance(requested, bool) and requested >= 0:
        return float(requested / 1000)
    return _DEFAULT_SESSION_WAIT


def _peek_lock(link: LinkHandle) -> bool:
    """Whether a receiver settles what it gets (peek-lock) or takes it pre-settled."""
    return bool(link.remote_snd_settle_mode != Link.SND_SETTLED)


def _dotnet_ticks(seconds: float) -> int:
    return _DOTNET_EPOCH_TICKS + int(seconds * 10_000_000)


def _filter_map(terminus: TerminusHandle) -> dict[Any, Any]:
    data = terminus.filter
    data.rewind()
    if not data.next():
        return {}
    value = data.get_object()
    return value if isinstance(value, dict) else {}
