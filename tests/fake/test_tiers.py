"""The service's tiers, with the official SDK: each quota refused just past it in the
service's words and allowed at it, each feature Basic lacks refused (fakes/_tiers.py).

Quotas whose real number is large (entities per namespace, subscriptions per topic, filters
per topic) are checked on a tier the test makes with a small number
(``dataclasses.replace``); one test holds the defaults to the documented numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import HttpResponseError
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import MessageSizeExceededError, ServiceBusError
from azure.servicebus.management import (
    CorrelationRuleFilter,
    ServiceBusAdministrationClient,
    SqlRuleFilter,
)

from fakes import BASIC, PREMIUM, STANDARD, FakeNamespace, Tier
from sbmgmt import CorrelationFilter, SqlFilter
from sbmgmt.cli._entities import plain_http_transport
from sbmgmt.client import ManagementClient
from sbmgmt.errors import OperationError, QuotaExceededError
from sbmgmt.message import Message
from tests._sdk_batch_delete import sdk_delete_messages

_KB = 1024


@pytest.fixture
def make() -> Iterator[type[FakeNamespace]]:
    """Start namespaces with the HTTP port (each stopped at the end)."""
    started: list[FakeNamespace] = []

    def start(**kwargs: object) -> FakeNamespace:
        namespace = FakeNamespace(http_port=0, **kwargs).start()  # type: ignore[arg-type]
        started.append(namespace)
        return namespace

    yield start  # type: ignore[misc]
    for namespace in started:
        namespace.stop()


def _admin(namespace: FakeNamespace) -> ServiceBusAdministrationClient:
    assert namespace.http_connection_string is not None
    return ServiceBusAdministrationClient.from_connection_string(
        namespace.http_connection_string, transport=plain_http_transport(), retry_total=0)


def _client(namespace: FakeNamespace) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(namespace.connection_string, retry_total=0)


def _refused(status: int, words: str, call: object, *args: object, **kwargs: object) -> None:
    with pytest.raises(HttpResponseError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    assert caught.value.status_code == status
    assert words in str(caught.value)


def test_the_defaults_are_the_documented_numbers() -> None:
    assert FakeNamespace().tier is STANDARD
    assert (STANDARD.max_message_size, PREMIUM.max_message_size) == (256 * _KB, 100 * _KB * _KB)
    assert (STANDARD.max_batch_delete, PREMIUM.max_batch_delete) == (500, 4000)
    assert (BASIC.max_entities, STANDARD.max_entities, PREMIUM.max_entities) == (
        10_000, 10_000, 1_000)
    for tier in (BASIC, STANDARD, PREMIUM):
        assert (tier.max_property_size, tier.max_header_size) == (32 * _KB, 64 * _KB)
        assert tier.max_transaction_messages == 100
        assert tier.max_subscriptions_per_topic == 2_000
        assert tier.max_sql_filters_per_topic == 2_000
        assert tier.max_correlation_filters_per_topic == 100_000
    assert (STANDARD.credits_per_second, PREMIUM.credits_per_second) == (1_000, None)
    assert not (BASIC.topics or BASIC.sessions or BASIC.transactions or BASIC.forwarding)
    assert FakeNamespace(tier="premium").max_message_size == 100 * _KB * _KB
    with pytest.raises(ValueError, match="tier must be"):
        FakeNamespace(tier="gold")


@pytest.mark.parametrize(("tier", "size", "refused"), [
    ("standard", 256 * _KB + 1, True), ("premium", 256 * _KB + 1, False)])
def test_the_message_size_is_the_tiers(make: type[FakeNamespace], tier: str, size: int,
                                       refused: bool) -> None:
    namespace = make(tier=tier)
    namespace.add_queue("q")
    with _client(namespace) as client, client.get_queue_sender("q") as sender:
        if refused:
            with pytest.raises(MessageSizeExceededError):
                sender.send_messages(ServiceBusMessage(b"x" * size))
        else:
            sender.send_messages(ServiceBusMessage(b"x" * size))
    assert namespace.accounting("q")["accepted"] == (0 if refused else 1)


def test_one_property_of_32_kb_and_a_header_of_64_kb(make: type[FakeNamespace]) -> None:
    namespace = make()
    namespace.add_queue("q")
    with _client(namespace) as client, client.get_queue_sender("q") as sender:
        with pytest.raises(MessageSizeExceededError, match=r"one property \(32768\)"):
            sender.send_messages(ServiceBusMessage(b"x", application_properties={
                "big": "p" * 40 * _KB}))
        with pytest.raises(MessageSizeExceededError, match=r"this stream \(65536\)"):
            sender.send_messages(ServiceBusMessage(b"x", application_properties={
                f"p{i}": "p" * 23 * _KB for i in range(3)}))
        # at the limits: a property of 32 KB less its encoding's 5 bytes; 60 KB in all
        sender.send_messages(ServiceBusMessage(b"a", application_properties={
            "big": "p" * (32 * _KB - 5)}))
        sender.send_messages(ServiceBusMessage(b"b", application_properties={
            f"p{i}": "p" * 20 * _KB for i in range(3)}))
    with _client(namespace) as client, client.get_queue_receiver(
            "q", max_wait_time=5) as receiver:
        got = receiver.receive_messages(max_message_count=2, max_wait_time=5)
        assert sorted(str(m) for m in got) == ["a", "b"]


@pytest.mark.parametrize(("tier", "quota"), [("standard", 500), ("premium", 4000)])
def test_the_batch_delete_quota_is_the_tiers(make: type[FakeNamespace], tier: str,
                                              quota: int) -> None:
    namespace = make(tier=tier)
    namespace.add_queue("q")
    with _client(namespace) as client, client.get_queue_receiver("q") as receiver:
        with pytest.raises(ServiceBusError,
                           match=f"Message count should be between 1 and {quota}"):
            sdk_delete_messages(receiver, quota + 1)
        assert sdk_delete_messages(receiver, quota) == 0


def test_entity_sizes_are_the_tiers_values(make: type[FakeNamespace]) -> None:
    standard, premium = make(), make(tier="premium")
    with _admin(standard) as admin:
        _refused(400, "MaxSizeInMegabytes must be one of", admin.create_queue, "q",
                 max_size_in_megabytes=100_000)
        _refused(400, "1024;2048;3072;4096;5120", admin.create_queue, "q",
                 max_size_in_megabytes=81_920)
        assert admin.create_queue("q", max_size_in_megabytes=5120).max_size_in_megabytes == 5120
        partitioned = admin.create_topic("t", max_size_in_megabytes=81_920,
                                         enable_partitioning=True)
        assert partitioned.max_size_in_megabytes == 81_920
    with _admin(premium) as admin:
        assert admin.create_queue("q", max_size_in_megabytes=81_920).max_size_in_megabytes == (
            81_920)
        _refused(400, "MaxSizeInMegabytes must be one of", admin.create_queue, "r",
                 max_size_in_megabytes=100_000)


def test_max_message_size_in_kilobytes_is_premiums_only(make: type[FakeNamespace]) -> None:
    standard, premium = make(), make(tier="premium")
    with _admin(standard) as admin:
        # the service answers 400 on a Standard namespace (the SDK's
        # test_mgmt_queue_create_with_queue_description on Standard)
        _refused(400, "can only be set when the namespace is using 'Premium' tier",
                 admin.create_queue, "q", max_message_size_in_kilobytes=1024)
        _refused(400, "'Premium' tier", admin.create_topic, "t",
                 max_message_size_in_kilobytes=1024)
        queue = admin.create_queue("q")
        admin.update_queue(queue)  # its own 256 read back and sent again is taken
    with _admin(premium) as admin:
        assert admin.create_queue(
            "q", max_message_size_in_kilobytes=102_400).max_message_size_in_kilobytes == 102_400
        _refused(400, "must be between 1024 and 102400", admin.create_queue, "r",
                 max_message_size_in_kilobytes=102_401)
        _refused(400, "must be between 1024 and 102400", admin.create_topic, "t",
                 max_message_size_in_kilobytes=1023)


def test_entities_per_namespace(make: type[FakeNamespace]) -> None:
    namespace = make(tier=dataclasses.replace(STANDARD, max_entities=3))
    namespace.add_queue("q1")
    with _admin(namespace) as admin:
        admin.create_topic("t1")
        admin.create_queue("q2")  # the third: at the quota
        _refused(403, "maximum entity count of 3", admin.create_queue, "q3")
        _refused(403, "maximum entity count of 3", admin.create_topic, "t2")
        admin.create_subscription("t1", "s")  # subscriptions are not entities of the quota
        admin.delete_queue("q2")
        admin.create_queue("q3")
    with pytest.raises(Exception, match="maximum entity count"):
        namespace.add_queue("q4")


def test_subscriptions_per_topic(make: type[FakeNamespace]) -> None:
    namespace = make(tier=dataclasses.replace(STANDARD, max_subscriptions_per_topic=2))
    namespace.add_topic("t")
    namespace.add_subscription("t", "a")
    with _admin(namespace) as admin:
        admin.create_subscription("t", "b")
        _refused(403, "the maximum of 2 subscriptions", admin.create_subscription, "t", "c")
        admin.update_subscription("t", admin.get_subscription("t", "b"))  # an update is none


def test_sql_and_correlation_filters_per_topic(make: type[FakeNamespace]) -> None:
    namespace = make(tier=dataclasses.replace(
        STANDARD, max_sql_filters_per_topic=3, max_correlation_filters_per_topic=2))
    namespace.add_topic("t")
    namespace.add_subscription("t", "a")  # its $Default (1=1) is a SQL filter
    with _admin(namespace) as admin:
        admin.create_subscription("t", "b")  # SQL filter 2
        admin.create_rule("t", "b", "sql", filter=SqlRuleFilter("n > 1"))  # 3
        _refused(403, "at most 3 SQL filters", admin.create_rule, "t", "a", "more",
                 filter=SqlRuleFilter("n > 2"))
        admin.create_rule("t", "a", "c1", filter=CorrelationRuleFilter(label="x"))
        admin.create_rule("t", "b", "c2", filter=CorrelationRuleFilter(label="y"))
        _refused(403, "at most 2 correlation filters", admin.create_rule, "t", "b", "c3",
                 filter=CorrelationRuleFilter(label="z"))
        # replacing a rule keeps the count; removing one frees a place
        admin.update_rule("t", "b", admin.get_rule("t", "b", "sql"))
        admin.delete_rule("t", "a", "c1")
        admin.create_rule("t", "b", "c3", filter=CorrelationRuleFilter(label="z"))


def test_basic_has_no_topics_sessions_duplicate_detection_forwarding_or_idle_deletion(
        make: type[FakeNamespace]) -> None:
    namespace = make(tier="basic")
    with _admin(namespace) as admin:
        _refused(400, "Topics are not supported because the namespace is using 'Basic' tier",
                 admin.create_topic, "t")
        for prop, kwargs in (("RequiresSession", {"requires_session": True}),
                             ("RequiresDuplicateDetection",
                              {"requires_duplicate_detection": True}),
                             ("AutoDeleteOnIdle",
                              {"auto_delete_on_idle": timedelta(minutes=5)})):
            _refused(400, f"The property '{prop}' cannot be set when creating a Queue because "
                     "the namespace is using 'Basic' tier", admin.create_queue, "q", **kwargs)
        admin.create_queue("target")
        _refused(400, "The property 'ForwardTo' cannot be set", admin.create_queue, "q",
                 forward_to="target")
        assert [q.name for q in admin.list_queues()] == ["target"]  # nothing half made
    with pytest.raises(Exception, match="'Basic' tier"):
        namespace.add_topic("t")
    with pytest.raises(Exception, match="'RequiresSession'"):
        namespace.add_queue("s", requires_session=True)
    assert namespace.tier is BASIC
    assert isinstance(namespace.tier, Tier)


def test_config_json_names_the_tier() -> None:
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Tier": "Premium",
                                             "Queues": [], "Topics": []}],
                             "Logging": {"Type": "Console"}}}
    assert FakeNamespace(config).tier is PREMIUM
    assert FakeNamespace(config, tier="basic").tier is BASIC  # the argument wins
    without = {"UserConfig": {**config["UserConfig"], "Namespaces": [
        {"Name": "sbemulatorns", "Queues": [], "Topics": []}]}}
    assert FakeNamespace(without).tier is STANDARD


def test_filters_added_over_amqp_count_too(make: type[FakeNamespace]) -> None:
    """add-rule on the subscription's $management node (sbmgmt's client; the official
    Python SDK adds rules over HTTP only) meets the same per-topic quota."""
    namespace = make(tier=dataclasses.replace(STANDARD, max_correlation_filters_per_topic=1))
    namespace.add_topic("t")
    namespace.add_subscription("t", "s")
    with ManagementClient.from_connection_string(namespace.connection_string,
                                                 timeout=10) as client:
        subscription = client.entity("t/Subscriptions/s")
        subscription.add_rule("one", CorrelationFilter(subject="a"))
        with pytest.raises(QuotaExceededError, match="at most 1 correlation filters") as caught:
            subscription.add_rule("two", CorrelationFilter(subject="b"))
        assert caught.value.error_condition == "amqp:resource-limit-exceeded"
        subscription.add_rule("sql", SqlFilter(expression="n > 1"))  # SQL filters: 2 of 2,000


def test_scheduled_messages_count_toward_a_transactions_100(make: type[FakeNamespace]) -> None:
    namespace = make()
    namespace.add_queue("q")
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    with ManagementClient.from_connection_string(namespace.connection_string,
                                                 timeout=10) as client:
        queue = client.entity("q")
        with pytest.raises(OperationError, match="more than 100 messages in a single transaction"
                           ), client.transaction() as txn:
            queue.schedule_messages([Message(body=b"a")] * 60, later, transaction=txn)
            queue.schedule_messages([Message(body=b"b")] * 41, later, transaction=txn)
        with client.transaction() as txn:  # at the quota: committed
            queue.schedule_messages([Message(body=b"c")] * 100, later, transaction=txn)
    assert namespace.accounting("q")["scheduled"] == 100


def test_a_premium_entity_holds_messages_to_its_own_size(make: type[FakeNamespace]) -> None:
    """"For Premium, the default maximum message size per entity is 1 MB. You can increase it
    up to 100 MB" and "Up to 1 MB for message batch" (quotas): the link says 100 MB, the
    entity refuses past its own MaxMessageSizeInKilobytes (the SDK raises the same error as
    when the link says the entity's size)."""
    namespace = make(tier="premium")
    namespace.add_queue("direct")  # FakeNamespace's queues: the default 1 MB too
    with _admin(namespace) as admin:
        assert admin.create_queue("small").max_message_size_in_kilobytes == 1024
        admin.create_queue("large", max_message_size_in_kilobytes=4096)
    with _client(namespace) as client:
        for name in ("small", "direct"):
            with client.get_queue_sender(name) as sender:
                with pytest.raises(MessageSizeExceededError):
                    sender.send_messages(ServiceBusMessage(b"x" * (_KB * _KB + 1)))
                sender.send_messages(ServiceBusMessage(b"x" * 1000 * _KB))  # under, with its header
        with client.get_queue_sender("large") as sender:
            sender.send_messages(ServiceBusMessage(b"x" * 3 * _KB * _KB))
            with pytest.raises(MessageSizeExceededError):  # a batch: 1 MB
                sender.send_messages([ServiceBusMessage(b"x" * 600 * _KB) for _ in range(2)])
    assert [namespace.accounting(q)["accepted"] for q in ("small", "direct", "large")] == [
        1, 1, 1]
