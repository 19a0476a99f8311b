"""``GET /metrics`` (issue 58): the page is read by prometheus-client's own parser, and its
numbers are what the official SDK sent, settled and asked for."""

from __future__ import annotations

import http.client
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from prometheus_client.parser import text_string_to_metric_families
from proton import Delivery

from fakes import FakeNamespace, Limits
from fakes._throttle import Throttle
from tests._waiting import wait_until
from tests.hostile._raw import RawPeer, authorize, message_bytes

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(http_port=0, queues=["orders"],
                                         topics={"events": ["all", "audit"]})


def _scrape(fake: FakeNamespace, query: str = "") -> tuple[str, Samples]:
    """The page's content type and every sample, by name and labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{fake.http_port}/metrics{query}") as page:
        assert page.status == 200
        content_type = page.headers["Content-Type"]
        text = page.read().decode("utf-8")
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return content_type, samples


def _entity(samples: Samples, name: str, entity: str, kind: str) -> float:
    return samples[(name, frozenset({("entity", entity), ("kind", kind)}))]


def test_the_page_counts_what_the_sdk_did(fake: FakeNamespace) -> None:
    client = ServiceBusClient.from_connection_string(fake.connection_string)
    with client:
        with client.get_queue_sender("orders") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}", message_id=f"m{i}")
                                  for i in range(6)])
            later = datetime.now(timezone.utc) + timedelta(hours=1)
            sender.schedule_messages([ServiceBusMessage("s0"), ServiceBusMessage("s1")], later)
        with client.get_topic_sender("events") as sender:
            sender.send_messages([ServiceBusMessage(f"e{i}") for i in range(3)])
        with client.get_queue_receiver("orders", max_wait_time=5) as receiver:
            assert len(receiver.peek_messages(max_message_count=10)) == 8  # scheduled too
            got: list = []
            while len(got) < 4:
                got += receiver.receive_messages(max_message_count=4 - len(got),
                                                 max_wait_time=5)
            by_id = {m.message_id: m for m in got}
            assert set(by_id) == {"m0", "m1", "m2", "m3"}
            receiver.complete_message(by_id["m0"])
            receiver.defer_message(by_id["m1"])
            receiver.dead_letter_message(by_id["m2"], reason="test")
            receiver.abandon_message(by_id["m3"])
            # one connection is open now: the receiver's
            assert wait_until(lambda: _scrape(fake)[1][("fakes_connections", frozenset())] == 1)
    assert wait_until(lambda: _scrape(fake)[1][("fakes_connections", frozenset())] == 0)
    for _ in range(2):
        with urllib.request.urlopen(f"http://127.0.0.1:{fake.http_port}/health") as health:
            assert health.status == 200

    content_type, samples = _scrape(fake)
    assert content_type.startswith("text/plain")
    queue = {name: _entity(samples, f"fakes_entity_{name}", "orders", "queue")
             for name in ("active_messages", "dead_letter_messages", "scheduled_messages",
                          "deferred_messages", "transfer_messages",
                          "transfer_dead_letter_messages", "incoming_messages_total",
                          "outgoing_messages_total")}
    # six sent, one completed, one dead-lettered: four active (the deferred and the
    # abandoned among them, as the service's ActiveMessageCount); two scheduled
    assert queue == {"active_messages": 4, "dead_letter_messages": 1, "scheduled_messages": 2,
                     "deferred_messages": 1, "transfer_messages": 0,
                     "transfer_dead_letter_messages": 0, "incoming_messages_total": 8,
                     "outgoing_messages_total": 1}
    assert _entity(samples, "fakes_entity_incoming_messages_total", "events", "topic") == 3
    for subscription in ("events/Subscriptions/all", "events/Subscriptions/audit"):
        assert _entity(samples, "fakes_entity_active_messages", subscription,
                       "subscription") == 3
        assert _entity(samples, "fakes_entity_incoming_messages_total", subscription,
                       "subscription") == 3

    def management(operation: str) -> float:
        labels = frozenset({("entity", "orders"), ("operation", operation), ("status", "200")})
        return samples.get(("fakes_management_requests_total", labels), 0)

    assert management("schedule-message") == 1
    assert management("peek-message") >= 1  # the SDK pages until a page comes back short
    assert samples[("fakes_connections_opened_total", frozenset())] >= 3
    # the two health checks (the scrapes before this one are counted too)
    health = frozenset({("method", "GET"), ("status", "200")})
    assert samples[("fakes_http_requests_total", health)] >= 2 + 1


def test_sends_past_the_throttles_credits_are_counted_as_throttled() -> None:
    # a raw peer sends past the throttle's credits without retrying (the SDKs retry
    # server-busy: tests/fake/test_tiers*.py): each refusal counted once. Ten credits in a
    # second that never ends, so that however slowly the machine sends, the rest is refused
    with FakeNamespace(http_port=0) as fake:
        fake.add_queue("orders")
        fake._store.throttle = Throttle(10, clock=lambda: 0.0)
        with RawPeer("127.0.0.1", fake.port) as peer:
            authorize(peer, "127.0.0.1", fake.port, fake.key_name, "SAS_KEY_VALUE")
            link = peer.sender("orders")
            assert peer.pump(lambda: link.credit > 0)
            deliveries = [peer.send(link, message_bytes(body=f"m{i}")) for i in range(25)]
            assert peer.pump(lambda: all(d.remote_state for d in deliveries), timeout=10)
        busy = [d for d in deliveries if d.remote_state == Delivery.REJECTED
                and d.remote.condition.name == "com.microsoft:server-busy"]
        accepted = [d for d in deliveries if d.remote_state == Delivery.ACCEPTED]
        assert (len(accepted), len(busy)) == (10, 15)
        samples = _scrape(fake)[1]
        labels = frozenset({("entity", "orders"), ("operation", "transfer")})
        assert samples[("fakes_throttled_requests_total", labels)] == len(busy)
        assert _entity(samples, "fakes_entity_incoming_messages_total", "orders",
                       "queue") == len(accepted)


def test_throttled_and_refused_requests_are_counted(fake: FakeNamespace) -> None:
    # what the fake's throttle and checks tell its log (fakes/_log.py), as they tell it
    fake.log.throttled("orders", "com.microsoft:renew-lock", "server-busy: 1,000 credits")
    fake.log.throttled("orders", "send", "server-busy: 1,000 credits")
    fake.log.throttled("orders", "send", "server-busy: 1,000 credits")
    fake.log.refused("missing", "attach", "The messaging entity 'missing' could not be found.")
    samples = _scrape(fake)[1]
    throttled = "fakes_throttled_requests_total"
    assert samples[(throttled, frozenset({("entity", "orders"), ("operation", "send")}))] == 2
    assert samples[(throttled, frozenset({("entity", "orders"),
                                          ("operation", "renew-lock")}))] == 1
    refused = frozenset({("entity", "missing"), ("request", "attach")})
    assert samples[("fakes_refused_requests_total", refused)] == 1


def test_the_page_needs_no_token_and_takes_a_query(fake: FakeNamespace) -> None:
    # no Authorization: a scraper on loopback sends none (docs/fake.md, "Metrics")
    samples = _scrape(fake, "?api-version=2021-05")[1]
    assert ("fakes_connections", frozenset()) in samples
    connection = http.client.HTTPConnection("127.0.0.1", fake.http_port or 0, timeout=10)
    try:
        connection.request("HEAD", "/metrics")
        answer = connection.getresponse()
        assert answer.status == 200
        assert answer.read() == b""
    finally:
        connection.close()


def test_an_expired_message_is_no_longer_active() -> None:
    with FakeNamespace(http_port=0) as fake:
        fake.add_queue("short", default_ttl=timedelta(seconds=30))
        with ServiceBusClient.from_connection_string(fake.connection_string) as client, \
                client.get_queue_sender("short") as sender:
            sender.send_messages(ServiceBusMessage("x"))
        assert _entity(_scrape(fake)[1], "fakes_entity_active_messages", "short", "queue") == 1
        fake.clock.advance(31)
        assert _entity(_scrape(fake)[1], "fakes_entity_active_messages", "short", "queue") == 0


def test_a_connection_past_the_limit_is_counted_as_refused() -> None:
    with FakeNamespace(http_port=0, limits=Limits(max_connections=1)) as fake:
        with RawPeer("127.0.0.1", fake.port) as first, RawPeer("127.0.0.1", fake.port) as second:
            assert first.pump(lambda: first.connection.remote_condition is None
                              and bool(first.connection.state & first.connection.REMOTE_ACTIVE))
            assert second.pump(lambda: second.connection.remote_condition is not None)
            samples = _scrape(fake)[1]
            assert samples[("fakes_connections", frozenset())] == 1
        refused = frozenset({("entity", "$namespace"), ("request", "connection")})
        assert samples[("fakes_refused_requests_total", refused)] == 1
