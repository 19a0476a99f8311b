"""Where the fake used to differ from the service (issue 14), held with the official Python
SDK, sbmgmt's client or a raw AMQP client: the links' message size limit, not-found
wording, redelivery and due work driven by timers, and rule creation times.

Lock expiry that an SDK observes runs in real time with short locks.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import MessageSizeExceededError, ServiceBusAuthenticationError
from proton import Delivery, Message
from proton.utils import BlockingConnection

from fakes import FakeClock, FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.errors import NotFoundError
from sbmgmt.message import Message as SbMessage
from sbmgmt.rules import CorrelationFilter, RuleDescription, SqlFilter

#: What the JavaScript SDK matches to classify a reply as "entity not found".
SERVICE_NOT_FOUND = re.compile(r"The messaging entity .* could not be found.*", re.IGNORECASE)


@pytest.fixture
def raw() -> Iterator[tuple[FakeNamespace, BlockingConnection]]:
    with FakeNamespace(accept_any_token=True, max_message_size=1024) as namespace:
        namespace.add_queue("q")
        client = BlockingConnection(f"amqp://127.0.0.1:{namespace.port}",
                                    allowed_mechs="ANONYMOUS", timeout=10)
        try:
            replies = client.create_receiver("$cbs", name="cbs-replies")
            client.create_sender("$cbs", name="cbs-requests").send(Message(
                body="any token", reply_to="cbs-reply",
                properties={"operation": "put-token", "name": "q"}))
            replies.receive()
            yield namespace, client
        finally:
            client.close()


def _send(client: BlockingConnection, *chunks: bytes) -> Delivery:
    link = client.create_sender("q", name=f"sender-{uuid.uuid4()}").link
    delivery = link.delivery(b"tag")
    for chunk in chunks:
        link.stream(chunk)
    link.advance()
    client.wait(lambda: delivery.settled, msg="no outcome")
    return delivery


def test_links_advertise_the_limit_and_refuse_larger_transfers(
        raw: tuple[FakeNamespace, BlockingConnection]) -> None:
    namespace, client = raw
    link = client.create_sender("q", name="probe").link
    assert link.remote_max_message_size == 1024
    whole = Message(body=b"x" * 1500).encode()
    streamed = Message(body=b"y" * 3000).encode()
    for delivery in (_send(client, whole),
                     _send(client, streamed[:1000], streamed[1000:2000], streamed[2000:])):
        assert delivery.remote_state == Delivery.REJECTED
        assert delivery.remote.condition.name == "amqp:link:message-size-exceeded"
    assert _send(client, Message(body=b"small").encode()).remote_state == Delivery.ACCEPTED
    assert namespace.accounting("q")["accepted"] == 1     # nothing of the large ones


def test_the_python_sdk_batches_to_the_standard_tier_limit(
        fake_namespace: FakeNamespace) -> None:
    with ServiceBusClient.from_connection_string(
            fake_namespace.connection_string, retry_total=0) as client, \
            client.get_queue_sender("queue") as sender:
        assert sender.create_message_batch().max_size_in_bytes == 256 * 1024
        with pytest.raises(MessageSizeExceededError):
            sender.send_messages(ServiceBusMessage(b"z" * (300 * 1024)))
    assert fake_namespace.accounting("queue")["accepted"] == 0


def test_the_limit_is_configurable_as_premiums() -> None:
    with FakeNamespace(max_message_size=100 * 1024 * 1024) as namespace:
        namespace.add_queue("big")
        with ServiceBusClient.from_connection_string(
                namespace.connection_string, retry_total=0) as client, \
                client.get_queue_sender("big") as sender:
            sender.send_messages(ServiceBusMessage(b"z" * (300 * 1024)))
        assert namespace.accounting("big")["active"] == 1
    with pytest.raises(ValueError, match="max_message_size"):
        FakeNamespace(max_message_size=0)


def test_not_found_replies_use_the_services_wording(fake_namespace: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake_namespace.connection_string,
                                                 timeout=10) as client, \
            pytest.raises(NotFoundError) as caught:
        client.entity("topic/Subscriptions/sub").remove_rule("no-such-rule")
    assert caught.value.error_condition == "amqp:not-found"
    assert SERVICE_NOT_FOUND.match(caught.value.description or "")
    # A link to an entity that does not exist fails at its token: $cbs answers the put-token
    # 404 (azure-service-bus issue 304), which the SDK raises at the open as an
    # authentication error (its test_session_connection_failure_is_idempotent).
    with ServiceBusClient.from_connection_string(
            fake_namespace.connection_string, retry_total=0) as sdk, \
            pytest.raises(ServiceBusAuthenticationError), \
            sdk.get_queue_receiver("no-such-queue") as receiver:
        receiver.receive_messages(max_wait_time=1)


def test_an_expired_lock_is_offered_at_once_to_the_waiting_receiver() -> None:
    with FakeNamespace() as namespace:
        namespace.add_queue("q", lock_duration=timedelta(seconds=1))
        with ServiceBusClient.from_connection_string(
                namespace.connection_string, retry_total=0) as client:
            with client.get_queue_sender("q") as sender:
                sender.send_messages(ServiceBusMessage("again"))
            with client.get_queue_receiver("q", prefetch_count=0) as receiver:
                first = receiver.receive_messages(max_wait_time=2)
                # not settled: the lock expires (in real time) while this call waits
                second = receiver.receive_messages(max_wait_time=4)
    assert [m.delivery_count for m in first] == [0]
    assert [(str(m), m.delivery_count) for m in second] == [("again", 1)]


def test_a_clock_move_brings_the_next_deadline_forward() -> None:
    with FakeNamespace(clock=FakeClock()) as namespace:
        namespace.add_queue("q", lock_duration=timedelta(seconds=30))
        namespace.add_queue("other")
        namespace.send("q", SbMessage(body=b"x"))
        with ServiceBusClient.from_connection_string(
                namespace.connection_string, retry_total=0) as client, \
                client.get_queue_receiver("q", prefetch_count=0) as receiver:
            assert len(receiver.receive_messages(max_wait_time=2)) == 1
            namespace.send("other", SbMessage(body=b"y"))  # the server sets its timer
            time.sleep(0.2)                                   # for the lock: 30 s away
            namespace.clock.advance(29.5)   # the lock now expires in half a second
            # offered when due, not when the timer set before the move (30 s) fires
            again = receiver.receive_messages(max_wait_time=5)
    assert [m.delivery_count for m in again] == [1]


def test_every_rule_has_its_creation_time() -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    with FakeNamespace({"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [],
                                                       "Topics": [{
            "Name": "t", "Subscriptions": [
                {"Name": "default"},
                {"Name": "configured", "Rules": [{"Name": "red", "Properties": {
                    "FilterType": "Sql", "SqlFilter": {"SqlExpression": "color = 'red'"}}}]},
            ]}]}], "Logging": {"Type": "File"}}}) as namespace:
        namespace.add_subscription("t", "coded", rules=[
            RuleDescription(name="by-id", filter=CorrelationFilter(correlation_id="c"))])
        with ManagementClient.from_connection_string(namespace.connection_string,
                                                     timeout=10) as client:
            listed = {sub: client.entity(f"t/Subscriptions/{sub}").list_rules()
                      for sub in ("default", "configured", "coded")}
    assert [r.name for r in listed["default"]] == ["$Default"]
    assert isinstance(listed["configured"][0].filter, SqlFilter)
    for rules in listed.values():
        for rule in rules:
            assert rule.created_at is not None and rule.created_at >= before


def test_a_scheduled_message_falling_due_reaches_the_waiting_receiver() -> None:
    with FakeNamespace() as namespace:
        namespace.add_queue("q")
        with ServiceBusClient.from_connection_string(
                namespace.connection_string, retry_total=0) as client:
            with client.get_queue_sender("q") as sender:
                sender.schedule_messages(ServiceBusMessage("due"),
                                         datetime.now(timezone.utc) + timedelta(seconds=1))
            with client.get_queue_receiver("q", prefetch_count=0) as receiver:
                received = receiver.receive_messages(max_wait_time=4)  # waits across the due time
    assert [str(m) for m in received] == ["due"]
