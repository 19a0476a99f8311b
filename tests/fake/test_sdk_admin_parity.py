"""The official Python SDK's administration client against the fake, where the SDK's own
tests (``mgmt_tests/``, run against the service and recorded) show what the service keeps
and refuses: a duplicate-detection window kept with detection off
(``test_mgmt_topic_create_with_topic_description``, ``test_mgmt_queue_update_success``),
a window over 7 days refused (``test_mgmt_topic_update_invalid``), authorization rules read
back (``test_mgmt_queue_update_success``), a queue forwarding to itself
(``test_mgmt_queue_update_dict_success``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.core.pipeline.transport import RequestsTransport
from azure.servicebus.management import (
    AccessRights,
    AuthorizationRule,
    ServiceBusAdministrationClient,
)

from fakes import FakeNamespace

WINDOW = datetime.timedelta(minutes=12)


class _PlainHttp(RequestsTransport):  # type: ignore[misc]
    """The SDK's requests sent to the fake's plain-HTTP port (docs/fake.md)."""

    def send(self, request: Any, **kwargs: Any) -> Any:
        request.url = request.url.replace("https://", "http://", 1)
        return super().send(request, **kwargs)


@pytest.fixture
def admin(fake_namespace_factory: Any) -> Iterator[ServiceBusAdministrationClient]:
    fake: FakeNamespace = fake_namespace_factory(http_port=0)
    assert fake.http_connection_string is not None
    with ServiceBusAdministrationClient.from_connection_string(
            fake.http_connection_string, transport=_PlainHttp()) as client:
        yield client


def test_a_window_set_with_detection_off_reads_back_on_topics_and_queues(
        admin: ServiceBusAdministrationClient) -> None:
    admin.create_topic("t", duplicate_detection_history_time_window=WINDOW)
    assert admin.get_topic("t").duplicate_detection_history_time_window == WINDOW
    admin.create_queue("q", duplicate_detection_history_time_window=WINDOW)
    queue = admin.get_queue("q")
    assert queue.duplicate_detection_history_time_window == WINDOW
    assert queue.requires_duplicate_detection is False
    queue.duplicate_detection_history_time_window = datetime.timedelta(minutes=12, seconds=3)
    admin.update_queue(queue)
    assert admin.get_queue("q").duplicate_detection_history_time_window == \
        datetime.timedelta(minutes=12, seconds=3)
    topic = admin.get_topic("t")
    topic.duplicate_detection_history_time_window = datetime.timedelta(minutes=16)
    admin.update_topic(topic)
    assert admin.get_topic("t").duplicate_detection_history_time_window == \
        datetime.timedelta(minutes=16)


def test_a_window_over_seven_days_is_refused(admin: ServiceBusAdministrationClient) -> None:
    topic = admin.create_topic("t")
    topic.duplicate_detection_history_time_window = datetime.timedelta(days=25)
    with pytest.raises(HttpResponseError) as refused:
        admin.update_topic(topic)
    assert refused.value.status_code == 400
    with pytest.raises(HttpResponseError):
        admin.create_queue("q", duplicate_detection_history_time_window=datetime.timedelta(
            days=8))
    admin.create_queue("q", duplicate_detection_history_time_window=datetime.timedelta(
        days=7))  # the limit itself is allowed


def test_authorization_rules_are_kept_and_read_back(
        admin: ServiceBusAdministrationClient) -> None:
    queue = admin.create_queue("q")
    queue.authorization_rules = [AuthorizationRule(
        claim_type="SharedAccessKey", claim_value="None",
        rights=[AccessRights.listen, AccessRights.send, AccessRights.manage],
        key_name="test_rule_1", primary_key="a" * 44, secondary_key="b" * 44)]
    admin.update_queue(queue)
    (rule,) = admin.get_queue("q").authorization_rules
    assert (rule.key_name, rule.claim_type, rule.rights, rule.primary_key,
            rule.secondary_key) == ("test_rule_1", "SharedAccessKey",
                                    ["Listen", "Send", "Manage"], "a" * 44, "b" * 44)
    assert rule.created_at_utc is not None and rule.modified_at_utc is not None
    topic = admin.create_topic("t", authorization_rules=[AuthorizationRule(
        claim_type="SharedAccessKey", claim_value="None", rights=[AccessRights.listen],
        key_name="listen-only", primary_key="c" * 44)])
    assert [r.key_name for r in topic.authorization_rules] == ["listen-only"]
    queue = admin.get_queue("q")
    queue.authorization_rules[0].rights = ["Everything"]
    with pytest.raises(HttpResponseError):
        admin.update_queue(queue)


def test_a_queue_may_forward_to_itself(admin: ServiceBusAdministrationClient) -> None:
    queue = admin.create_queue("fjruid")
    properties = dict(queue)
    properties["forward_to"] = "fjruid"
    properties["forward_dead_lettered_messages_to"] = "fjruid"
    admin.update_queue(properties)
    again = admin.get_queue("fjruid")
    assert again.forward_to is not None and again.forward_to.endswith("/fjruid")
    assert again.forward_dead_lettered_messages_to is not None
    assert again.forward_dead_lettered_messages_to.endswith("/fjruid")
    admin.update_queue(dict(again), forward_to=None, forward_dead_lettered_messages_to=None)
    cleared = admin.get_queue("fjruid")
    assert (cleared.forward_to, cleared.forward_dead_lettered_messages_to) == (None, None)
