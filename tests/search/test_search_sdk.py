"""The search over messages the official Python SDK sent: every body kind (data as text,
JSON, XML and binary; amqp-value; amqp-sequence), every application-property type, sessions,
scheduled, deferred and dead-lettered messages. Each condition finds exactly the messages
it should, counted by sequence number (each message's MessageId says what it is), and
none of another state.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import AsyncManagementClient, ManagementClient
from sbmgmt.actions.contract import CancelToken, Outcome, Progress
from sbmgmt.actions.deferred import settle_deferred
from sbmgmt.actions.export import write_messages
from sbmgmt.actions.repair import plan_resubmit, repair
from sbmgmt.actions.search import (
    ConditionError,
    Conditions,
    Found,
    found_selection,
    read_found,
    search,
    search_async,
    search_namespace,
    search_namespace_async,
)
from sbmgmt.errors import ServiceBusManagementError
from tests._peers import missing_peer

LATER = datetime(2040, 1, 1, tzinfo=timezone.utc)
WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
TOKEN = uuid.UUID("12345678-1234-5678-1234-567812345678")
PROPERTIES: dict[str, Any] = {"text": "välue", "int": 7, "negative": -2**31, "float": 1.5,
                              "bool": True, "bytes": b"\x00\x01", "none": None,
                              "uuid": TOKEN, "when": WHEN}

ORDER_FAILED = ('{"order": {"id": 1, "customer": {"id": 42, "name": "Ada"}, "total": 150, '
                '"status": "failed", "lines": [{"sku": "A-1", "qty": 2}]}}')
ORDER_OK = '{"order":{"id":2,"customer":{"id":7,"name":"Bob"},"total":50,"status":"ok"}}'
XML_FAILED = "<order><id>3</id><status>failed</status><total>300</total></order>"
XML_OK = "<order><id>4</id><status>ok</status><total>30</total></order>"
TEXT = "Payment for order 5 was DECLINED by the bank"
BINARY = bytes(range(32)) + b"failed"


@dataclass(frozen=True)
class Seeded:
    """The namespace, and each message's sequence number by its MessageId, per entity."""

    fake: FakeNamespace
    numbers: dict[str, dict[str, int]]

    def seq(self, entity: str, *ids: str) -> set[int]:
        return {self.numbers[entity][i] for i in ids}


def _sdk() -> Any:
    try:
        import azure.servicebus as servicebus
        import azure.servicebus.amqp  # noqa: F401  (AmqpAnnotatedMessage, below)
    except ImportError:
        missing_peer("azure-servicebus is not installed: pip install -e '.[test]'")
    return servicebus


def _send(sdk: Any, fake: FakeNamespace) -> None:
    amqp = sdk.amqp
    message = sdk.ServiceBusMessage
    with sdk.ServiceBusClient.from_connection_string(fake.connection_string,
                                                     retry_total=0) as client:
        with client.get_queue_sender("orders") as sender:
            # the two that leave the active state: deferred and dead-lettered
            sender.send_messages([message(ORDER_FAILED, message_id="deferred-json"),
                                  message("failed and dead", message_id="dead")])
        with client.get_queue_receiver("orders") as receiver:
            held: list[Any] = []
            while len(held) < 2:
                held += receiver.receive_messages(2 - len(held), max_wait_time=5)
            for got in held:
                if got.message_id == "deferred-json":
                    receiver.defer_message(got)
                else:
                    receiver.dead_letter_message(got, reason="Poison")
        with client.get_queue_sender("orders") as sender:
            sender.send_messages([
                message(ORDER_FAILED, message_id="json-failed", subject="order",
                        content_type="application/json",
                        application_properties=PROPERTIES),
                message(ORDER_OK, message_id="json-ok", subject="order",
                        application_properties={"int": 8, "text": "other"}),
                message(XML_FAILED, message_id="xml-failed", content_type="application/xml"),
                message(XML_OK, message_id="xml-ok"),
                message(TEXT, message_id="text"),
                message(BINARY, message_id="binary"),
                amqp.AmqpAnnotatedMessage(
                    value_body={"order": {"id": 6, "status": "failed", "total": 120}},
                    properties={"message_id": "value"}),
                amqp.AmqpAnnotatedMessage(sequence_body=[[7, "failed"], [8, "ok"]],
                                          properties={"message_id": "sequence"}),
            ])
            sender.schedule_messages(message(ORDER_FAILED, message_id="scheduled-json"), LATER)
        with client.get_queue_sender("session-queue") as sender:
            sender.send_messages([message(f"in {s} #{n}", message_id=f"{s}-{n}", session_id=s)
                                  for s in ("s1", "s2") for n in range(2)])


@pytest.fixture(scope="module")
def seeded() -> Iterator[Seeded]:
    sdk = _sdk()
    with FakeNamespace() as fake:
        fake.add_queue("orders")
        fake.add_queue("session-queue", requires_session=True)
        fake.add_queue("empty")
        _send(sdk, fake)
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=10) as client:
            numbers = {path: {str(m.message_id): m.sequence_number or 0
                              for m in client.entity(path).peek_all()}
                       for path in ("orders", "orders/$DeadLetterQueue", "session-queue")}
        yield Seeded(fake, numbers)


@pytest.fixture
def client(seeded: Seeded) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(seeded.fake.connection_string,
                                                 timeout=10) as management:
        yield management


def _found(client: ManagementClient, conditions: Conditions, entity: str = "orders",
           **options: Any) -> set[int]:
    found = list(search(client, entity, conditions, **options))
    numbers = [f.message.sequence_number or 0 for f in found]
    assert len(numbers) == len(set(numbers)), "a message handed out twice"
    assert numbers == sorted(numbers)
    return set(numbers)


ALL_ACTIVE = ("json-failed", "json-ok", "xml-failed", "xml-ok", "text", "binary", "value",
              "sequence")


def test_the_seeded_entities_hold_what_was_sent(seeded: Seeded) -> None:
    assert set(seeded.numbers["orders"]) == {*ALL_ACTIVE, "deferred-json", "scheduled-json"}
    assert set(seeded.numbers["orders/$DeadLetterQueue"]) == {"dead"}


@pytest.mark.parametrize(("conditions", "expected"), [
    (Conditions(), (*ALL_ACTIVE, "deferred-json", "scheduled-json")),
    # the body as the explorer shows it, any kind, case-insensitive
    (Conditions(body="FAILED"), ("json-failed", "xml-failed", "binary", "value", "sequence",
                                 "deferred-json", "scheduled-json")),
    (Conditions(body="declined by"), ("text",)),
    # JSON is shown indented: '"status": "failed"' with its space, found in the compact body
    (Conditions(body='"status": "failed"'), ("json-failed", "value", "deferred-json",
                                             "scheduled-json")),
    (Conditions(body='"name": "bob"'), ("json-ok",)),
    (Conditions(body='"status":"failed"'), ()),  # not what is shown
    (Conditions(body="<status>failed</status>"), ("xml-failed",)),
    (Conditions(body="66 61 69 6c 65 64"), ("binary",)),  # the hex dump's bytes
    (Conditions(body_regex=r"ORDER \d WAS"), ()),  # case-sensitive: 'order 5 was'
    (Conditions(body_regex=r"(?i)ORDER \d WAS"), ("text",)),
    (Conditions(body_regex=r'"total": 1\d\d'), ("json-failed", "value", "deferred-json",
                                                "scheduled-json")),
    # JSON paths (python-jsonpath, RFC 9535) on JSON and amqp-value bodies
    (Conditions(path="$.order.customer.id == 42"), ("json-failed", "deferred-json",
                                                    "scheduled-json")),
    (Conditions(path="$.order.total > 100"), ("json-failed", "value", "deferred-json",
                                              "scheduled-json")),
    (Conditions(path="$.order.status == 'ok'"), ("json-ok",)),
    (Conditions(path='$.order.lines[?@.sku == "A-1"]'), ("json-failed", "deferred-json",
                                                         "scheduled-json")),
    (Conditions(path="$.order.customer"), ("json-failed", "json-ok", "deferred-json",
                                           "scheduled-json")),
    (Conditions(path="$[0]"), ("sequence",)),  # an amqp-sequence body: its list
    # ElementTree paths on XML bodies
    (Conditions(path="status == 'failed'"), ("xml-failed",)),
    (Conditions(path="total >= 30"), ("xml-failed", "xml-ok")),
    (Conditions(path=".//id"), ("xml-failed", "xml-ok")),
    # SQL over system and application properties, every type
    (Conditions(where="sys.Label = 'order' AND int = 7"), ("json-failed",)),
    (Conditions(where="text = 'välue' AND float = 1.5 AND bool = TRUE AND negative < 0"),
     ("json-failed",)),
    (Conditions(where="EXISTS(none) AND none IS NULL"), ("json-failed",)),
    (Conditions(where="sys.MessageId LIKE 'xml-%'"), ("xml-failed", "xml-ok")),
    (Conditions(where="int >= 7"), ("json-failed", "json-ok")),
    # state
    (Conditions(states=frozenset({"deferred"})), ("deferred-json",)),
    (Conditions(states=frozenset({"scheduled"})), ("scheduled-json",)),
    (Conditions(states=frozenset({"active"})), ALL_ACTIVE),
    (Conditions(states=frozenset({"active"}), body="failed"),
     ("json-failed", "xml-failed", "binary", "value", "sequence")),
    (Conditions(states=frozenset({"deferred", "scheduled"}), path="$.order.id == 1"),
     ("deferred-json", "scheduled-json")),
    # combined
    (Conditions(body="failed", where="sys.ContentType = 'application/json'"),
     ("json-failed",)),
])
def test_each_condition_finds_exactly_its_messages(
        seeded: Seeded, client: ManagementClient, conditions: Conditions,
        expected: tuple[str, ...]) -> None:
    assert _found(client, conditions) == seeded.seq("orders", *expected)


def test_properties_of_every_type_come_back_as_sent(client: ManagementClient) -> None:
    (found,) = search(client, "orders", Conditions(where="sys.MessageId = 'json-failed'"))
    properties = dict(found.message.application_properties)
    when = properties.pop("when")  # an AMQP timestamp: milliseconds since the epoch
    assert when == int(WHEN.timestamp() * 1000)
    assert properties == {k: v for k, v in PROPERTIES.items() if k != "when"}


def test_sequence_numbers_and_enqueued_times(seeded: Seeded, client: ManagementClient) -> None:
    numbers = sorted(seeded.numbers["orders"].values())
    middle = numbers[3:6]
    assert _found(client, Conditions(from_sequence_number=middle[0],
                                     to_sequence_number=middle[-1])) == set(middle)
    everything = {f.message.sequence_number: f.message.enqueued_time
                  for f in search(client, "orders")}
    cut = everything[middle[0]]
    assert cut is not None
    after = _found(client, Conditions(enqueued_from=cut))
    assert after == {n for n, t in everything.items() if t is not None and t >= cut}
    before = _found(client, Conditions(enqueued_to=cut - timedelta(microseconds=1)))
    assert before == {n for n, t in everything.items() if t is not None and t < cut}
    assert after | before == set(everything) and not after & before


def test_the_dead_letter_queue(seeded: Seeded, client: ManagementClient) -> None:
    assert _found(client, Conditions(body="failed and"), dead_letter=True) == \
        seeded.seq("orders/$DeadLetterQueue", "dead")
    assert _found(client, Conditions(where="DeadLetterReason = 'Poison'"),
                  "orders/$DeadLetterQueue") == seeded.seq("orders/$DeadLetterQueue", "dead")
    assert _found(client, Conditions(body="failed and")) == set()


def test_sessions(seeded: Seeded, client: ManagementClient) -> None:
    assert _found(client, Conditions(session_id="s2"), "session-queue") == \
        seeded.seq("session-queue", "s2-0", "s2-1")
    assert _found(client, Conditions(session_id="s1", body="#1"), "session-queue") == \
        seeded.seq("session-queue", "s1-1")
    assert _found(client, Conditions(where="sys.SessionId = 's1'"), "session-queue") == \
        seeded.seq("session-queue", "s1-0", "s1-1")


def test_max_count_stops_the_read_and_progress_is_told(client: ManagementClient) -> None:
    told: list[Progress] = []
    matches = search(client, "orders", Conditions(body="failed"), max_count=2,
                     on_progress=told.append)
    found = list(matches)
    assert len(found) == 2
    report = matches.report
    assert told[-1].counts["found"] == 2 and told[-1].counts["entities_done"] == 1 and \
        report.entities == 1
    assert told[-1].done < 10  # stopped, not read to the end
    assert (report.found, report.read, report.outcome) == (2, told[-1].done, Outcome.FINISHED)


def test_cancel_ends_the_iterator(client: ManagementClient) -> None:
    cancel = CancelToken()
    found = []
    matches = search(client, "orders", cancel=cancel)
    for item in matches:
        found.append(item)
        cancel.cancel()
    assert len(found) == 1
    assert matches.report.outcome is Outcome.CANCELLED and matches.report.found == 1
    assert matches.report.record()["outcome"] == "cancelled"


def test_cancel_ends_a_namespace_search(client: ManagementClient) -> None:
    cancel = CancelToken()
    matches = search_namespace(client, ["orders", "session-queue"], in_flight=1,
                               cancel=cancel)
    first = next(matches)
    cancel.cancel()
    rest = list(matches)
    assert first.entity == "orders"
    assert len(rest) < 256  # at most what the readers had queued when it was cancelled
    assert matches.report.outcome is Outcome.CANCELLED


def test_a_failed_read_is_raised_and_reported(client: ManagementClient) -> None:
    matches = search(client, "missing")
    with pytest.raises(ServiceBusManagementError):
        list(matches)
    assert matches.report.outcome is Outcome.FAILED and matches.report.error


@pytest.mark.parametrize(("conditions", "named"), [
    (Conditions(where="color == 'red'"), "where"),
    (Conditions(body_regex="(unclosed"), "body_regex"),
    (Conditions(path="$.order[?"), "path"),
    (Conditions(path="/order/total"), "path"),
    (Conditions(path="order[@"), "path"),
    (Conditions(states=frozenset({"locked"})), "states"),
    (Conditions(body=""), "body"),
    (Conditions(from_sequence_number=9, to_sequence_number=3), "sequence numbers"),
    (Conditions(enqueued_from=LATER, enqueued_to=WHEN), "enqueued time"),
])
def test_a_bad_condition_is_refused_before_anything_is_sent(
        conditions: Conditions, named: str) -> None:
    class Unused:
        def entity(self, path: str) -> Any:
            raise AssertionError("nothing may be sent")

    with pytest.raises(ConditionError) as caught:
        search(Unused(), "orders", conditions)  # type: ignore[arg-type]
    assert caught.value.condition == named
    assert str(caught.value).startswith(f"{named}: ")


def test_the_namespace_with_entities_in_flight(seeded: Seeded, client: ManagementClient) -> None:
    told: list[Progress] = []
    matches = search_namespace(client, ["orders", "session-queue", "empty", "missing"],
                               Conditions(body="s1 #"), in_flight=3, on_progress=told.append)
    found = list(matches)
    assert {(f.entity, f.message.sequence_number) for f in found} == \
        {("session-queue", n) for n in seeded.seq("session-queue", "s1-0", "s1-1")}
    last, report = told[-1], matches.report
    assert (last.counts["entities_done"], report.entities) == (4, 4)
    assert [entity for entity, _ in report.failed] == ["missing"]
    assert last.counts["not_searched"] == 1
    assert last.done == len(seeded.numbers["orders"]) + len(seeded.numbers["session-queue"])
    dead = list(search_namespace(client, ["orders", "session-queue"], dead_letter=True))
    assert [(f.entity, f.message.message_id) for f in dead] == \
        [("orders/$DeadLetterQueue", "dead")]


def test_the_namespace_search_stops_at_max_count(client: ManagementClient) -> None:
    found = list(search_namespace(client, ["orders", "session-queue"], max_count=3,
                                  in_flight=2))
    assert len(found) == 3


def test_the_asyncio_searches_find_the_same(seeded: Seeded, client: ManagementClient) -> None:
    conditions = Conditions(body="failed", states=frozenset({"active"}))

    async def run() -> tuple[list[Found], list[Found]]:
        async with AsyncManagementClient.from_connection_string(
                seeded.fake.connection_string, timeout=10) as aio:
            one = [f async for f in search_async(aio, "orders", conditions)]
            many = [f async for f in search_namespace_async(
                aio, ["orders", "session-queue", "missing"], conditions,
                in_flight=2)]
        return one, many

    one, many = asyncio.run(run())
    expected = [(f.entity, f.message.sequence_number) for f in search(client, "orders",
                                                                       conditions)]
    assert [(f.entity, f.message.sequence_number) for f in one] == expected
    assert sorted((f.entity, f.message.sequence_number or 0) for f in many) == expected


def test_what_was_found_is_exported_and_read_back_as_a_selection(
        seeded: Seeded, client: ManagementClient, tmp_path: Any) -> None:
    found = list(search(client, "orders", Conditions(body="failed")))
    file = tmp_path / "found.ndjson"
    with file.open("w", encoding="utf-8") as out:
        write_messages((f.message for f in found), out)
    with file.open(encoding="utf-8") as lines:
        named = read_found(lines)
    assert named.ids == {f.message.sequence_number: f.message.message_id for f in found}
    assert named.selection() == found_selection(found) or \
        named.selection().sequence_numbers == found_selection(found).sequence_numbers


def test_a_found_selection_resubmitted_is_gone_from_the_dead_letter_queue(
        fake_namespace: FakeNamespace) -> None:
    sdk = _sdk()
    with sdk.ServiceBusClient.from_connection_string(fake_namespace.connection_string,
                                                     retry_total=0) as sb:
        with sb.get_queue_sender("queue") as sender:
            sender.send_messages([sdk.ServiceBusMessage(
                f'{{"order": {{"id": {n}, "status": "{"failed" if n % 3 == 0 else "ok"}"}}}}',
                message_id=f"order-{n}") for n in range(12)])
        with sb.get_queue_receiver("queue") as receiver:
            held: list[Any] = []
            while len(held) < 12:
                held += receiver.receive_messages(12 - len(held), max_wait_time=5)
            for message in held:
                receiver.dead_letter_message(message, reason="Poison")
    with ManagementClient.from_connection_string(fake_namespace.connection_string,
                                                 timeout=10) as client:
        found = list(search(client, "queue", Conditions(path="$.order.status == 'failed'"),
                            dead_letter=True))
        assert sorted(str(f.message.message_id) for f in found) == \
            ["order-0", "order-3", "order-6", "order-9"]
        plan = plan_resubmit(client, "queue/$DeadLetterQueue", found_selection(found))
        assert {item.sequence_number for item in plan.items} == \
            {f.message.sequence_number for f in found}
        report = repair(client, plan)
        assert report.complete and len(report.moved) == 4
        left = [m.message_id for m in client.entity("queue/$DeadLetterQueue").peek_all()]
        back = [m.message_id for m in client.entity("queue").peek_all()]
    assert sorted(str(i) for i in left) == sorted(f"order-{n}" for n in range(12)
                                                  if n % 3 != 0)
    assert sorted(str(i) for i in back) == ["order-0", "order-3", "order-6", "order-9"]


def test_found_deferred_messages_are_settled_by_the_deferred_action(
        fake_namespace: FakeNamespace) -> None:
    sdk = _sdk()
    with sdk.ServiceBusClient.from_connection_string(fake_namespace.connection_string,
                                                     retry_total=0) as sb:
        with sb.get_queue_sender("queue") as sender:
            sender.send_messages([sdk.ServiceBusMessage(f"job {n} {'failed' if n < 3 else 'ok'}",
                                                        message_id=f"job-{n}")
                                  for n in range(6)])
        with sb.get_queue_receiver("queue") as receiver:
            held: list[Any] = []
            while len(held) < 6:
                held += receiver.receive_messages(6 - len(held), max_wait_time=5)
            for message in held:
                receiver.defer_message(message)
    with ManagementClient.from_connection_string(fake_namespace.connection_string,
                                                 timeout=10) as client:
        found = list(search(client, "queue", Conditions(body="failed",
                                                        states=frozenset({"deferred"}))))
        assert sorted(str(f.message.message_id) for f in found) == ["job-0", "job-1", "job-2"]
        report = settle_deferred(client.entity("queue"), [f.message for f in found],
                                 "complete")
        assert sorted(report.settled) == sorted(f.message.sequence_number or 0 for f in found)
        assert not report.failed
        left = sorted(str(m.message_id) for m in client.entity("queue").peek_all())
    assert left == ["job-3", "job-4", "job-5"]
