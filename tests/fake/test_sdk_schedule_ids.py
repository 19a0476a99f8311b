"""The official Python SDK schedules messages whose MessageId is not a string: it sends the
id as it is in the schedule-message request's ``message-id`` (a uuid for
``message_id=uuid.uuid4()``), and the service schedules them (azure-sdk-for-python's
``test_queue_schedule_multiple_messages``, ``test_queue_send_dict_messages_scheduled``,
``test_session_schedule_multiple_messages``). The fake refused with "field 'message-id'
must be a string, got UUID"."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace

WAIT = 2


def test_messages_with_uuid_ulong_and_binary_ids_are_scheduled_and_keep_their_ids(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    ids: list[str | int | uuid.UUID | bytes] = [uuid.uuid4(), uuid.uuid4(), 7, b"binary-id"]
    later = datetime.now(timezone.utc) + timedelta(minutes=5)
    with sdk.get_queue_sender("queue") as sender:
        numbers = sender.schedule_messages(
            [ServiceBusMessage(f"m{i}", message_id=mid) for i, mid in enumerate(ids)], later)
        assert len(numbers) == 4
        sender.cancel_scheduled_messages(numbers[1])
    with sdk.get_queue_receiver("queue") as receiver:
        peeked = receiver.peek_messages(max_message_count=10)
    assert [m.sequence_number for m in peeked] == [numbers[0], numbers[2], numbers[3]]
    # Each kept as it was sent (the SDK shows binary as its text).
    assert [m.message_id for m in peeked] == [ids[0], 7, "binary-id"]
    counts = fake_namespace.accounting("queue")
    assert (counts["scheduled"], counts["cancelled"]) == (3, 1)


def test_a_session_message_with_a_uuid_id_is_scheduled(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    message_id = uuid.uuid4()
    with sdk.get_queue_sender("session-queue") as sender:
        (number,) = sender.schedule_messages(
            ServiceBusMessage("s", message_id=message_id, session_id="s1"),
            datetime.now(timezone.utc))
    with sdk.get_queue_receiver("session-queue", session_id="s1",
                                max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        assert (message.sequence_number, message.message_id) == (number, message_id)
        receiver.complete_message(message)
    assert fake_namespace.accounting("session-queue")["completed"] == 1
