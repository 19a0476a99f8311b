"""Message senders and peek-lock receivers against the fake: send, receive, complete,
abandon, send-via inside a transaction, the one-entity rule, a lost connection, asyncio."""

from __future__ import annotations

import asyncio
import time

import pytest

from fakes import FakeNamespace
from fakes._links import ENTITY_CREDIT
from sbmgmt import AsyncManagementClient, ManagementClient, Message
from sbmgmt.errors import ConnectionLostError, NotFoundError, ServiceBusManagementError
from tests._waiting import wait_until

#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(queues=["a", "b"])


def _messages(count: int) -> list[Message]:
    return [Message(body=f"m{i}".encode(), message_id=f"id-{i}") for i in range(count)]


def test_send_receive_complete_and_abandon(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        q = client.entity("a")
        with q.sender() as sender:
            sender.send_messages(_messages(6))
        with q.receiver() as receiver:
            got = receiver.receive_messages(6, max_wait_time=2)
            assert [m.body for m in got] == [f"m{i}".encode() for i in range(6)]
            assert all(m.lock_token is not None and m.sequence_number for m in got)
            receiver.complete_messages(got[:4])
            receiver.abandon_messages(got[4:])
            again = receiver.receive_messages(6, max_wait_time=0.3)
            assert [m.message_id for m in again] == ["id-4", "id-5"]
            assert receiver.receive_messages(1, max_wait_time=0.1) == []
    assert fake.accounting("a")["completed"] == 4


def test_send_via_in_a_transaction_applies_only_on_commit(fake: FakeNamespace) -> None:
    fake.send("a", *_messages(6))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client, \
            client.entity("a").receiver() as receiver, \
            client.entity("b").sender(via="a") as via:
        first = receiver.receive_messages(3, max_wait_time=2)
        with pytest.raises(RuntimeError), client.transaction() as txn:
            via.send_messages(first, transaction=txn)
            receiver.complete_messages(first, transaction=txn)
            raise RuntimeError("roll back")
        assert fake.accounting("b")["active"] == 0
        assert fake.accounting("a")["completed"] == 0
        got = receiver.receive_messages(3, max_wait_time=2)
        with client.transaction() as txn:
            via.send_messages(got, transaction=txn)
            receiver.complete_messages(got, transaction=txn)
            assert fake.accounting("b")["active"] == 0  # not before the commit
    assert fake.accounting("b")["active"] == 3
    assert fake.accounting("a")["completed"] == 3


def test_a_committed_settlement_is_forgotten_and_a_rolled_back_one_is_still_held(
        fake: FakeNamespace) -> None:
    # The receiver's record of its deliveries (the I/O thread's), read once a commit or a
    # settlement has its answer: the service's settle of each delivery comes before it.
    fake.send("a", *_messages(4))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client, \
            client.entity("a").receiver() as receiver:
        got = receiver.receive_messages(4, max_wait_time=2)
        held = receiver._link
        with client.transaction() as txn:
            receiver.complete_messages(got[:2], transaction=txn)
        assert set(held.deliveries) == {m.lock_token for m in got[2:]}
        with pytest.raises(RuntimeError), client.transaction() as txn:
            receiver.complete_messages(got[2:], transaction=txn)
            raise RuntimeError("roll back")
        assert set(held.deliveries) == {m.lock_token for m in got[2:]}
        receiver.complete_messages(got[2:])  # settled again, after the rollback
        assert (held.deliveries, held.token_at, held.transacted) == ({}, {}, set())
    assert fake.accounting("a")["completed"] == 4


def test_messages_settled_in_a_rolled_back_transaction_are_given_back_at_the_detach(
        fake: FakeNamespace) -> None:
    # After a rollback their locks are still the receiver's; its detach gives them back, so
    # another receiver gets them at once (not when the locks expire, a minute on).
    fake.send("a", *_messages(3))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        with client.entity("a").receiver() as receiver:
            got = receiver.receive_messages(3, max_wait_time=2)
            with pytest.raises(RuntimeError), client.transaction() as txn:
                receiver.complete_messages(got, transaction=txn)
                raise RuntimeError("roll back")
        assert fake.accounting("a")["locked"] == 0
        with client.entity("a").receiver() as again:
            assert [m.message_id for m in again.receive_messages(3, max_wait_time=2)] == [
                m.message_id for m in got]


def test_a_transaction_spanning_two_top_level_entities_is_refused(fake: FakeNamespace) -> None:
    fake.send("a", *_messages(1))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client, \
            client.entity("a").receiver() as receiver, \
            client.entity("b").sender() as direct:
        got = receiver.receive_messages(1, max_wait_time=2)
        with pytest.raises(ServiceBusManagementError) as caught, \
                client.transaction() as txn:
            receiver.complete_messages(got, transaction=txn)
            direct.send_messages(got, transaction=txn)
        assert caught.value.error_condition == "amqp:not-allowed"
        assert "top-level entities" in str(caught.value)


def test_send_via_to_a_missing_destination_is_refused_at_attach(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client, \
            pytest.raises(NotFoundError), client.entity("nope").sender(via="a"):
        pass


def test_a_lost_connection_ends_the_links(fake: FakeNamespace) -> None:
    fake.send("a", *_messages(2))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client, \
            client.entity("a").receiver() as receiver:
        got = receiver.receive_messages(2, max_wait_time=2)
        fake.faults.close_connections()
        with pytest.raises(ConnectionLostError):
            receiver.complete_messages(got)
        assert receiver.ended


def test_submit_all_has_one_future_that_waits_for_every_outcome() -> None:
    """One transfer a message, in order, across more than one grant of credit; a refused
    message fails the future (with the service's condition) once the others are in."""
    with FakeNamespace(max_message_size=4096) as fake:
        fake.add_queue("a")
        many = [Message(body=b"small", message_id=f"many-{i}") for i in range(ENTITY_CREDIT + 300)]
        refused = _messages(5)
        refused[2] = Message(body=b"x" * 8192, message_id="too-big")
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=10) as client, \
                client.entity("a").sender() as sender:
            assert sender.submit_all([]).result(5) is None
            assert sender.submit_all(many).result(10) is None
            failed = sender.submit_all(refused)
            with pytest.raises(ServiceBusManagementError) as caught:
                failed.result(10)
            sender.send_messages(_messages(1))  # the link lives on
            peeked = client.entity("a").peek_messages(1, len(many) + 10)
        assert caught.value.error_condition == "amqp:link:message-size-exceeded"
        assert [m.message_id for m in peeked] == [
            *(m.message_id for m in many), "id-0", "id-1", "id-3", "id-4", "id-0"]


def test_the_asyncio_twins(fake: FakeNamespace) -> None:
    async def main() -> list[bytes]:
        async with AsyncManagementClient.from_connection_string(
                fake.connection_string, timeout=5) as client:
            async with client.entity("a").sender() as sender:
                await sender.send_messages(_messages(3))
            async with client.entity("a").receiver() as receiver:
                got = await receiver.receive_messages(3, max_wait_time=2)
                await receiver.complete_messages(got)
                return [bytes(m.body) for m in got]

    assert asyncio.run(main()) == [b"m0", b"m1", b"m2"]
    assert fake.accounting("a")["completed"] == 3


def test_a_lowered_prefetch_asks_for_no_more_than_the_receives(fake: FakeNamespace) -> None:
    """The prefetch is asked for beyond the waiting receives; lowered, it takes back no
    credit given, and once that is used nothing more is asked for."""
    fake.send("a", *_messages(100))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client, \
            client.entity("a").receiver(prefetch=20) as receiver:
        assert len(receiver.receive_messages(5, max_wait_time=2)) == 5
        wait_until(lambda: fake.accounting("a")["locked"] >= 25, 5)
        assert fake.accounting("a")["locked"] == 25  # 5 received, 20 ahead of the next
        receiver.set_prefetch(0)
        assert len(receiver.receive_messages(30, max_wait_time=2)) == 30
        time.sleep(0.2)  # what more credit would bring
        assert fake.accounting("a")["locked"] == 35
        with pytest.raises(ValueError):
            receiver.set_prefetch(5001)


def test_prefetched_messages_nobody_received_are_given_back(fake: FakeNamespace) -> None:
    fake.send("a", *_messages(10))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        with client.entity("a").receiver(prefetch=10) as receiver:
            got = receiver.receive_messages(2, max_wait_time=2)
            receiver.complete_messages(got)
        with client.entity("a").receiver() as again:  # the other 8 are free at once
            assert len(again.receive_messages(8, max_wait_time=2)) == 8
    with pytest.raises(ValueError):
        ManagementClient.from_connection_string(fake.connection_string).entity("a").receiver(
            prefetch=-1)
