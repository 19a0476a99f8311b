"""The official Python SDK's ``released`` against the fake: a message given back with
``released`` is available again at once, its delivery count unchanged, as on the service
(azure-sdk-for-python's ``test_queue_by_queue_client_conn_str_receive_handler_release_
messages``: "release would not increase delivery count"; ``test_queue_receive_batch_
without_setting_prefetch``: every message comes back). ``modified`` (abandon) still
counts a delivery."""

from __future__ import annotations

from datetime import timedelta

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from tests._waiting import wait_until

WAIT = 2


def test_messages_that_arrive_outside_a_receive_call_come_back_at_once_uncounted(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    # A lock far longer than the test: only the release can make them available again.
    fake_namespace.add_queue("long-lock", lock_duration=timedelta(minutes=5))
    with sdk.get_queue_sender("long-lock") as sender:
        sender.send_messages([ServiceBusMessage(f"first-{i}") for i in range(3)])
        receiver = sdk.get_queue_receiver("long-lock")
        with receiver:
            got: list[str] = []
            while len(got) < 3:  # 10 credits: 7 stay on the wire after the 3 messages
                for message in receiver.receive_messages(max_message_count=10,
                                                         max_wait_time=WAIT):
                    receiver.complete_message(message)
                    got.append(str(message))
            sender.send_messages([ServiceBusMessage(f"second-{i}") for i in range(3)])
            # The fake sends them on the credit left: locked to this receiver, which is
            # in no receive call; closing it reads them and releases them, settled.
            assert wait_until(lambda: fake_namespace.accounting("long-lock")["locked"] == 3)
        assert wait_until(lambda: fake_namespace.accounting("long-lock")["active"] == 3, 5)
    with sdk.get_queue_receiver("long-lock") as again:
        back = again.receive_messages(max_message_count=3, max_wait_time=WAIT)
        assert sorted(str(m) for m in back) == [f"second-{i}" for i in range(3)]
        assert [m.delivery_count for m in back] == [0, 0, 0]
        for message in back:
            again.complete_message(message)
    assert fake_namespace.accounting("long-lock")["completed"] == 6


def test_an_unsettled_release_is_answered_released_and_an_abandon_still_counts(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages(ServiceBusMessage("m"))
    with sdk.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        (message,) = receiver.receive_messages(max_wait_time=WAIT)
        # The SDK's own call for a release, waiting for the fake's answer this time
        # (it raises unless the outcome echoed is the one it sent).
        handler = receiver._handler
        handler.settle_messages(message._delivery_id, message._delivery_tag,
                                "released", await_outcome=True, outcome_timeout=WAIT)
        (same,) = receiver.receive_messages(max_wait_time=WAIT)
        assert (str(same), same.delivery_count) == ("m", 0)
        receiver.abandon_message(same)
        (abandoned,) = receiver.receive_messages(max_wait_time=WAIT)
        assert abandoned.delivery_count == 1
        receiver.complete_message(abandoned)
    assert fake_namespace.accounting("queue")["completed"] == 1
