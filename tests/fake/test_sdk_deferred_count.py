"""A deferred message's delivery count with the official Python SDK: the receive before
the defer counts, as on the service (azure-service-bus issue 375: with MaxDeliveryCount 1,
a deferred message goes to the dead-letter queue, "The delivery count is incremented each
time it is processed regardless of being deferred or not")."""

from __future__ import annotations

from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

from fakes import FakeNamespace

WAIT = 2


def test_a_message_received_then_deferred_reads_back_with_the_receive_counted(
        sdk: ServiceBusClient) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(ServiceBusMessage("later"))
    with sdk.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        assert message.delivery_count == 0
        receiver.defer_message(message)
        number = message.sequence_number
        assert number is not None
        (peeked,) = receiver.peek_messages(sequence_number=number)
        assert peeked.delivery_count == 1
        (deferred,) = receiver.receive_deferred_messages([number])
        assert deferred.delivery_count == 1
        receiver.abandon_message(deferred)  # back to deferred, one more
        (again,) = receiver.receive_deferred_messages([number])
        assert again.delivery_count == 2
        receiver.complete_message(again)


def test_a_message_deferred_at_max_delivery_count_is_dead_lettered(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    fake_namespace.add_queue("once", max_delivery_count=1)
    with sdk.get_queue_sender("once") as sender:
        sender.send_messages(ServiceBusMessage("only once"))
    with sdk.get_queue_receiver("once", max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        receiver.defer_message(message)
    counts = fake_namespace.accounting("once")
    assert (counts["deferred"], counts["dead_lettered"]) == (0, 1)
    with sdk.get_queue_receiver("once", sub_queue=ServiceBusSubQueue.DEAD_LETTER,
                                max_wait_time=WAIT) as dead_letters:
        (dead,) = dead_letters.receive_messages(max_wait_time=WAIT)
        assert (str(dead), dead.dead_letter_reason) == ("only once", "MaxDeliveryCountExceeded")
        dead_letters.complete_message(dead)
