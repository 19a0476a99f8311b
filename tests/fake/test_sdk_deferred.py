"""The official Python SDK against the fake's deferred messages: what the service answers
for a deferred message already locked, and a session's deferred messages received under
the SDK's own session lock."""

from __future__ import annotations

import re

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusError

from fakes import FakeNamespace

WAIT = 2


def test_a_deferred_message_locked_by_another_receiver_is_refused_in_the_services_words(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(ServiceBusMessage("later"))
    with sdk.get_queue_receiver("queue", max_wait_time=WAIT) as first, \
            sdk.get_queue_receiver("queue", max_wait_time=WAIT) as second:
        (message,) = first.receive_messages(max_wait_time=WAIT)
        first.defer_message(message)
        number = message.sequence_number
        assert number is not None
        (held,) = first.receive_deferred_messages([number])
        with pytest.raises(ServiceBusError, match=re.escape(
                "Failed to lock one or more specified messages. Either the message is "
                "already locked or does not exist.")):
            second.receive_deferred_messages([number])
        first.abandon_message(held)  # back to deferred: now the other one may take it
        (again,) = second.receive_deferred_messages([number])
        second.complete_message(again)
    counts = fake_namespace.accounting("queue")
    assert (counts["deferred"], counts["completed"]) == (0, 1)


def test_a_sessions_deferred_messages_come_under_the_sdks_session_lock(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    with sdk.get_queue_sender("session-queue") as sender:
        sender.send_messages([ServiceBusMessage(f"s{i}", session_id="s") for i in range(3)])
    with sdk.get_queue_receiver("session-queue", session_id="s",
                                max_wait_time=WAIT) as receiver:
        received = receiver.receive_messages(max_message_count=3, max_wait_time=WAIT)
        for message in received:
            receiver.defer_message(message)
        numbers = [m.sequence_number or 0 for m in received]
        deferred = receiver.receive_deferred_messages(numbers)
        assert sorted(str(m) for m in deferred) == ["s0", "s1", "s2"]
        for message in deferred:
            receiver.complete_message(message)
    assert fake_namespace.accounting("session-queue")["completed"] == 3
