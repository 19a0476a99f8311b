"""The fake's transaction coordinator, driven by an independent AMQP 1.0 controller:
qpid-proton's own ``Transaction`` (its declare, discharge, transactional send and
transactional accept) over proton's blocking connection. The official Python SDK has
no transactions; sbmgmt's client covers schedule and update-disposition
(tests/client/test_transactions.py). Also the accounting invariant across commits,
rollbacks and timeouts, on the store directly."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Delivery, Message, Terminus, symbol
from proton.reactor import LinkOption, Transaction
from proton.utils import BlockingConnection

from fakes import FakeNamespace
from fakes._coordinator import TIMEOUT, Coordinator, Staged
from fakes._entity import Entity
from fakes._errors import FakeServiceError, TransactionTimedOut
from fakes._store import Store
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message as SbMessage

_STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered", "completed", "expired",
           "cancelled")


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(accept_any_token=True) as namespace:
        namespace.add_queue("q", lock_duration=timedelta(minutes=5))
        namespace.add_queue("other")
        yield namespace


class _Coordinator(LinkOption):  # type: ignore[misc]
    """A sender link to the coordinator, as proton's Container.declare_transaction makes it."""

    def apply(self, link: Any) -> None:
        link.target.type = Terminus.COORDINATOR
        link.target.capabilities.put_object(symbol("amqp:local-transactions"))


class _Events:
    """proton's TransactionHandler callbacks, recorded by name."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_transaction_"):
            raise AttributeError(name)
        return lambda event: self.seen.append(name.removeprefix("on_transaction_"))


class _Peer:
    """One connection to the fake: a CBS token, a sender and a receiver on ``q``, and
    proton's Transaction on a coordinator link."""

    def __init__(self, fake: FakeNamespace) -> None:
        self.conn = BlockingConnection(f"amqp://127.0.0.1:{fake.port}", timeout=10)
        cbs = self.conn.create_sender("$cbs")
        replies = self.conn.create_receiver("$cbs")
        cbs.send(Message(reply_to="$cbs", body="any", properties={
            "operation": "put-token", "type": "servicebus.windows.net:sastoken",
            "name": "sb://127.0.0.1/q"}))
        replies.receive(timeout=10)
        self.sender = self.conn.create_sender("q")
        self.receiver = self.conn.create_receiver("q", credit=0)
        self.control = self.conn.create_sender(None, options=_Coordinator())
        self.events = _Events()

    def declare(self) -> Transaction:
        txn = Transaction(self.control.link, self.events)
        self._outcome(txn, txn._declare)
        assert self.events.seen[-1] == "declared", self.events.seen
        return txn

    def discharge(self, txn: Transaction, *, commit: bool) -> str:
        txn.commit() if commit else txn.abort()
        self._outcome(txn, txn._discharge)
        return self.events.seen[-1]

    def _outcome(self, txn: Transaction, delivery: Delivery) -> None:
        self.conn.wait(lambda: delivery.remote_state != 0, msg="control outcome")
        txn.handle_outcome(SimpleNamespace(delivery=delivery))

    def send(self, body: bytes, txn_id: bytes | None = None) -> Delivery:
        """Send a message (in a transaction when ``txn_id`` is given); its delivery."""
        delivery = self.sender.link.send(Message(body=body))
        if txn_id is not None:
            delivery.local.data = [txn_id]
            delivery.update(0x34)
        self.conn.wait(lambda: delivery.remote_state != 0, msg="send outcome")
        return delivery

    def receive(self, count: int) -> list[Delivery]:
        """Receive ``count`` messages (peek-lock); their unsettled deliveries."""
        self.receiver.flow(count)
        for _ in range(count):
            self.receiver.receive(timeout=10)
        fetched = self.receiver.fetcher.unsettled
        return [fetched.popleft() for _ in range(count)]

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def peer(fake: FakeNamespace) -> Iterator[_Peer]:
    connection = _Peer(fake)
    yield connection
    connection.close()


def _condition(delivery: Delivery) -> str:
    assert delivery.remote_state == Delivery.REJECTED
    return str(delivery.remote.condition.name)


def test_sends_and_settlements_in_a_transaction_are_applied_on_commit(
        fake: FakeNamespace, peer: _Peer) -> None:
    fake.send("q", SbMessage(body=b"1"), SbMessage(body=b"2"))
    deliveries = peer.receive(2)
    txn = peer.declare()
    for delivery in deliveries:
        txn.accept(delivery)
    sent = [peer.send(b"new", txn.id) for _ in range(3)]
    assert all(d.remote_state == 0x34 for d in sent)  # transactional-state [txn-id, accepted]
    peer.conn.wait(lambda: all(d.remote_state == 0x34 for d in deliveries), msg="staged")
    before = fake.accounting("q")
    assert (before["accepted"], before["locked"], before["completed"]) == (2, 2, 0)
    assert not any(d.settled for d in deliveries)  # staged: held until the commit
    assert peer.discharge(txn, commit=True) == "committed"
    after = fake.accounting("q")
    assert (after["accepted"], after["active"], after["completed"]) == (5, 3, 2)
    # the commit settled them (before its own outcome, on the same connection)
    assert all(d.settled and d.remote_state == Delivery.ACCEPTED for d in deliveries)


def test_a_rollback_applies_nothing(fake: FakeNamespace, peer: _Peer) -> None:
    fake.send("q", SbMessage(body=b"1"))
    [delivery] = peer.receive(1)
    txn = peer.declare()
    txn.accept(delivery)
    peer.send(b"new", txn.id)
    peer.conn.wait(lambda: delivery.remote_state == 0x34, msg="staged")
    assert peer.discharge(txn, commit=False) == "aborted"
    assert not delivery.settled  # still locked by the receiver: it may settle it again
    after = fake.accounting("q")
    # not completed, not sent: the message is still locked by the receiver (proton then
    # releases it pre-settled, which the fake, like a settled disposition, does not act on)
    assert (after["accepted"], after["completed"], after["locked"]) == (1, 0, 1)


def test_unknown_discharged_and_foreign_txn_ids_are_refused(fake: FakeNamespace,
                                                            peer: _Peer) -> None:
    assert _condition(peer.send(b"x", b"txn:never-declared")) == "amqp:transaction:unknown-id"
    txn = peer.declare()
    assert peer.discharge(txn, commit=True) == "committed"
    assert _condition(peer.send(b"x", txn.id)) == "amqp:transaction:unknown-id"
    with ManagementClient.from_connection_string(fake.connection_string) as client, \
            client.transaction() as foreign:
        assert foreign.txn_id is not None
        refused = peer.send(b"x", foreign.txn_id)
        assert _condition(refused) == "amqp:transaction:unknown-id"
        assert "not declared on this connection" in refused.remote.condition.description
    assert fake.accounting("q")["accepted"] == 0


def test_a_namespace_without_transactions_refuses_the_declare_as_the_basic_tier() -> None:
    with FakeNamespace(accept_any_token=True, transactions=False) as basic:
        basic.add_queue("q")
        connection = _Peer(basic)
        try:
            txn = Transaction(connection.control.link, connection.events)
            declare = txn._declare
            connection._outcome(txn, declare)
            assert connection.events.seen == ["declare_failed"]
            assert declare.remote_state == Delivery.REJECTED
            condition = declare.remote.condition
            assert condition.name == "amqp:not-allowed"
            assert "'Basic' tier" in condition.description
            # everything else works as before
            assert connection.send(b"plain").remote_state == Delivery.ACCEPTED
        finally:
            connection.close()


def test_a_transaction_open_for_two_minutes_is_rolled_back(fake: FakeNamespace,
                                                          peer: _Peer) -> None:
    txn = peer.declare()
    peer.send(b"x", txn.id)
    fake.clock.advance(TIMEOUT + 1)  # the fake's clock: no SDK reads it here
    assert fake.accounting("q")["accepted"] == 0
    assert _condition(peer.send(b"y", txn.id)) == "amqp:transaction:timeout"
    assert peer.discharge(txn, commit=True) == "commit_failed"
    assert _condition(txn._discharge) == "amqp:transaction:timeout"
    assert fake.accounting("q")["accepted"] == 0


def test_a_closed_connection_rolls_its_transactions_back(fake: FakeNamespace) -> None:
    peer = _Peer(fake)
    txn = peer.declare()
    peer.send(b"x", txn.id)
    peer.close()
    again = _Peer(fake)
    try:
        assert _condition(again.send(b"y", txn.id)) == "amqp:transaction:unknown-id"
    finally:
        again.close()
    assert fake.accounting("q")["accepted"] == 0


# ---- the accounting invariant, on the store and the coordinator directly ---------------------

def _send(store: Store) -> Staged:
    def apply(at: float) -> None:
        store.send("q", SbMessage(body=b"t"), at)

    return Staged(apply)


def _schedule(entity: Entity, at_time: datetime) -> Staged:
    [number] = entity.reserve_sequence_numbers(1)

    def apply(at: float) -> None:
        entity.accept(SbMessage(body=b"s", scheduled_enqueue_time=at_time), at, number)

    return Staged(apply)


def _complete(entity: Entity, token: uuid.UUID) -> Staged:
    def apply(at: float) -> None:
        entity.complete(token, at)

    def check(at: float) -> None:
        entity.locked(token, at)

    return Staged(apply, check, (token,))


_steps = st.lists(st.tuples(
    st.sampled_from(["send", "take", "settle_in", "schedule_in", "send_in", "commit",
                     "rollback", "advance", "declare"]),
    st.integers(min_value=0, max_value=200),
), max_size=50)


@settings(max_examples=100, deadline=None)
@given(_steps)
def test_every_accepted_message_is_counted_once_across_commits_and_rollbacks(
        plan: list[tuple[str, int]]) -> None:
    fake = FakeNamespace()
    fake.add_queue("q", lock_duration=timedelta(seconds=90))
    store = fake._store
    entity = store.entity("q")
    coordinator = Coordinator()
    now = 1_000_000.0
    txn_id: bytes | None = None
    tokens = []
    for action, n in plan:
        try:
            if action == "declare" or (txn_id is None and action.endswith("_in")):
                txn_id = coordinator.declare(1, now)
            if action == "send":
                store.send("q", SbMessage(body=b"x"), now)
            elif action == "take":
                stored = entity.take(now, None, peek_lock=True)
                if stored is not None and stored.lock_token is not None:
                    tokens.append(stored.lock_token)
            elif action == "advance":
                now += n
                store.process_due(now)
                coordinator.expire(now)
            elif txn_id is not None:
                transaction = coordinator.transaction(txn_id, 1, now)
                if action == "send_in":
                    transaction.stage(_send(store))
                elif action == "schedule_in":
                    at_time = datetime.fromtimestamp(now + n, tz=timezone.utc)
                    transaction.stage(_schedule(entity, at_time))
                elif action == "settle_in" and tokens:
                    token = tokens.pop(n % len(tokens))
                    entity.locked(token, now)
                    transaction.stage(_complete(entity, token))
                elif action in ("commit", "rollback"):
                    txn_id, ending = None, txn_id
                    coordinator.discharge(ending, action == "rollback", 1, now)
        except FakeServiceError:
            pass
        counts = store.accounting("q")
        assert all(counts[state] >= 0 for state in _STATES)
        assert sum(counts[state] for state in _STATES) == counts["accepted"]


def test_work_joining_a_transaction_past_its_deadline_is_refused_before_the_pump_expires_it(
) -> None:
    """The coordinator checks the one transaction work names (not every open one per
    disposition): past its deadline it is rolled back there, whether or not the pump's
    expire ran, and every other open transaction is left to the pump."""
    coordinator = Coordinator(timeout=10.0)
    late = coordinator.declare(connection=1, now=0.0)
    other = coordinator.declare(connection=1, now=5.0)
    with pytest.raises(TransactionTimedOut):
        coordinator.transaction(late, connection=1, now=10.0)
    assert coordinator.rolled_back == 1
    assert coordinator.transaction(other, connection=1, now=10.0).txn_id == other
    with pytest.raises(TransactionTimedOut):  # remembered as timed out, not unknown
        coordinator.transaction(late, connection=1, now=11.0)
    assert coordinator.expire(now=15.0) is None and coordinator.rolled_back == 2


def test_a_transaction_holds_at_most_100_messages(fake: FakeNamespace, peer: _Peer) -> None:
    """"Number of messages per transaction | 100" (the quotas page, every tier): the 101st
    send is refused (amqp:resource-limit-exceeded, the SDKs' quota-exceeded error, in the
    page's words) and the transaction commits the 100 it holds."""
    txn = peer.declare()
    for _ in range(100):
        assert peer.send(b"in", txn.id).remote_state == 0x34
    refused = peer.send(b"one more", txn.id)
    assert _condition(refused) == "amqp:resource-limit-exceeded"
    assert refused.remote.condition.description == (
        "Cannot send more than 100 messages in a single transaction.")
    assert peer.discharge(txn, commit=True) == "committed"
    assert fake.accounting("q")["active"] == 100
