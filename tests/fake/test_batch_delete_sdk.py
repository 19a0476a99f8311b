"""com.microsoft:batch-delete-messages against the fake, with the official Python SDK's own
encoding on the wire (tests/_sdk_batch_delete.py): the oldest first, the cutoff, locked,
deferred and scheduled messages kept, a dead-letter queue, a subscription and one session
alone, an empty entity, the quota. Real time throughout (the SDK reads the wall clock)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus.exceptions import ServiceBusError

from fakes import FakeNamespace
from sbmgmt.message import Message
from tests._sdk_batch_delete import sdk_delete_messages
from tests._waiting import wait_until

WAIT = 2
OPERATION = "com.microsoft:batch-delete-messages"


@pytest.fixture
def client(fake_namespace: FakeNamespace) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as sb_client:
        yield sb_client


def _send(client: ServiceBusClient, queue: str, *bodies: str) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(body) for body in bodies])


def _bodies(client: ServiceBusClient, queue: str, **kwargs: object) -> list[str]:
    with client.get_queue_receiver(queue, **kwargs) as receiver:  # type: ignore[arg-type]
        return [str(m) for m in receiver.peek_messages(max_message_count=100)]


def test_the_oldest_by_enqueued_time_go_first(client: ServiceBusClient,
                                              fake_namespace: FakeNamespace) -> None:
    with client.get_queue_sender("queue") as sender:
        due = datetime.now(timezone.utc) + timedelta(seconds=1.5)
        sender.schedule_messages(ServiceBusMessage("scheduled-first"), due)  # sequence 1
        sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])  # 2, 3
    assert datetime.now(timezone.utc) < due, "too slow to prove the order"
    # "scheduled-first" is enqueued when it comes due: after a and b.
    assert wait_until(lambda: fake_namespace.accounting("queue")["scheduled"] == 0)
    _send(client, "queue", "c")
    with client.get_queue_receiver("queue") as receiver:
        assert sdk_delete_messages(receiver, 2) == 2
    # By sequence number the first two would be scheduled-first and a.
    assert _bodies(client, "queue") == ["scheduled-first", "c"]
    assert fake_namespace.accounting("queue")["deleted"] == 2


def test_the_cutoff_holds(client: ServiceBusClient) -> None:
    _send(client, "queue", "old-1", "old-2")
    time.sleep(0.05)
    cutoff = datetime.now(timezone.utc)
    time.sleep(0.05)
    _send(client, "queue", "new-1")
    with client.get_queue_receiver("queue") as receiver:
        assert sdk_delete_messages(receiver, 100, before=cutoff) == 2
        assert sdk_delete_messages(receiver, 100, before=cutoff) == 0
    assert _bodies(client, "queue") == ["new-1"]


def test_locked_messages_stay(client: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    _send(client, "queue", *(f"m{i}" for i in range(5)))
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        locked = receiver.receive_messages(max_message_count=2, max_wait_time=WAIT)
        assert len(locked) == 2
        assert sdk_delete_messages(receiver, 100) == 3
        for message in locked:  # the locks are intact: the messages can be completed
            receiver.complete_message(message)
    counts = fake_namespace.accounting("queue")
    assert (counts["deleted"], counts["completed"], counts["active"]) == (3, 2, 0)


def test_deferred_and_scheduled_messages_stay(client: ServiceBusClient,
                                             fake_namespace: FakeNamespace) -> None:
    _send(client, "queue", "deferred", "plain")
    with client.get_queue_sender("queue") as sender:
        sender.schedule_messages(ServiceBusMessage("scheduled"),
                                 datetime.now(timezone.utc) + timedelta(hours=1))
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        first = receiver.receive_messages(max_message_count=1, max_wait_time=WAIT)[0]
        receiver.defer_message(first)
        far = datetime.now(timezone.utc) + timedelta(days=1)
        assert sdk_delete_messages(receiver, 100, before=far) == 1
    assert sorted(_bodies(client, "queue")) == ["deferred", "scheduled"]
    counts = fake_namespace.accounting("queue")
    assert (counts["deferred"], counts["scheduled"], counts["deleted"]) == (1, 1, 1)


def test_a_dead_letter_queue_alone(client: ServiceBusClient,
                                   fake_namespace: FakeNamespace) -> None:
    _send(client, "queue", *(f"m{i}" for i in range(5)))
    with client.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        for message in receiver.receive_messages(max_message_count=2, max_wait_time=WAIT):
            receiver.dead_letter_message(message, reason="test")
    with client.get_queue_receiver("queue", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        assert sdk_delete_messages(dlq, 100) == 2
        assert sdk_delete_messages(dlq, 100) == 0
    assert _bodies(client, "queue", sub_queue=ServiceBusSubQueue.DEAD_LETTER) == []
    assert _bodies(client, "queue") == ["m2", "m3", "m4"]
    assert fake_namespace.accounting("queue/$DeadLetterQueue")["deleted"] == 2


def test_a_subscription_alone(client: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    fake_namespace.add_subscription("topic", "other")
    with client.get_topic_sender("topic") as sender:
        sender.send_messages([ServiceBusMessage(f"e{i}") for i in range(4)])
    with client.get_subscription_receiver("topic", "sub") as receiver:
        assert sdk_delete_messages(receiver, 3) == 3
        assert sdk_delete_messages(receiver, 3) == 1
    assert fake_namespace.accounting("topic/Subscriptions/sub")["deleted"] == 4
    assert fake_namespace.accounting("topic/Subscriptions/other")["active"] == 4


def test_one_session_alone(client: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    fake_namespace.send("session-queue", *(Message(body=b"a", session_id="a") for _ in range(3)),
                        *(Message(body=b"b", session_id="b") for _ in range(2)))
    with client.get_queue_receiver("session-queue", session_id="a") as receiver:
        assert sdk_delete_messages(receiver, 100) == 3
    with client.get_queue_receiver("session-queue", session_id="b") as receiver:
        remaining = receiver.peek_messages(max_message_count=10)
        assert [m.session_id for m in remaining] == ["b", "b"]
    assert fake_namespace.accounting("session-queue")["deleted"] == 3


def test_an_empty_entity_answers_zero(client: ServiceBusClient,
                                      fake_namespace: FakeNamespace) -> None:
    with client.get_queue_receiver("queue") as receiver:
        assert sdk_delete_messages(receiver, 10) == 0
    assert fake_namespace.applied("queue", OPERATION) == 1


def test_a_count_above_the_quota_is_refused(client: ServiceBusClient,
                                            fake_namespace: FakeNamespace) -> None:
    """The Standard tier's quota (the default tier's; Premium's 4,000 is in test_tiers.py)."""
    _send(client, "queue", "kept")
    with client.get_queue_receiver("queue") as receiver:
        with pytest.raises(ServiceBusError, match="Message count should be between 1 and 500"):
            sdk_delete_messages(receiver, 501)
        assert sdk_delete_messages(receiver, 500) == 1
    assert fake_namespace.accounting("queue")["deleted"] == 1
