"""The official azure-servicebus SDK, unmodified, against ``MockManagementNode.serve()``:
its CBS put-token, its links and its management requests reach the mock over AMQP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusServerBusyError

from sbmgmt import ops
from sbmgmt.errors import ServerBusyError
from sbmgmt.message import ReceivedMessage
from sbmgmt.testing import MockManagementNode

WHEN = datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone.utc)


@pytest.fixture
def mock() -> Iterator[MockManagementNode]:
    node = MockManagementNode()
    yield node
    node.close()
    node.verify()


def test_the_sdk_peeks_and_schedules_against_the_mock(mock: MockManagementNode) -> None:
    peeked = ReceivedMessage(body=b"hello", message_id="m-1", sequence_number=7,
                             enqueued_time=WHEN, application_properties={"colour": "red"})
    mock.add(ops.peek_message, entity="orders",
             response=ops.peek_message.Response(messages=(peeked,)))
    mock.add(ops.schedule_message, entity="orders",
             response=ops.schedule_message.Response(sequence_numbers=(42,)))
    mock.add(ops.cancel_scheduled_message, entity="orders", error=ServerBusyError)

    with ServiceBusClient.from_connection_string(mock.serve(), retry_total=0) as client:
        with client.get_queue_receiver("orders") as receiver:
            messages = receiver.peek_messages(max_message_count=5, sequence_number=7)
        with client.get_queue_sender("orders") as sender:
            numbers = sender.schedule_messages(ServiceBusMessage("later", message_id="m-2"),
                                               WHEN)
            with pytest.raises(ServiceBusServerBusyError):
                sender.cancel_scheduled_messages(42)

    assert [(str(m), m.sequence_number, m.message_id, m.application_properties)
            for m in messages] == [("hello", 7, "m-1", {b"colour": b"red"})]
    assert numbers == [42]
    peek, schedule, cancel = (call.request for call in mock.calls)
    assert peek == ops.peek_message.Request(from_sequence_number=7, message_count=5)
    assert isinstance(schedule, ops.schedule_message.Request)
    assert [(m.message_id, m.body, m.scheduled_enqueue_time) for m in schedule.messages] == [
        ("m-2", b"later", WHEN)]
    assert cancel == ops.cancel_scheduled_message.Request(sequence_numbers=(42,))
