"""Three behaviours of the service that the official SDKs' samples rely on, shown with the SDK
that relies on each, in real time: scheduling on a topic, lock renewal from several threads
(transfers whose delivery-ids arrive out of order), and accepting the next available session
when none has messages (the receiver's time-out, then ``OperationTimeoutError``)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from sbmgmt.rules import RuleDescription, SqlFilter

WAIT = 5


def _sdk(namespace: FakeNamespace) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(namespace.connection_string, retry_total=0)


def test_a_topic_sender_schedules_and_cancels_and_the_due_messages_fan_out() -> None:
    with FakeNamespace() as namespace:
        namespace.add_topic("events")
        namespace.add_subscription("events", "all")
        namespace.add_subscription("events", "red", rules=[
            RuleDescription(name="red", filter=SqlFilter(expression="colour = 'red'"))])
        with _sdk(namespace) as client:
            due = datetime.now(timezone.utc) + timedelta(seconds=1.5)
            with client.get_topic_sender("events") as sender:
                single = sender.schedule_messages(
                    ServiceBusMessage("red", application_properties={"colour": "red"}), due)
                several = sender.schedule_messages(
                    [ServiceBusMessage("blue", application_properties={"colour": "blue"}),
                     ServiceBusMessage("cancelled")], due)
                sender.cancel_scheduled_messages(several[1])
            assert namespace.accounting("events/Subscriptions/all")["active"] == 0  # not yet
            with client.get_subscription_receiver("events", "all") as receiver:
                received = receiver.receive_messages(5, max_wait_time=WAIT)
                for message in received:
                    receiver.complete_message(message)
            arrived = datetime.now(timezone.utc)
            with client.get_subscription_receiver("events", "red") as receiver:
                red = [str(m) for m in receiver.receive_messages(5, max_wait_time=2)]
        topic = namespace.accounting("events")
        scheduled = namespace.applied("events", "com.microsoft:schedule-message")
        cancelled = namespace.applied("events", "com.microsoft:cancel-scheduled-message")
    assert len(single) == 1 and len(several) == 2 and len({*single, *several}) == 3
    assert sorted(str(m) for m in received) == ["blue", "red"]
    assert arrived >= due
    assert red == ["red"]
    assert (topic["accepted"], topic["fanned_out"]) == (2, 2)
    assert (scheduled, cancelled) == (2, 1)
