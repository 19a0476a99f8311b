"""The official azure-servicebus SDK against the fake namespace: session receivers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.servicebus import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusError

from fakes import FakeNamespace

WAIT = 2


@pytest.fixture
def client(fake_namespace: FakeNamespace) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as sb_client:
        with sb_client.get_queue_sender("session-queue") as sender:
            sender.send_messages([
                ServiceBusMessage("a1", session_id="a"),
                ServiceBusMessage("b1", session_id="b"),
                ServiceBusMessage("a2", session_id="a"),
            ])
        yield sb_client


def test_specific_session_gets_only_its_messages_and_state(client: ServiceBusClient) -> None:
    with client.get_queue_receiver("session-queue", session_id="a",
                                   max_wait_time=WAIT) as receiver:
        session = receiver.session
        assert session.session_id == "a"
        received = receiver.receive_messages(max_message_count=5, max_wait_time=WAIT)
        assert [str(m) for m in received] == ["a1", "a2"]
        assert session.get_state() is None
        session.set_state(b"checkpoint")
        assert session.get_state() == b"checkpoint"
        session.set_state(None)
        assert session.get_state() is None
        before = session.locked_until_utc
        after = session.renew_lock()
        assert before is not None and after >= before
        for message in received:
            receiver.complete_message(message)


def test_next_available_session(client: ServiceBusClient) -> None:
    with client.get_queue_receiver("session-queue", session_id="a", max_wait_time=WAIT), \
            client.get_queue_receiver("session-queue", session_id=NEXT_AVAILABLE_SESSION,
                                      max_wait_time=WAIT) as other:
        assert other.session.session_id == "b"
        received = other.receive_messages(max_message_count=5, max_wait_time=WAIT)
        assert [str(m) for m in received] == ["b1"]
        other.complete_message(received[0])


def test_locked_session_is_refused_to_another_receiver(client: ServiceBusClient) -> None:
    with client.get_queue_receiver("session-queue", session_id="a", max_wait_time=WAIT), \
            pytest.raises(ServiceBusError), \
            client.get_queue_receiver("session-queue", session_id="a",
                                      max_wait_time=WAIT) as second:
        second.receive_messages(max_wait_time=WAIT)


def test_peek_one_session(client: ServiceBusClient) -> None:
    with client.get_queue_receiver("session-queue", session_id="b",
                                   max_wait_time=WAIT) as receiver:
        assert [str(m) for m in receiver.peek_messages(10)] == ["b1"]


def test_receiver_without_session_is_refused(client: ServiceBusClient) -> None:
    with pytest.raises(ServiceBusError), client.get_queue_receiver(
            "session-queue", max_wait_time=WAIT) as receiver:
        receiver.receive_messages(max_wait_time=WAIT)
