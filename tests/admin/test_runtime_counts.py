"""Runtime properties read by both administration clients (sync and asyncio) match what the
official messaging client sent, received, deferred, dead-lettered and scheduled through AMQP,
in real time."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleFilter

from fakes import FakeNamespace
from tests._waiting import wait_until

from .conftest import async_admin

WAIT = 2


def _traffic(admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    """On ``counted``: 6 sent, 3 received (1 completed, 2 dead-lettered), 1 more deferred,
    2 scheduled an hour ahead. On ``events``: 3 sent, one red; ``all`` dead-letters one."""
    admin.create_queue("counted")
    admin.create_topic("events")
    admin.create_subscription("events", "all")
    admin.create_subscription("events", "red")
    admin.delete_rule("events", "red", "$Default")
    admin.create_rule("events", "red", "red", filter=SqlRuleFilter("color = 'red'"))
    with messaging.get_queue_sender("counted") as sender:
        sender.send_messages([ServiceBusMessage(f"m{index}") for index in range(6)])
        later = datetime.now(timezone.utc) + timedelta(hours=1)
        sender.schedule_messages([ServiceBusMessage("later-1"), ServiceBusMessage("later-2")],
                                 later)
    with messaging.get_queue_receiver("counted", max_wait_time=WAIT) as receiver:
        received = receiver.receive_messages(max_message_count=3, max_wait_time=WAIT)
        while len(received) < 3:
            received += receiver.receive_messages(max_message_count=3 - len(received),
                                                  max_wait_time=WAIT)
        receiver.complete_message(received[0])
        receiver.dead_letter_message(received[1], reason="bad")
        receiver.dead_letter_message(received[2], reason="worse")
        receiver.defer_message(receiver.receive_messages(max_wait_time=WAIT)[0])
    with messaging.get_topic_sender("events") as sender:
        sender.send_messages([ServiceBusMessage("plain"),
                              ServiceBusMessage("red", application_properties={"color": "red"}),
                              ServiceBusMessage("blue", application_properties={"color": "blue"})])
    with messaging.get_subscription_receiver("events", "all", max_wait_time=WAIT) as receiver:
        receiver.dead_letter_message(receiver.receive_messages(max_wait_time=WAIT)[0])


EXPECTED_QUEUE = {"active": 3, "dead_letter": 2, "scheduled": 2, "transfer": 0,
                  "transfer_dead_letter": 0, "total": 7}
EXPECTED_SUBSCRIPTIONS = {"all": (2, 1, 3), "red": (1, 0, 1)}


def _queue_counts(runtime: object) -> dict[str, object]:
    return {key: getattr(runtime, f"{key}_message_count") for key in
            ("active", "dead_letter", "scheduled", "transfer", "transfer_dead_letter", "total")}


def test_counts_match_the_amqp_traffic(admin: ServiceBusAdministrationClient,
                                       messaging: ServiceBusClient) -> None:
    _traffic(admin, messaging)
    queue = admin.get_queue_runtime_properties("counted")
    assert _queue_counts(queue) == EXPECTED_QUEUE
    assert queue.size_in_bytes > 0
    assert queue.created_at_utc is not None and queue.accessed_at_utc is not None
    assert queue.accessed_at_utc > queue.created_at_utc
    listed = {q.name: _queue_counts(q) for q in admin.list_queues_runtime_properties()}
    assert listed == {"counted": EXPECTED_QUEUE}
    subscriptions = {
        s.name: (s.active_message_count, s.dead_letter_message_count, s.total_message_count)
        for s in admin.list_subscriptions_runtime_properties("events")}
    assert subscriptions == EXPECTED_SUBSCRIPTIONS
    topic = admin.get_topic_runtime_properties("events")
    assert topic.subscription_count == 2 and topic.size_in_bytes > 0


def test_the_asyncio_client_reads_the_same_counts(fake: FakeNamespace,
                                                  admin: ServiceBusAdministrationClient,
                                                  messaging: ServiceBusClient) -> None:
    _traffic(admin, messaging)

    async def read() -> tuple[dict[str, object], dict[str, tuple[int, int, int]]]:
        async with async_admin(fake) as client:
            queue = await client.get_queue_runtime_properties("counted")
            subscriptions = {
                s.name: (s.active_message_count, s.dead_letter_message_count,
                         s.total_message_count)
                async for s in client.list_subscriptions_runtime_properties("events")}
            return _queue_counts(queue), subscriptions

    assert asyncio.run(read()) == (EXPECTED_QUEUE, EXPECTED_SUBSCRIPTIONS)


def test_a_scheduled_message_that_comes_due_is_counted_active(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_queue("soon")
    with messaging.get_queue_sender("soon") as sender:
        sender.schedule_messages(ServiceBusMessage("soon"),
                                 datetime.now(timezone.utc) + timedelta(seconds=1))
    assert admin.get_queue_runtime_properties("soon").scheduled_message_count == 1
    wait_until(lambda: admin.get_queue_runtime_properties("soon").active_message_count == 1)
    runtime = admin.get_queue_runtime_properties("soon")
    assert (runtime.active_message_count, runtime.scheduled_message_count) == (1, 0)


def test_a_topic_counts_its_scheduled_messages_until_they_fan_out(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_topic("later")
    admin.create_subscription("later", "all")
    with messaging.get_topic_sender("later") as sender:
        sender.schedule_messages(ServiceBusMessage("soon"),
                                 datetime.now(timezone.utc) + timedelta(seconds=1))
        kept = sender.schedule_messages(ServiceBusMessage("cancelled"),
                                        datetime.now(timezone.utc) + timedelta(hours=1))
        assert admin.get_topic_runtime_properties("later").scheduled_message_count == 2
        sender.cancel_scheduled_messages(kept)
    assert admin.get_topic_runtime_properties("later").scheduled_message_count == 1
    wait_until(lambda: bool(
        admin.get_subscription_runtime_properties("later", "all").active_message_count))
    assert admin.get_subscription_runtime_properties("later", "all").active_message_count == 1
    assert admin.get_topic_runtime_properties("later").scheduled_message_count == 0
