"""The official Python SDK reads the delivery annotations the service puts on every
transfer: an empty map in receive-and-delete, ``x-opt-lock-token`` in peek-lock
(azure-sdk-for-python's ``test_message_backcompat_receive_and_delete_databody``,
``test_message_backcompat_peek_lock_databody``, ``test_message_batch_backcompat``,
``test_queue_by_queue_client_conn_str_receive_handler_peeklock``). The encoded sizes are
the ones those tests assert against the service (263 and 333 bytes with the pure-Python
transport): the whole message, annotations included, is the size the service sends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusMessageBatch,
    ServiceBusReceivedMessage,
    ServiceBusReceiveMode,
)
from azure.servicebus.amqp import AmqpAnnotatedMessage

WAIT = 2


def _backcompat_message() -> ServiceBusMessage:
    """The message the SDK's backcompat tests send."""
    return ServiceBusMessage(
        body="hello", application_properties={"prop": "test"}, session_id="id_session",
        message_id="id_message", time_to_live=timedelta(seconds=30),
        content_type="content type", correlation_id="correlation", subject="github",
        partition_key="id_session", to="forward to", reply_to="reply to",
        reply_to_session_id="reply to session")


def _legacy(message: ServiceBusReceivedMessage) -> Any:
    """The SDK's deprecated ``message`` view, which its backcompat tests read."""
    with pytest.deprecated_call():
        return message.message


def test_receive_and_delete_transfers_carry_an_empty_map(sdk: ServiceBusClient) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(_backcompat_message())
    with sdk.get_queue_receiver("queue", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE,
                                max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
    legacy = _legacy(message)
    assert legacy.delivery_annotations == {}
    assert message.raw_amqp_message.delivery_annotations == {}
    assert legacy.get_message_encoded_size() == 263


def test_peek_lock_transfers_carry_the_lock_token(sdk: ServiceBusClient) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(_backcompat_message())
        batch = ServiceBusMessageBatch()
        for i in range(3):
            batch.add_message(ServiceBusMessage(f"batched-{i}"))
        sender.send_messages(batch)
    with sdk.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        received = []
        while len(received) < 4:
            received += receiver.receive_messages(max_message_count=4, max_wait_time=WAIT)
        assert _legacy(received[0]).get_message_encoded_size() == 333
        for message in received:
            token = _legacy(message).delivery_annotations[b"x-opt-lock-token"]
            assert token == message.lock_token  # the delivery tag's token, the same
            receiver.complete_message(message)


def test_a_senders_own_delivery_annotations_stay_beside_the_lock_token(
        sdk: ServiceBusClient) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(AmqpAnnotatedMessage(
            data_body=b"x", delivery_annotations={"mine": "kept"}))
    with sdk.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        annotations = message.raw_amqp_message.delivery_annotations
        assert annotations == {b"mine": b"kept", b"x-opt-lock-token": message.lock_token}
        receiver.complete_message(message)
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(AmqpAnnotatedMessage(
            data_body=b"y", delivery_annotations={"mine": "kept"}))
    with sdk.get_queue_receiver("queue", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE,
                                max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
    assert message.raw_amqp_message.delivery_annotations == {b"mine": b"kept"}
