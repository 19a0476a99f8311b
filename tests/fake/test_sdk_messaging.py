"""The official azure-servicebus SDK, unmodified, against the fake namespace: messaging."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
)
from azure.servicebus.exceptions import MessageLockLostError, ServiceBusAuthenticationError

from fakes import FakeNamespace

WAIT = 2


@pytest.fixture
def client(fake_namespace: FakeNamespace) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as sb_client:
        yield sb_client


def _send(client: ServiceBusClient, queue: str, *bodies: str, **kwargs: object) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(body, **kwargs) for body in bodies])  # type: ignore[arg-type]


def test_send_receive_complete(client: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    _send(client, "queue", "one", "two")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        received = receiver.receive_messages(max_message_count=2, max_wait_time=WAIT)
        assert [str(m) for m in received] == ["one", "two"]
        assert [m.sequence_number for m in received] == [1, 2]
        assert all(m.lock_token is not None and m.delivery_count == 0 for m in received)
        assert all(m.locked_until_utc is not None for m in received)
        for message in received:
            receiver.complete_message(message)
    counts = fake_namespace.accounting("queue")
    assert counts["completed"] == 2 and counts["active"] == 0 and counts["locked"] == 0


def test_abandon_redelivers_with_delivery_count(client: ServiceBusClient) -> None:
    _send(client, "queue", "again")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        first = receiver.receive_messages(max_wait_time=WAIT)[0]
        receiver.abandon_message(first)
        second = receiver.receive_messages(max_wait_time=WAIT)[0]
        assert str(second) == "again"
        assert second.sequence_number == first.sequence_number
        assert second.delivery_count == 1
        receiver.complete_message(second)


def test_defer_then_receive_deferred_and_complete(
    client: ServiceBusClient, fake_namespace: FakeNamespace
) -> None:
    _send(client, "queue", "later")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        message = receiver.receive_messages(max_wait_time=WAIT)[0]
        receiver.defer_message(message)
        assert fake_namespace.accounting("queue")["deferred"] == 1
        assert message.sequence_number is not None
        deferred = receiver.receive_deferred_messages([message.sequence_number])
        assert [str(m) for m in deferred] == ["later"]
        receiver.complete_message(deferred[0])
    assert fake_namespace.accounting("queue")["completed"] == 1


def test_dead_letter_with_reason(client: ServiceBusClient) -> None:
    _send(client, "queue", "poison")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        message = receiver.receive_messages(max_wait_time=WAIT)[0]
        receiver.dead_letter_message(message, reason="bad", error_description="really bad")
    with client.get_queue_receiver(
        "queue", sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=WAIT
    ) as dead_letters:
        dead = dead_letters.receive_messages(max_wait_time=WAIT)
        assert [str(m) for m in dead] == ["poison"]
        assert dead[0].dead_letter_reason == "bad"
        assert dead[0].dead_letter_error_description == "really bad"
        dead_letters.complete_message(dead[0])


def test_lock_expiry_loses_the_lock_and_redelivers(
    client: ServiceBusClient, fake_namespace: FakeNamespace
) -> None:
    _send(client, "queue", "slow")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        message = receiver.receive_messages(max_wait_time=WAIT)[0]
        fake_namespace.clock.advance(61)
        with pytest.raises(MessageLockLostError):
            receiver.complete_message(message)
        again = receiver.receive_messages(max_wait_time=WAIT)[0]
        assert again.sequence_number == message.sequence_number
        assert again.delivery_count == 1
        receiver.complete_message(again)


def test_max_delivery_count_dead_letters(fake_namespace: FakeNamespace) -> None:
    fake_namespace.add_queue("fragile", max_delivery_count=2)
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as sb_client:
        _send(sb_client, "fragile", "x")
        with sb_client.get_queue_receiver("fragile", max_wait_time=WAIT) as receiver:
            for _ in range(2):
                receiver.abandon_message(receiver.receive_messages(max_wait_time=WAIT)[0])
            assert receiver.receive_messages(max_wait_time=1) == []
        with sb_client.get_queue_receiver(
            "fragile", sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=WAIT
        ) as dead_letters:
            dead = dead_letters.receive_messages(max_wait_time=WAIT)
            assert dead[0].dead_letter_reason == "MaxDeliveryCountExceeded"
    assert fake_namespace.accounting("fragile")["dead_lettered"] == 1


def test_receive_and_delete(client: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    _send(client, "queue", "gone")
    with client.get_queue_receiver(
        "queue", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=WAIT
    ) as receiver:
        assert [str(m) for m in receiver.receive_messages(max_wait_time=WAIT)] == ["gone"]
    assert fake_namespace.accounting("queue")["completed"] == 1


def test_peek_queue_and_dead_letter_queue(client: ServiceBusClient) -> None:
    _send(client, "queue", "a", "b", "c")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        peeked = receiver.peek_messages(max_message_count=2)
        assert [str(m) for m in peeked] == ["a", "b"]
        assert [str(m) for m in receiver.peek_messages(5, sequence_number=3)] == ["c"]
        receiver.dead_letter_message(receiver.receive_messages(max_wait_time=WAIT)[0],
                                     reason="r")
    with client.get_queue_receiver(
        "queue", sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=WAIT
    ) as dead_letters:
        assert [str(m) for m in dead_letters.peek_messages(10)] == ["a"]


def test_schedule_and_cancel(client: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    at = datetime.now(timezone.utc) + timedelta(minutes=10)
    with client.get_queue_sender("queue") as sender:
        kept, cancelled = sender.schedule_messages(
            [ServiceBusMessage("kept"), ServiceBusMessage("cancelled")], at)
        sender.cancel_scheduled_messages(cancelled)
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []
        peeked = receiver.peek_messages(10)
        assert [(str(m), m.sequence_number) for m in peeked] == [("kept", kept)]
        assert peeked[0].scheduled_enqueue_time_utc is not None
        fake_namespace.clock.advance(601)
        due = receiver.receive_messages(max_wait_time=WAIT)
        assert [str(m) for m in due] == ["kept"]
        receiver.complete_message(due[0])
    assert fake_namespace.accounting("queue")["cancelled"] == 1


def test_renew_message_lock_extends_locked_until(
    client: ServiceBusClient, fake_namespace: FakeNamespace
) -> None:
    _send(client, "queue", "long job")
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        message = receiver.receive_messages(max_wait_time=WAIT)[0]
        before = message.locked_until_utc
        fake_namespace.clock.advance(30)
        after = receiver.renew_message_lock(message)
        assert before is not None and after > before
        fake_namespace.clock.advance(45)
        receiver.complete_message(message)


def test_topic_fans_out_to_subscription(client: ServiceBusClient) -> None:
    with client.get_topic_sender("topic") as sender:
        sender.send_messages(ServiceBusMessage("news"))
    with client.get_subscription_receiver("topic", "sub", max_wait_time=WAIT) as receiver:
        received = receiver.receive_messages(max_wait_time=WAIT)
        assert [str(m) for m in received] == ["news"]
        receiver.complete_message(received[0])


def test_wrong_key_is_refused(fake_namespace: FakeNamespace) -> None:
    wrong = fake_namespace.connection_string.replace("SAS_KEY_VALUE", "not-the-key")
    with ServiceBusClient.from_connection_string(wrong, retry_total=0) as sb_client, \
            pytest.raises(ServiceBusAuthenticationError), \
            sb_client.get_queue_sender("queue") as sender:
        sender.send_messages(ServiceBusMessage("nope"))
    assert fake_namespace.accounting("queue")["accepted"] == 0
