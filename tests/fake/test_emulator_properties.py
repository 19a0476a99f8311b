"""The emulator's Config.json properties the fake honours (duplicate detection, forwarding of
dead-lettered messages, dead-lettering on expiry) or refuses with a ConfigError naming the
JSON path; the same options on ``add_queue`` / ``add_topic`` / ``add_subscription``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

from fakes import ConfigError, FakeClock, FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.message import Message

WAIT = 2


def _config(queues: list[dict[str, Any]], topics: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    return {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": queues,
                                           "Topics": topics or []}],
                           "Logging": {"Type": "File"}}}


def _sdk(namespace: FakeNamespace) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(namespace.connection_string, retry_total=0)


def test_duplicate_sends_within_the_window_are_accepted_and_dropped() -> None:
    config = _config([{"Name": "dedup", "Properties": {
        "RequiresDuplicateDetection": True, "DuplicateDetectionHistoryTimeWindow": "PT1M"}}])
    with FakeNamespace(config, clock=FakeClock()) as namespace, _sdk(namespace) as client:
        with client.get_queue_sender("dedup") as sender:
            sender.send_messages([ServiceBusMessage("first", message_id="same"),
                                  ServiceBusMessage("again", message_id="same"),
                                  ServiceBusMessage("other", message_id="other")])
            namespace.clock.advance(61)      # out of the window: kept again
            sender.send_messages(ServiceBusMessage("later", message_id="same"))
        with client.get_queue_receiver("dedup", max_wait_time=WAIT) as receiver:
            bodies = [str(m) for m in receiver.receive_messages(3, max_wait_time=WAIT)]
        counts = namespace.accounting("dedup")
    assert bodies == ["first", "other", "later"]
    assert (counts["accepted"], counts["duplicate"], counts["locked"]) == (4, 1, 3)


def test_a_duplicate_schedule_answers_the_kept_copys_sequence_number() -> None:
    with FakeNamespace() as namespace:
        namespace.add_queue("dedup", requires_duplicate_detection=True)
        at = datetime.now(timezone.utc) + timedelta(hours=1)
        with ManagementClient.from_connection_string(namespace.connection_string,
                                                     timeout=10) as client:
            q = client.entity("dedup")
            first = q.schedule_messages([Message(body=b"a", message_id="x")], at)
            second = q.schedule_messages([Message(body=b"b", message_id="x"),
                                          Message(body=b"c", message_id="y")], at)
            peeked = [m.body_bytes() for m in q.peek_messages(1, 10)]
        counts = namespace.accounting("dedup")
    assert first == [1] and second == [1, 2]
    assert peeked == [b"a", b"c"]
    assert (counts["scheduled"], counts["duplicate"]) == (2, 1)


def test_topic_duplicate_detection_reaches_no_subscription_twice() -> None:
    config = _config([], [{"Name": "t", "Properties": {"RequiresDuplicateDetection": True},
                           "Subscriptions": [{"Name": "s"}]}])
    with FakeNamespace(config) as namespace:
        for body in (b"1", b"2"):
            namespace.send("t", Message(body=body, message_id="m"))
        assert namespace.accounting("t")["duplicate"] == 1
        assert namespace.accounting("t/Subscriptions/s")["active"] == 1


def test_dead_lettered_messages_are_forwarded() -> None:
    config = _config([
        {"Name": "work", "Properties": {"ForwardDeadLetteredMessagesTo": "graveyard"}},
        {"Name": "graveyard"}])
    with FakeNamespace(config) as namespace, _sdk(namespace) as client:
        with client.get_queue_sender("work") as sender:
            sender.send_messages(ServiceBusMessage("poison", message_id="p"))
        with client.get_queue_receiver("work", max_wait_time=WAIT) as receiver:
            message = receiver.receive_messages(max_wait_time=WAIT)[0]
            receiver.dead_letter_message(message, reason="bad", error_description="very")
        with client.get_queue_receiver("graveyard", max_wait_time=WAIT) as receiver:
            forwarded = receiver.receive_messages(max_wait_time=WAIT)
        work = namespace.accounting("work")
        own_dlq = namespace.accounting("work/$DeadLetterQueue")
    assert [(str(m), m.message_id) for m in forwarded] == [("poison", "p")]
    assert forwarded[0].application_properties == {b"DeadLetterReason": b"bad",
                                                   b"DeadLetterErrorDescription": b"very"}
    assert work["dead_lettered"] == 1 and own_dlq["accepted"] == 0


def test_expired_messages_go_to_the_dead_letter_queue_in_real_time() -> None:
    config = _config([{"Name": "short", "Properties": {
        "DefaultMessageTimeToLive": "PT1S", "DeadLetteringOnMessageExpiration": True}}])
    with FakeNamespace(config) as namespace, _sdk(namespace) as client:
        with client.get_queue_sender("short") as sender:
            sender.send_messages(ServiceBusMessage("stale"))
        with client.get_queue_receiver("short", sub_queue=ServiceBusSubQueue.DEAD_LETTER,
                                       max_wait_time=4) as receiver:
            expired = receiver.receive_messages(max_wait_time=4)  # waits: the TTL timer feeds it
    assert [(str(m), m.dead_letter_reason) for m in expired] == [("stale", "TTLExpiredException")]


@pytest.mark.parametrize(("config", "path"), [
    (_config([{"Name": "a", "Properties": {"ForwardDeadLetteredMessagesTo": "nowhere"}}]),
     "UserConfig.Namespaces[0].Queues[0].Properties.ForwardDeadLetteredMessagesTo"),
    (_config([{"Name": "a", "Properties": {"ForwardTo": "nowhere"}}]),
     "UserConfig.Namespaces[0].Queues[0].Properties.ForwardTo"),
    (_config([], [{"Name": "t", "Subscriptions": [
        {"Name": "s", "Properties": {"RequiresDuplicateDetection": True}}]}]),
     "UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Properties.RequiresDuplicateDetection"),
    (_config([{"Name": "a", "Properties": {"RequiresDuplicateDetection": True,
                                           "DuplicateDetectionHistoryTimeWindow": "PT0S"}}]),
     "UserConfig.Namespaces[0].Queues[0].Properties.DuplicateDetectionHistoryTimeWindow"),
])
def test_what_cannot_be_honoured_is_refused_naming_the_json_path(
        config: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError, match=path.replace("[", r"\[").replace("]", r"\]")):
        FakeNamespace(config)


def test_the_programmatic_options_are_checked_and_applied() -> None:
    namespace = FakeNamespace()
    with pytest.raises(ValueError, match="duplicate_detection_history_time_window"):
        namespace.add_queue("q", requires_duplicate_detection=True,
                            duplicate_detection_history_time_window=timedelta(0))
    namespace.add_topic("t", requires_duplicate_detection=True,
                        duplicate_detection_history_time_window=timedelta(seconds=30))
    namespace.add_subscription("t", "s")
    for _ in range(2):
        namespace.send("t", Message(body=b"x", message_id="m"))
    assert namespace.accounting("t")["duplicate"] == 1
    assert namespace.accounting("t/Subscriptions/s")["active"] == 1


def test_a_topics_default_time_to_live_caps_its_copies() -> None:
    config = _config([], [{"Name": "t", "Properties": {"DefaultMessageTimeToLive": "PT10S"},
                           "Subscriptions": [{"Name": "s"}]}])
    with FakeNamespace(config, clock=FakeClock()) as namespace:
        namespace.send("t", Message(body=b"long", time_to_live=timedelta(hours=1)),
                       Message(body=b"short", time_to_live=timedelta(seconds=5)))
        namespace.clock.advance(6)
        assert namespace.accounting("t/Subscriptions/s")["expired"] == 1
        namespace.clock.advance(5)
        assert namespace.accounting("t/Subscriptions/s")["expired"] == 2
