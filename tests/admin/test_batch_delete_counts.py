"""The administration API's counts follow a batch delete sent with the official SDK's own
encoding (tests/_sdk_batch_delete.py): active and dead-letter counts, read by the official
administration client over the fake's HTTP port."""

from __future__ import annotations

from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus.management import ServiceBusAdministrationClient

from tests._sdk_batch_delete import sdk_delete_messages

WAIT = 2


def test_counts_follow_a_batch_delete(admin: ServiceBusAdministrationClient,
                                      messaging: ServiceBusClient) -> None:
    admin.create_queue("purged")
    with messaging.get_queue_sender("purged") as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(8)])
    with messaging.get_queue_receiver("purged", max_wait_time=WAIT) as receiver:
        for message in receiver.receive_messages(max_message_count=3, max_wait_time=WAIT):
            receiver.dead_letter_message(message, reason="test")
    before = admin.get_queue_runtime_properties("purged")
    assert (before.active_message_count, before.dead_letter_message_count) == (5, 3)

    with messaging.get_queue_receiver("purged") as receiver:
        assert sdk_delete_messages(receiver, 2) == 2
    middle = admin.get_queue_runtime_properties("purged")
    assert (middle.active_message_count, middle.dead_letter_message_count) == (3, 3)
    assert middle.total_message_count == 6

    with messaging.get_queue_receiver("purged", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        assert sdk_delete_messages(dlq, 100) == 3
    after = admin.get_queue_runtime_properties("purged")
    assert (after.active_message_count, after.dead_letter_message_count) == (3, 0)
    assert after.total_message_count == 3
