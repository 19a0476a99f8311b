"""The official Python SDK (azure-servicebus) on both ends of a resubmit: it sends the
messages and dead-letters them, sbmgmt resubmits them, and the SDK receives them again with
every property it set (and no dead-letter fields). Real time, short durations."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.repair import Selection, plan_move, plan_resubmit, repair

COUNT = 12


#: The suite's ``fake`` (tests/conftest.py) holds these two queues in this module.
pytestmark = pytest.mark.fake_namespace(queues=["orders", "archive"])


def _sdk_messages() -> list[ServiceBusMessage]:
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    return [ServiceBusMessage(
        f"order {i}", message_id=f"order-{i}", correlation_id=f"corr-{i}", subject="order",
        content_type="application/json", reply_to="replies", to="shop",
        time_to_live=timedelta(hours=1), partition_key=None,
        application_properties={"n": i, "region": "eu", "ratio": 0.5, "flag": True,
                                "when": created, "blob": b"\x00\x01"},
    ) for i in range(COUNT)]


def _dead_letter_with_the_sdk(sdk: ServiceBusClient) -> None:
    with sdk.get_queue_sender("orders") as sender:
        sender.send_messages(_sdk_messages())
    with sdk.get_queue_receiver("orders", max_wait_time=2) as receiver:
        got = 0
        while got < COUNT:
            for message in receiver.receive_messages(COUNT, max_wait_time=2):
                receiver.dead_letter_message(message, reason="Poison",
                                             error_description="bad total")
                got += 1


def _check(received: list, *, extra: dict | None = None) -> None:  # type: ignore[type-arg]
    assert sorted(str(m.message_id) for m in received) == sorted(
        f"order-{i}" for i in range(COUNT))
    for message in received:
        i = int(str(message.message_id).split("-")[1])
        assert str(message) == f"order {i}"
        assert message.correlation_id == f"corr-{i}"
        assert message.subject == "order"
        assert message.content_type == "application/json"
        assert message.reply_to == "replies"
        assert message.to == "shop"
        assert message.time_to_live == timedelta(hours=1)
        props = {k.decode() if isinstance(k, bytes) else k: v
                 for k, v in (message.application_properties or {}).items()}
        assert props["n"] == i and props["ratio"] == 0.5 and props["flag"] is True
        assert props["region"] in (b"eu", "eu")  # this SDK reads string values as bytes
        assert props["blob"] == b"\x00\x01"
        assert props["when"] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc) or \
            props["when"] == 1767323045000  # the SDK's decoding of a timestamp property
        assert message.dead_letter_reason is None
        assert message.dead_letter_error_description is None
        assert message.delivery_count == 0
        for key, value in (extra or {}).items():  # strings: as the SDK reads "region" too
            assert props[key] in (value, value.encode())


def receive_all(sdk: ServiceBusClient, queue: str,
                count: int = COUNT) -> list:  # type: ignore[type-arg]
    """Receive and complete up to ``count`` messages of ``queue`` (fewer when none comes
    for 2 s: ask for one more than expected to see a double)."""
    received = []
    with sdk.get_queue_receiver(queue, max_wait_time=2) as receiver:
        while len(received) < count:
            batch = receiver.receive_messages(COUNT, max_wait_time=2)
            if not batch:
                break
            for message in batch:
                receiver.complete_message(message)
            received += batch
    return received


def test_the_sdk_receives_resubmitted_messages_with_their_properties(
        fake: FakeNamespace) -> None:
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as sdk:
        _dead_letter_with_the_sdk(sdk)
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            report = repair(client, plan_resubmit(client, "orders/$DeadLetterQueue"))
        assert report.complete and report.moved and not report.failed
        _check(receive_all(sdk, "orders"))
        with sdk.get_queue_receiver("orders", sub_queue=ServiceBusSubQueue.DEAD_LETTER,
                                    max_wait_time=1) as dead:
            assert dead.receive_messages(1, max_wait_time=1) == []


def test_the_sdk_receives_moved_messages_with_the_properties_set(fake: FakeNamespace) -> None:
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as sdk:
        _dead_letter_with_the_sdk(sdk)
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            plan = plan_move(client, "orders/$DeadLetterQueue", "archive",
                             Selection(reason="Poison"))
            report = repair(client, plan, set_properties={"repaired": "yes"})
        assert len(report.moved) == COUNT
        _check(receive_all(sdk, "archive"), extra={"repaired": "yes"})


def test_a_namespace_without_transactions_gets_them_sent_then_completed() -> None:
    """A namespace that refuses transactions (the Basic tier, the fake's
    ``transactions=False``): the resubmit falls back to send-then-complete, says so in its
    report, and the SDK receives every message once, with its properties."""
    with FakeNamespace(transactions=False) as basic:
        basic.add_queue("orders")
        with ServiceBusClient.from_connection_string(basic.connection_string,
                                                     retry_total=0) as sdk:
            _dead_letter_with_the_sdk(sdk)
            with ManagementClient.from_connection_string(basic.connection_string) as client:
                report = repair(client, plan_resubmit(client, "orders/$DeadLetterQueue"))
            assert not report.transactional
            assert report.complete and not report.failed and not report.duplicates
            _check(receive_all(sdk, "orders"))
        assert basic.accounting("orders/$DeadLetterQueue")["dead_lettered"] == 0
