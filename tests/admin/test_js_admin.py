"""The official JavaScript SDK's ServiceBusAdministrationClient (@azure/service-bus, pinned in
tests/js/package.json) against the fake's administration API, through ``tests/js/admin.mjs``.

One Node process runs every scenario; each test checks one. 7.9.5 always builds ``https://``
URLs; the script adds a pipeline policy that sends them as ``http://`` to the plain port.
Without Node or the installed SDK these tests skip, and fail under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from tests.js._node import node_with_the_pinned_sdk, run_script

WAIT = 2


def _amqp_traffic(fake: FakeNamespace) -> None:
    """On ``counted``: 5 sent, 2 dead-lettered, 1 completed, 1 scheduled an hour ahead."""
    fake.add_queue("counted")
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as client:
        with client.get_queue_sender("counted") as sender:
            sender.send_messages([ServiceBusMessage(f"m{index}") for index in range(5)])
            sender.schedule_messages(ServiceBusMessage("later"),
                                     datetime.now(timezone.utc) + timedelta(hours=1))
        with client.get_queue_receiver("counted", max_wait_time=WAIT) as receiver:
            received: list[Any] = []
            while len(received) < 3:
                received += receiver.receive_messages(3 - len(received), max_wait_time=WAIT)
            receiver.complete_message(received[0])
            for message in received[1:]:
                receiver.dead_letter_message(message)


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    node_with_the_pinned_sdk()  # before the fake starts: a missing peer skips (fails in CI)
    with FakeNamespace(http_port=0) as fake:
        _amqp_traffic(fake)
        connection_string = fake.http_connection_string
        assert connection_string is not None
        wrong = connection_string.replace("SAS_KEY_VALUE", "d3Jvbmc=")
        return run_script("admin.mjs", connection_string, wrong, "counted")


@pytest.fixture
def scenario(results: dict[str, Any]) -> Callable[[str], dict[str, Any]]:
    def get(name: str) -> dict[str, Any]:
        observed: dict[str, Any] = results[name]
        assert "error" not in observed or name == "wrongKey", observed
        return observed
    return get


def test_namespace_properties(scenario: Callable[[str], dict[str, Any]]) -> None:
    assert scenario("namespace") == {"name": "127.0.0.1", "sku": "Standard", "created": True}


def test_queues(scenario: Callable[[str], dict[str, Any]]) -> None:
    queues = scenario("queues")
    assert queues["created"] == {"name": "js-admin-q", "lockDuration": "PT30S",
                                 "maxDeliveryCount": 3, "deadLettering": True, "ttl": "P1D",
                                 "userMetadata": "made by js", "status": "Active"}
    assert queues["duplicate"]["code"] == "MessageEntityAlreadyExistsError"
    assert queues["updated"] == {"lockDuration": "PT45S", "maxDeliveryCount": 7}
    assert queues["pages"] == [["counted", "js-admin-q"], ["js-page-1", "js-page-2"],
                               ["js-page-3"]]
    assert queues["runtime"]["name"] == "js-admin-q" and queues["runtime"]["dates"]
    assert (queues["exists"], queues["existsAfterDelete"]) == (True, False)
    assert queues["getMissing"]["code"] == "MessageEntityNotFoundError"
    assert queues["deleteMissing"]["code"] == "MessageEntityNotFoundError"
    assert queues["deleteMissing"]["statusCode"] == 404


def test_topics_and_subscriptions(scenario: Callable[[str], dict[str, Any]]) -> None:
    observed = scenario("topicsAndSubscriptions")
    assert observed["topic"] == {"name": "js-admin-t", "duplicateDetection": True,
                                 "window": "PT5M"}
    assert observed["updatedTopicTtl"] == "PT1H"
    subscription = observed["subscription"]
    assert (subscription["topic"], subscription["name"], subscription["maxDeliveryCount"],
            subscription["status"]) == ("js-admin-t", "s1", 4, "Active")
    assert subscription["forwardTo"].endswith("/js-forward-target")
    assert observed["updatedMaxDeliveryCount"] == 9
    assert observed["listed"] == [["s1", False], ["s2", True]]
    assert observed["runtime"] == [["s1", 0], ["s2", 0]]
    assert observed["topicRuntime"] == {"name": "js-admin-t", "subscriptionCount": 2}
    assert observed["topics"] == ["js-admin-t"]
    assert observed["rulesOfS1"] == ["only-red"]  # the default rule the create named
    assert observed["missingSubscription"]["code"] == "MessageEntityNotFoundError"
    assert observed["topicExistsAfterDelete"] is False


def test_rules(scenario: Callable[[str], dict[str, Any]]) -> None:
    rules = scenario("rules")
    assert rules["sql"] == {"name": "sql", "filter": "color = 'blue'",
                            "action": "SET priority = 'high'"}
    assert rules["correlation"] == {"name": "correlation", "correlationId": "c-1",
                                    "subject": "orders",
                                    "properties": {"region": "eu", "size": 3}}
    assert rules["updated"] == "color = 'green'"
    assert rules["listed"] == ["$Default", "sql", "correlation"]
    assert rules["duplicate"]["code"] == "MessageEntityAlreadyExistsError"
    assert rules["missing"]["code"] == "MessageEntityNotFoundError"
    assert rules["exists"] is True


def test_runtime_counts_match_the_amqp_traffic(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    counts = scenario("counts")
    expected = {"active": 2, "deadLetter": 2, "scheduled": 1, "transfer": 0,
                "transferDeadLetter": 0, "total": 5}
    assert {key: counts["queue"][key] for key in expected} == expected
    assert counts["queue"]["sizeInBytes"] > 0
    assert counts["listed"] == [counts["queue"]]


def test_a_wrong_key_is_unauthorized(scenario: Callable[[str], dict[str, Any]]) -> None:
    error = scenario("wrongKey")["error"]
    assert (error["code"], error["statusCode"]) == ("UnauthorizedRequestError", 401)
