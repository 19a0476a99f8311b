"""azure-servicebus's ServiceBusAdministrationClient (sync and asyncio), unmodified, against
the fake's administration API: every kind of entity and rule created, read, updated, listed
and deleted, with the service's errors."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.servicebus.management import (
    CorrelationRuleFilter,
    FalseRuleFilter,
    ServiceBusAdministrationClient,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
)

from fakes import FakeNamespace
from sbmgmt.cli._entities import plain_http_transport

from .conftest import async_admin

NEVER = timedelta(days=10675199, seconds=10085, microseconds=477581)


def test_namespace_properties(admin: ServiceBusAdministrationClient) -> None:
    namespace = admin.get_namespace_properties()
    assert namespace.name == "127.0.0.1"
    assert namespace.messaging_sku == "Standard"
    assert namespace.namespace_type == "Messaging"
    assert namespace.created_at_utc is not None and namespace.messaging_units is None


def test_queue_create_get_update_list_delete(admin: ServiceBusAdministrationClient) -> None:
    created = admin.create_queue(
        "orders", lock_duration=timedelta(seconds=30), max_delivery_count=3,
        default_message_time_to_live=timedelta(days=1), dead_lettering_on_message_expiration=True,
        requires_duplicate_detection=True,
        duplicate_detection_history_time_window=timedelta(minutes=5),
        user_metadata="made in a test", max_size_in_megabytes=2048, status="SendDisabled")
    assert (created.name, created.lock_duration, created.max_delivery_count) == (
        "orders", timedelta(seconds=30), 3)
    assert created.default_message_time_to_live == timedelta(days=1)
    assert created.dead_lettering_on_message_expiration and created.requires_duplicate_detection
    assert created.duplicate_detection_history_time_window == timedelta(minutes=5)
    assert (created.user_metadata, created.max_size_in_megabytes, created.status) == (
        "made in a test", 2048, "SendDisabled")
    assert created.auto_delete_on_idle == NEVER and created.availability_status == "Available"

    queue = admin.get_queue("orders")
    queue.max_delivery_count = 7
    queue.lock_duration = timedelta(seconds=45)
    queue.user_metadata = "updated"
    admin.update_queue(queue)
    updated = admin.get_queue("orders")
    assert (updated.max_delivery_count, updated.lock_duration, updated.user_metadata) == (
        7, timedelta(seconds=45), "updated")
    assert updated.requires_duplicate_detection  # kept by the full update

    admin.create_queue("a/b", requires_session=True)
    assert [q.name for q in admin.list_queues()] == ["a/b", "orders"]
    assert admin.get_queue("a/b").requires_session
    admin.delete_queue("orders")
    admin.delete_queue("a/b")
    assert list(admin.list_queues()) == []
    with pytest.raises(ResourceNotFoundError):
        admin.get_queue("orders")


def test_defaults_are_the_services(admin: ServiceBusAdministrationClient) -> None:
    queue = admin.create_queue("plain")
    assert (queue.lock_duration, queue.max_delivery_count, queue.requires_session) == (
        timedelta(seconds=60), 10, False)
    assert queue.default_message_time_to_live == NEVER
    assert queue.duplicate_detection_history_time_window == timedelta(minutes=10)
    assert (queue.max_size_in_megabytes, queue.enable_batched_operations, queue.status) == (
        1024, True, "Active")
    assert queue.forward_to is None and queue.user_metadata is None


def test_topics_and_subscriptions(admin: ServiceBusAdministrationClient) -> None:
    admin.create_queue("target")
    topic = admin.create_topic("events", default_message_time_to_live=timedelta(hours=1),
                               requires_duplicate_detection=True)
    assert topic.default_message_time_to_live == timedelta(hours=1)
    topic.default_message_time_to_live = timedelta(hours=2)
    admin.update_topic(topic)
    assert admin.get_topic("events").default_message_time_to_live == timedelta(hours=2)

    subscription = admin.create_subscription(
        "events", "audit", max_delivery_count=4, forward_to="target",
        forward_dead_lettered_messages_to="target", lock_duration=timedelta(seconds=20))
    assert subscription.forward_to is not None and subscription.forward_to.endswith("/target")
    assert subscription.forward_dead_lettered_messages_to is not None
    assert (subscription.max_delivery_count, subscription.lock_duration) == (
        4, timedelta(seconds=20))
    admin.create_subscription("events", "sessions", requires_session=True)
    subscription = admin.get_subscription("events", "audit")
    subscription.max_delivery_count = 9
    admin.update_subscription("events", subscription)
    assert admin.get_subscription("events", "audit").max_delivery_count == 9
    assert [(s.name, s.requires_session) for s in admin.list_subscriptions("events")] == [
        ("audit", False), ("sessions", True)]
    runtime = admin.get_topic_runtime_properties("events")
    assert runtime.subscription_count == 2
    assert [t.name for t in admin.list_topics()] == ["events"]

    admin.delete_subscription("events", "sessions")
    with pytest.raises(ResourceNotFoundError):
        admin.get_subscription("events", "sessions")
    admin.delete_topic("events")
    assert list(admin.list_topics()) == []
    with pytest.raises(ResourceNotFoundError):
        admin.get_subscription("events", "audit")


def test_rules(admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t")
    admin.create_subscription("t", "s")
    sql = admin.create_rule("t", "s", "sql", filter=SqlRuleFilter("color = 'red'"),
                            action=SqlRuleAction("SET priority = 'high'"))
    assert sql.filter.sql_expression == "color = 'red'"
    assert sql.action is not None and sql.action.sql_expression == "SET priority = 'high'"
    assert sql.created_at_utc is not None
    admin.create_rule("t", "s", "correlation", filter=CorrelationRuleFilter(
        correlation_id="c-1", label="orders", properties={"region": "eu", "size": 3,
                                                          "big": True, "ratio": 0.5}))
    admin.create_rule("t", "s", "never", filter=FalseRuleFilter())
    correlation = admin.get_rule("t", "s", "correlation")
    assert isinstance(correlation.filter, CorrelationRuleFilter)
    assert (correlation.filter.correlation_id, correlation.filter.label) == ("c-1", "orders")
    assert correlation.filter.properties == {"region": "eu", "size": 3, "big": True,
                                             "ratio": 0.5}
    rules = {rule.name: rule for rule in admin.list_rules("t", "s")}
    assert list(rules) == ["$Default", "sql", "correlation", "never"]
    assert isinstance(rules["$Default"].filter, TrueRuleFilter)
    assert isinstance(rules["never"].filter, FalseRuleFilter)

    sql = admin.get_rule("t", "s", "sql")
    sql.filter = SqlRuleFilter("color = 'green'")
    admin.update_rule("t", "s", sql)
    assert admin.get_rule("t", "s", "sql").filter.sql_expression == "color = 'green'"
    admin.delete_rule("t", "s", "sql")
    with pytest.raises(ResourceNotFoundError):
        admin.get_rule("t", "s", "sql")
    with pytest.raises(ResourceExistsError):
        admin.create_rule("t", "s", "never")


def test_a_bad_sql_filter_is_refused(admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t")
    admin.create_subscription("t", "s")
    with pytest.raises(HttpResponseError) as refused:
        admin.create_rule("t", "s", "bad", filter=SqlRuleFilter("color = = 'red'"))
    assert refused.value.status_code == 400


def test_existing_missing_and_unchangeable(admin: ServiceBusAdministrationClient) -> None:
    admin.create_queue("q")
    with pytest.raises(ResourceExistsError):
        admin.create_queue("q")
    with pytest.raises(ResourceExistsError):
        admin.create_topic("Q")  # names are case-insensitive, across kinds
    with pytest.raises(ResourceNotFoundError):
        admin.delete_queue("missing")
    admin.create_queue("gone")
    stale = admin.get_queue("gone")
    admin.delete_queue("gone")
    with pytest.raises(ResourceNotFoundError):
        admin.update_queue(stale)  # If-Match: * on what no longer exists
    queue = admin.get_queue("q")
    queue.requires_session = True
    with pytest.raises(HttpResponseError) as refused:
        admin.update_queue(queue)
    assert refused.value.status_code == 400
    with pytest.raises(HttpResponseError) as refused:
        admin.create_queue("forwarding", forward_to="nowhere")
    assert refused.value.status_code == 400


def test_paging_by_skip_and_top(admin: ServiceBusAdministrationClient) -> None:
    for index in range(7):
        admin.create_queue(f"q{index}")
    pages = [[q.name for q in page] for page in
             admin.list_queues(max_page_size=3).by_page()]  # type: ignore[call-arg]
    assert pages == [["q0", "q1", "q2"], ["q3", "q4", "q5"], ["q6"]]


def test_a_wrong_key_is_unauthorized(fake: FakeNamespace) -> None:
    assert fake.http_connection_string is not None
    wrong = fake.http_connection_string.replace("SAS_KEY_VALUE", "d3Jvbmc=")
    with ServiceBusAdministrationClient.from_connection_string(
            wrong, transport=plain_http_transport(), retry_total=0) as client, \
            pytest.raises(ClientAuthenticationError):
        client.create_queue("q")
    with ServiceBusAdministrationClient.from_connection_string(
            fake.http_connection_string, transport=plain_http_transport(),
            retry_total=0) as client:
        assert list(client.list_queues()) == []


def test_the_asyncio_client_does_the_same(fake: FakeNamespace) -> None:
    async def scenario() -> dict[str, object]:
        async with async_admin(fake) as client:
            await client.create_queue("aq", max_delivery_count=2)
            await client.create_topic("at")
            await client.create_subscription("at", "as")
            await client.create_rule("at", "as", "r", filter=SqlRuleFilter("a = 1"))
            queue = await client.get_queue("aq")
            queue.max_delivery_count = 5
            await client.update_queue(queue)
            seen = {
                "queues": [q.name async for q in client.list_queues()],
                "delivery": (await client.get_queue("aq")).max_delivery_count,
                "subscriptions": [s.name async for s in client.list_subscriptions("at")],
                "rules": [r.name async for r in client.list_rules("at", "as")],
                "namespace": (await client.get_namespace_properties()).name,
                "runtime": (await client.get_queue_runtime_properties("aq")).total_message_count,
            }
            await client.delete_topic("at")
            await client.delete_queue("aq")
            try:
                await client.get_queue("aq")
            except ResourceNotFoundError:
                seen["deleted"] = True
            return seen

    assert asyncio.run(scenario()) == {
        "queues": ["aq"], "delivery": 5, "subscriptions": ["as"], "rules": ["$Default", "r"],
        "namespace": "127.0.0.1", "runtime": 0, "deleted": True}


def test_sql_parameters_are_reported_as_sent(admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t")
    admin.create_subscription("t", "s")
    created = admin.create_rule(
        "t", "s", "p", filter=SqlRuleFilter("color = @color AND size > @size",
                                            parameters={"@color": "it's red", "@size": 3}),
        action=SqlRuleAction("SET tier = @tier", parameters={"@tier": "gold"}))
    assert created.filter.sql_expression == "color = @color AND size > @size"
    assert created.filter.parameters == {"@color": "it's red", "@size": 3}
    fetched = admin.get_rule("t", "s", "p")
    assert fetched.action is not None and fetched.action.parameters == {"@tier": "gold"}
    with pytest.raises(HttpResponseError) as refused:
        admin.create_rule("t", "s", "q", filter=SqlRuleFilter("a = @missing",
                                                              parameters={"@other": 1}))
    assert refused.value.status_code == 400
