"""What the service refuses, refused where the official Python SDK meets it: a link at its
open (a receiver without a session on a session queue and the reverse; a sender on a
subscription), a token for an entity that does not exist at ``$cbs`` (404, which the SDK
raises as ``ServiceBusAuthenticationError``), and a message without a session id sent to a
session queue (in the service's words). The fake used to answer each attach and fail only
later (or never)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus.exceptions import ServiceBusAuthenticationError, ServiceBusError

from fakes import FakeNamespace

WAIT = 2
NO_SESSION_ID = (
    "The SessionId was not set on a message, and it cannot be sent to the entity. Entities "
    "that have session support enabled can only receive messages that have the SessionId "
    "set to a valid value.")


def test_a_receiver_without_a_session_on_a_session_queue_fails_to_open(
        sdk: ServiceBusClient) -> None:
    # test_session_by_session_client_conn_str_receive_handler_peeklock
    receiver = sdk.get_queue_receiver("session-queue", max_wait_time=WAIT)
    with pytest.raises(ServiceBusError, match="requires sessions"):
        receiver._open_with_retry()
    receiver.close()


def test_a_session_receiver_on_a_queue_without_sessions_fails_to_open(
        sdk: ServiceBusClient) -> None:
    # test_queue_by_servicebus_client_session_fail
    receiver = sdk.get_queue_receiver("queue", session_id="test", max_wait_time=WAIT)
    with pytest.raises(ServiceBusError, match="does not require sessions"):
        receiver._open_with_retry()
    receiver.close()
    with sdk.get_queue_sender("queue") as sender:  # a session id on such a queue is fine
        sender.send_messages(ServiceBusMessage("test session sender", session_id="test"))


def test_links_to_an_entity_that_does_not_exist_are_refused_at_the_token(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    # test_session_connection_failure_is_idempotent; azure-service-bus issue 304
    receiver = sdk.get_queue_receiver("THIS_IS_WRONG_ON_PURPOSE")
    with pytest.raises(ServiceBusAuthenticationError):
        receiver._open_with_retry()
    assert not receiver._running and not receiver._handler
    sender = sdk.get_queue_sender("THIS_IS_WRONG_ON_PURPOSE")
    with pytest.raises(ServiceBusAuthenticationError):
        sender._open_with_retry()
    assert not sender._running and not sender._handler
    # the same client then works with an entity that exists
    with sdk.get_queue_sender("queue") as good:
        good.send_messages(ServiceBusMessage("fine"))
    assert fake_namespace.accounting("queue")["active"] == 1


def test_a_sender_on_a_subscription_is_refused(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    sender = sdk.get_queue_sender("topic/Subscriptions/sub")
    with pytest.raises(ServiceBusError, match="amqp:not-allowed"):
        sender._open_with_retry()
    sender.close()
    assert fake_namespace.accounting("topic/Subscriptions/sub")["accepted"] == 0


def test_a_message_without_a_session_id_is_refused_by_a_session_queue(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    with sdk.get_queue_sender("session-queue") as sender:
        with pytest.raises(ServiceBusError, match=re.escape(NO_SESSION_ID)):
            sender.send_messages(ServiceBusMessage("no session"))
        with pytest.raises(ServiceBusError, match=re.escape(NO_SESSION_ID)):
            sender.send_messages([ServiceBusMessage("s", session_id="s"),
                                  ServiceBusMessage("none")])  # a batch is refused whole
        with pytest.raises(ServiceBusError, match=re.escape(NO_SESSION_ID)):
            sender.schedule_messages(ServiceBusMessage("later"),
                                     datetime.now(timezone.utc) + timedelta(minutes=5))
        sender.send_messages(ServiceBusMessage("with one", session_id="s"))
    assert fake_namespace.accounting("session-queue")["accepted"] == 1


def test_a_topics_copy_without_a_session_id_is_dead_lettered_in_a_session_subscription(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    # azure-service-bus issue 196 (the reason and description); azure-sdk-for-js PR 1153
    fake_namespace.add_subscription("topic", "sessions", requires_session=True)
    with sdk.get_topic_sender("topic") as sender:
        sender.send_messages(ServiceBusMessage("no session"))
    assert fake_namespace.accounting("topic/Subscriptions/sub")["active"] == 1
    with sdk.get_subscription_receiver("topic", "sessions", max_wait_time=WAIT,
                                       sub_queue=ServiceBusSubQueue.DEAD_LETTER) as receiver:
        (dead,) = receiver.receive_messages(max_wait_time=WAIT)
        assert (str(dead), dead.dead_letter_reason, dead.dead_letter_error_description) == (
            "no session", "Session id is null.",
            "Session enabled entity doesn't allow a message whose session identifier is "
            "null.")
        receiver.complete_message(dead)
