"""What repair() asks for ahead, and no more. Transactions are declared ahead of the
batches that take them (the first while the receiver attaches, a round trip or two the
first batch would otherwise wait for after its messages came; the next while earlier
batches move), at most 8 and never more than the batches still to come; those that no
batch took are rolled back at the end. The receiver asks for no more messages than the
plan still needs, so that its detach has no credit to drain."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_mock import MockerFixture

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message, Transaction
from sbmgmt._engine import message_links
from sbmgmt.actions.repair import RepairPlan, plan_resubmit, repair
from sbmgmt.actions.repair.blocking import _Mover

COUNT = 250


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("orders")
        yield namespace


def _planned(fake: FakeNamespace, client: ManagementClient) -> RepairPlan:
    """COUNT dead letters in ``orders``, and the plan to resubmit them."""
    fake.send("orders", *[Message(body=f"m{n}".encode(), message_id=f"id-{n}")
                          for n in range(COUNT)])
    locked = fake.receive_and_lock("orders", COUNT)
    client.entity("orders").update_disposition([m.lock_token for m in locked], "suspended",
                                               dead_letter_reason="Poison")
    return plan_resubmit(client, "orders/$DeadLetterQueue")


def _all_back(client: ManagementClient) -> bool:
    """Whether every planned message is back in ``orders``, once."""
    back = sorted(m.message_id for m in client.entity("orders").peek_all())
    return back == sorted(f"id-{n}" for n in range(COUNT))


def test_each_batch_takes_one_transaction_declared_ahead(
        fake: FakeNamespace, mocker: MockerFixture) -> None:
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        plan = _planned(fake, client)
        declares = mocker.spy(Transaction, "__enter__")
        rollbacks = mocker.spy(Transaction, "rollback")
        report = repair(client, plan, batch_size=100)
        all_back = _all_back(client)
    assert report.complete and report.transactional
    assert declares.call_count == 3  # batches of 100, 100 and 50: none declared twice
    assert rollbacks.call_count == 0
    assert all_back


@pytest.mark.parametrize(("batch_size", "ahead"), [(100, 3), (10, 8)])
def test_transactions_declared_ahead_that_no_batch_took_are_rolled_back(
        fake: FakeNamespace, mocker: MockerFixture, batch_size: int, ahead: int) -> None:
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        plan = _planned(fake, client)
        client.entity("orders/$DeadLetterQueue").purge_messages()  # gone before the run
        declares = mocker.spy(Transaction, "__enter__")
        rollbacks = mocker.spy(Transaction, "rollback")
        report = repair(client, plan, batch_size=batch_size, idle_wait=0.3)
    assert report.moved == [] and len(report.not_found) == COUNT
    # one a planned batch (3 of 100 for 250 messages), at most 8 (25 batches of 10)
    assert declares.call_count == rollbacks.call_count == ahead
    assert rollbacks.spy_exception is None  # the coordinator took every rollback


def test_the_receiver_asks_for_no_more_than_the_plan_so_drains_nothing(
        fake: FakeNamespace, mocker: MockerFixture) -> None:
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        plan = _planned(fake, client)
        drains = mocker.spy(message_links, "pn_link_drain")
        report = repair(client, plan, batch_size=30)  # prefetch 120: 250 is no multiple
    assert report.complete and len(report.moved) == COUNT
    assert drains.call_count == 0


def test_a_batch_whose_transaction_was_lost_with_its_connection_declares_its_own(
        fake: FakeNamespace, mocker: MockerFixture) -> None:
    """The connection is cut once every transaction declared ahead is in: each batch then
    declares its own on the new connection instead of failing (nothing was done in them)."""
    opened = _Mover.open_receiver
    cuts: list[int] = []

    def cut_once_declared(mover: _Mover) -> object:
        if not cuts:
            for ahead in list(mover.ahead):
                ahead.result()
            cuts.append(fake.faults.close_connections())
        return opened(mover)

    mocker.patch.object(_Mover, "open_receiver", autospec=True,
                        side_effect=cut_once_declared)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        plan = _planned(fake, client)
        declares = mocker.spy(Transaction, "__enter__")
        report = repair(client, plan, batch_size=100)
        all_back = _all_back(client)
    assert cuts == [1]
    assert report.complete and not report.failed and report.transactional
    assert declares.call_count == 6  # 3 ahead, lost with the connection; 3 by the batches
    assert all_back
