"""The repair library's checks (issue 56), below the front ends: what a plan says before
anything is locked, which copies a target's duplicate detection may drop, and the messages
a run did not select given back with AMQP's ``released`` outcome (not a delivery attempt:
the official SDK's test_queue_by_queue_client_conn_str_receive_handler_release_messages
holds the service to that), so they are available at once with their delivery count
unchanged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from functools import partial

import pytest
from azure.servicebus import ServiceBusClient

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.entities import admin_client, entity_properties
from sbmgmt.actions.repair import Selection, plan_move, plan_resubmit, repair
from sbmgmt.actions.targets import ORIGINAL_MESSAGE_ID, IfDuplicate, TargetCheck, at_risk
from sbmgmt.errors import DuplicatesRefusedError, NotFoundError, WrongEntityError

COUNT = 8


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders", max_delivery_count=2)
        namespace.add_queue("archive")
        namespace.add_queue("dd", requires_duplicate_detection=True,
                            duplicate_detection_history_time_window=timedelta(minutes=5))
        namespace.add_topic("events")
        namespace.add_subscription("events", "all")
        yield namespace


def _send(fake: FakeNamespace, queue: str) -> Counter[tuple[str, bytes]]:
    fake.send(queue, *(Message(body=f"b{i}".encode(), message_id=f"m{i}",
                               application_properties={"k": i}) for i in range(COUNT)))
    return Counter((f"m{i}", f"b{i}".encode()) for i in range(COUNT))


def _found(client: ManagementClient, path: str) -> Counter[tuple[str, bytes]]:
    return Counter((str(m.message_id), m.body_bytes()) for m in client.entity(path).peek_all())


def test_what_was_not_selected_is_released_available_at_once_and_not_counted(
        fake: FakeNamespace) -> None:
    sent = _send(fake, "orders")
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        for run in range(3):  # MaxDeliveryCount is 2: counted, they would be dead letters
            chosen = COUNT - 1 - run
            plan = plan_move(client, "orders", "archive", Selection(
                where=lambda m, k=chosen: m.application_properties["k"] == k))
            assert plan.held == chosen  # said before anything is locked: those ahead of it
            assert repair(client, plan).complete
            assert [m.delivery_count or 0 for m in client.entity("orders").peek_all()] == \
                [0] * chosen
        moved = Counter({(f"m{i}", f"b{i}".encode()): 1 for i in range(COUNT - 3, COUNT)})
        assert _found(client, "archive") == moved
        assert _found(client, "orders") == sent - moved
        assert not _found(client, "orders/$DeadLetterQueue")
    with ServiceBusClient.from_connection_string(fake.connection_string) as sdk, \
            sdk.get_queue_receiver("orders", max_wait_time=1) as receiver:
        got = receiver.receive_messages(COUNT, max_wait_time=1)  # not locked: at once
        assert sorted(str(m.message_id) for m in got) == [f"m{i}" for i in range(COUNT - 3)]
        assert {m.delivery_count for m in got} == {0}  # no earlier attempt counted
        for message in got:
            receiver.complete_message(message)


def test_a_missing_or_wrong_target_is_refused_before_the_source_is_read(
        fake: FakeNamespace) -> None:
    _send(fake, "orders")
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        with pytest.raises(NotFoundError, match=r"'archiv'.*does not exist"):
            plan_move(client, "nowhere", "archiv")  # the target first: the source unread
        for target in ("events/Subscriptions/all", "orders/$DeadLetterQueue", "orders"):
            with pytest.raises(WrongEntityError):
                plan_move(client, "orders", target)
        with pytest.raises(NotFoundError):
            plan_resubmit(client, "ordrs/$DeadLetterQueue")
        assert [m.delivery_count or 0 for m in client.entity("orders").peek_all()] == \
            [0] * COUNT


def test_a_subscription_read_through_the_administration_api_is_refused(
        fake: FakeNamespace) -> None:
    """A name the path does not show as a subscription (a queue named like one is not
    possible here, so the kind the administration API answers decides)."""
    assert fake.http_port is not None
    with ManagementClient.from_connection_string(fake.connection_string) as client, \
            admin_client(connection_string=fake.connection_string,
                         http_port=fake.http_port) as admin:
        plan = plan_move(client, "orders", "dd", describe=partial(entity_properties, admin))
        assert plan.checks["dd"].duplicate_detection is True
        assert plan.checks["dd"].window == timedelta(minutes=5)
        plan = plan_move(client, "orders", "archive",
                         describe=partial(entity_properties, admin))
        assert plan.checks["archive"] == TargetCheck("archive", False)


def test_the_selection_refuses_what_would_take_nothing() -> None:
    now = datetime.now(timezone.utc)
    with pytest.raises(ValueError, match="no time is both"):
        Selection(enqueued_before=now - timedelta(days=1), enqueued_after=now)
    with pytest.raises(ValueError, match="would take nothing"):
        Selection(sequence_numbers=frozenset())


def test_numbers_asked_for_and_absent_are_in_the_plan(fake: FakeNamespace) -> None:
    _send(fake, "orders")
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        plan = plan_move(client, "orders", "archive",
                         Selection(sequence_numbers=frozenset({2, 424242})))
    assert [item.sequence_number for item in plan.items] == [2]
    assert plan.not_found == (424242,)


def test_at_risk_is_safe_only_back_where_it_was_enqueued_beyond_the_window() -> None:
    check = TargetCheck("dd", True, timedelta(minutes=5))
    now = datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc)
    old, recent = now - timedelta(minutes=6), now - timedelta(minutes=4)
    assert not at_risk(check, "m", enqueued_in="dd", enqueued_time=old, now=now)
    assert at_risk(check, "m", enqueued_in="dd", enqueued_time=recent, now=now)
    assert at_risk(check, "m", enqueued_in="orders", enqueued_time=old, now=now)
    assert not at_risk(check, None, enqueued_in="orders", enqueued_time=old, now=now)
    assert not at_risk(TargetCheck("q", False), "m", enqueued_in=None, enqueued_time=None)
    assert not at_risk(TargetCheck("q", None, unread="no admin"), "m", enqueued_in=None,
                       enqueued_time=None)


@pytest.mark.parametrize("choice", list(IfDuplicate))
def test_each_choice_for_copies_the_target_would_drop(fake: FakeNamespace,
                                                      choice: IfDuplicate) -> None:
    sent = _send(fake, "orders")
    assert fake.http_port is not None
    with ManagementClient.from_connection_string(fake.connection_string) as client, \
            admin_client(connection_string=fake.connection_string,
                         http_port=fake.http_port) as admin:
        describe = partial(entity_properties, admin)
        fake.send("dd", Message(body=b"earlier", message_id="m3"))  # the target saw m3
        plan = plan_move(client, "orders", "dd", describe=describe)
        assert plan.at_risk == frozenset(range(1, COUNT + 1))
        if choice is IfDuplicate.REFUSE:
            with pytest.raises(DuplicatesRefusedError) as refused:
                repair(client, plan, if_duplicate=choice)
            assert refused.value.message_ids == tuple(f"m{i}" for i in range(COUNT))
            assert _found(client, "orders") == sent
            return
        report = repair(client, plan, if_duplicate=choice)
        in_dd = Counter((str(m.application_properties.get(ORIGINAL_MESSAGE_ID, m.message_id)),
                         m.body_bytes()) for m in client.entity("dd").peek_all())
        earlier = Counter({("m3", b"earlier"): 1})
        if choice is IfDuplicate.NEW_ID:
            assert in_dd == sent + earlier  # every one kept, m3 too
            assert len(report.new_message_ids) == COUNT
        elif choice is IfDuplicate.LEAVE:
            assert _found(client, "orders") == sent and in_dd == earlier
            assert report.left == list(range(1, COUNT + 1)) and report.complete
        else:  # SEND: the service dropped m3's copy, and the report says it may have
            assert in_dd == sent - Counter({("m3", b"b3"): 1}) + earlier
            assert "m3" in report.maybe_dropped


def test_a_transactional_batch_past_the_services_100_is_refused_before_anything_is_locked(
        fake: FakeNamespace) -> None:
    """One transaction holds at most 100 messages (the service's quota, and the fake's):
    a batch of 101 in transactions is refused before anything is locked or sent; without
    transactions a batch of 500 moves them all."""
    sent = _send(fake, "orders")
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        plan = plan_move(client, "orders", "archive")
        with pytest.raises(ValueError, match="at most 100 messages in a transaction"):
            repair(client, plan, batch_size=101)
        assert [m.delivery_count or 0 for m in client.entity("orders").peek_all()] == \
            [0] * COUNT  # nothing was locked
        assert repair(client, plan, batch_size=100).complete
        assert _found(client, "archive") == sent
        back = plan_move(client, "archive", "orders")
        report = repair(client, back, batch_size=500, transactional=False)
        assert report.complete and not report.transactional
        assert _found(client, "orders") == sent and not _found(client, "archive")
