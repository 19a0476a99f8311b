"""An entity created, updated or deleted through the administration API is that entity for
every AMQP client at once; links to a deleted entity are detached with amqp:not-found."""

from __future__ import annotations

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import MessagingEntityNotFoundError, ServiceBusError
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleFilter

from fakes import FakeNamespace

WAIT = 2


def test_a_queue_created_over_http_takes_messages_at_once(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_queue("fresh")
    with messaging.get_queue_sender("fresh") as sender:
        sender.send_messages(ServiceBusMessage("hello"))
    with messaging.get_queue_receiver("fresh", max_wait_time=WAIT) as receiver:
        assert [str(m) for m in receiver.receive_messages(max_wait_time=WAIT)] == ["hello"]


def test_an_update_changes_what_amqp_clients_see(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient,
        fake: FakeNamespace) -> None:
    admin.create_queue("strict")
    queue = admin.get_queue("strict")
    queue.max_delivery_count = 1
    admin.update_queue(queue)
    with messaging.get_queue_sender("strict") as sender:
        sender.send_messages(ServiceBusMessage("once"))
    with messaging.get_queue_receiver("strict", max_wait_time=WAIT) as receiver:
        receiver.abandon_message(receiver.receive_messages(max_wait_time=WAIT)[0])
    assert fake.accounting("strict")["dead_lettered"] == 1


def test_rules_created_over_http_filter_the_fan_out(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_topic("orders")
    admin.create_subscription("orders", "big")
    admin.delete_rule("orders", "big", "$Default")
    admin.create_rule("orders", "big", "big", filter=SqlRuleFilter("amount > 100"))
    with messaging.get_topic_sender("orders") as sender:
        sender.send_messages([ServiceBusMessage("small", application_properties={"amount": 5}),
                              ServiceBusMessage("large", application_properties={"amount": 500})])
    with messaging.get_subscription_receiver("orders", "big", max_wait_time=WAIT) as receiver:
        assert [str(m) for m in receiver.receive_messages(max_message_count=2,
                                                          max_wait_time=WAIT)] == ["large"]


def test_deleting_a_queue_detaches_its_receiver_with_not_found(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_queue("doomed")
    with messaging.get_queue_receiver("doomed", max_wait_time=WAIT) as receiver:
        assert receiver.receive_messages(max_wait_time=0.5) == []  # the link is attached
        admin.delete_queue("doomed")
        with pytest.raises(ServiceBusError) as detached:
            receiver.receive_messages(max_wait_time=WAIT)
    assert isinstance(detached.value, MessagingEntityNotFoundError), repr(detached.value)
    with pytest.raises(ServiceBusError), messaging.get_queue_sender("doomed") as sender:
        sender.send_messages(ServiceBusMessage("too late"))


def test_deleting_a_topic_detaches_its_subscriptions_receivers(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_topic("gone")
    admin.create_subscription("gone", "sub")
    with messaging.get_subscription_receiver("gone", "sub", max_wait_time=WAIT) as receiver:
        assert receiver.receive_messages(max_wait_time=0.5) == []
        admin.delete_topic("gone")
        with pytest.raises(ServiceBusError):
            receiver.receive_messages(max_wait_time=WAIT)


def test_sql_parameters_are_bound_for_the_fan_out(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    admin.create_topic("p")
    admin.create_subscription("p", "mine")
    admin.delete_rule("p", "mine", "$Default")
    admin.create_rule("p", "mine", "owner", filter=SqlRuleFilter(
        "owner = @owner AND note <> '@owner'", parameters={"@owner": "o'brien"}))
    with messaging.get_topic_sender("p") as sender:
        sender.send_messages([
            ServiceBusMessage("theirs", application_properties={"owner": "smith", "note": "x"}),
            ServiceBusMessage("mine", application_properties={"owner": "o'brien", "note": "x"})])
    with messaging.get_subscription_receiver("p", "mine", max_wait_time=WAIT) as receiver:
        assert [str(m) for m in receiver.receive_messages(max_message_count=2,
                                                          max_wait_time=WAIT)] == ["mine"]
