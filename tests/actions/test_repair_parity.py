"""The asyncio repair gives the blocking one's report on the same plan (as the sync and
async clients keep one API: tests/unit/test_api_parity.py).

Both forms drive the same cores (sbmgmt/actions/repair/core.py); here each runs against
its own fake namespace filled the same way (so the sequence numbers agree), on a plan of
the same messages, and their reports and what landed, counted by MessageId and body, must
be the same.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import AsyncManagementClient, ManagementClient, Message
from sbmgmt.actions.contract import CancelToken, Outcome, Progress
from sbmgmt.actions.repair import (
    RepairPlan,
    Selection,
    plan_move,
    plan_resubmit,
    repair,
    repair_async,
)

COUNT = 230
SOURCE = "orders/$DeadLetterQueue"
Landed = Counter[tuple[str | None, bytes]]


def _filled(namespace: FakeNamespace) -> None:
    """Two thirds of COUNT messages dead-lettered in ``orders`` (half of them for another
    reason), the rest back in ``orders``; an ``archive``."""
    namespace.add_queue("orders")
    namespace.add_queue("archive")
    namespace.send("orders", *[
        Message(body=f"body {n}".encode(), message_id=f"id-{n}")
        for n in range(COUNT)])
    locked = namespace.receive_and_lock("orders", COUNT)
    with ManagementClient.from_connection_string(namespace.connection_string) as client:
        entity = client.entity("orders")
        for reason in ("Poison", "Expired"):
            tokens = [m.lock_token for m in locked
                      if (m.sequence_number or 0) % 3 == (reason == "Expired")]
            entity.update_disposition(tokens, "suspended", dead_letter_reason=reason)
        entity.update_disposition([m.lock_token for m in locked
                                   if (m.sequence_number or 0) % 3 == 2], "abandoned")


@pytest.fixture
def twins() -> Iterator[tuple[FakeNamespace, FakeNamespace]]:
    with FakeNamespace() as blocking_side, FakeNamespace() as asyncio_side:
        _filled(blocking_side)
        _filled(asyncio_side)
        yield blocking_side, asyncio_side


def _resubmit_all(client: ManagementClient) -> RepairPlan:
    return plan_resubmit(client, SOURCE)


def _move_poison(client: ManagementClient) -> RepairPlan:
    # Only the Poison ones: the Expired ones ahead of them are held and given back.
    return plan_move(client, SOURCE, "archive", Selection(reason="Poison", max_count=120))


def _move_some_twice(client: ManagementClient) -> RepairPlan:
    # Some asked-for numbers are not dead letters: the plan names them not found.
    return plan_move(client, SOURCE, "archive",
                     Selection(sequence_numbers=frozenset(range(1, 400, 4))))


PLANS: dict[str, tuple[Callable[[ManagementClient], RepairPlan], dict[str, Any]]] = {
    "resubmit in transactions": (_resubmit_all, {"batch_size": 40, "in_flight": 3}),
    "move a selection": (_move_poison, {"batch_size": 25, "in_flight": 8,
                                        "set_properties": {"fixed": True}}),
    "without transactions": (_move_some_twice, {"batch_size": 300, "transactional": False,
                                                "keep_dead_letter_fields": True}),
}


def _items(plan: RepairPlan) -> list[tuple[int, object, str, str | None]]:
    return [(item.sequence_number, item.message_id, item.target, item.dead_letter_reason)
            for item in plan.items]


def _landed(client: ManagementClient, *paths: str) -> Landed:
    seen: Landed = Counter()
    for path in paths:
        for message in client.entity(path).peek_all():
            key = message.message_id if isinstance(message.message_id, str) else None
            seen[(key, bytes(message.body))] += 1
    return seen


def _run_blocking(namespace: FakeNamespace, make_plan: Callable[[ManagementClient], RepairPlan],
                  options: dict[str, Any]) -> tuple[RepairPlan, dict[str, Any], list[Progress]]:
    told: list[Progress] = []
    with ManagementClient.from_connection_string(namespace.connection_string) as client:
        plan = make_plan(client)
        report = repair(client, plan, on_progress=told.append, **options)
    return plan, report.record(), told


def _run_asyncio(namespace: FakeNamespace, make_plan: Callable[[ManagementClient], RepairPlan],
                 options: dict[str, Any]) -> tuple[RepairPlan, dict[str, Any], list[Progress]]:
    with ManagementClient.from_connection_string(namespace.connection_string) as client:
        plan = make_plan(client)
    told: list[Progress] = []

    async def main() -> dict[str, Any]:
        async with AsyncManagementClient.from_connection_string(
                namespace.connection_string) as aclient:
            report = await repair_async(aclient, plan, on_progress=told.append, **options)
        return report.record()

    return plan, asyncio.run(main()), told


@pytest.mark.parametrize("case", list(PLANS))
def test_the_asyncio_repair_reports_what_the_blocking_one_does(
        twins: tuple[FakeNamespace, FakeNamespace], case: str) -> None:
    make_plan, options = PLANS[case]
    blocking_side, asyncio_side = twins
    plan, blocking_report, blocking_told = _run_blocking(blocking_side, make_plan, options)
    same_plan, asyncio_report, asyncio_told = _run_asyncio(asyncio_side, make_plan, options)
    assert _items(same_plan) == _items(plan) and plan.items  # the same plan, not empty
    assert asyncio_report == blocking_report
    assert blocking_report["outcome"] == "finished"
    assert blocking_report["counts"]["moved"] == len(plan.items)
    # Each told its progress after every batch, ending at everything done.
    for told in (blocking_told, asyncio_told):
        assert [p.done for p in told] == sorted(p.done for p in told)
        assert told[-1].done == told[-1].total == len(plan.items)
    # What landed and what stayed, by MessageId and body, is the same on both sides.
    targets = sorted({"orders", *plan.targets})
    with ManagementClient.from_connection_string(blocking_side.connection_string) as one, \
            ManagementClient.from_connection_string(asyncio_side.connection_string) as two:
        for path in (*targets, SOURCE):
            assert _landed(one, path) == _landed(two, path), path
        moved = _landed(one, *plan.targets)
        assert sum(moved.values()) >= len(plan.items)


@pytest.mark.parametrize("use_asyncio", [False, True])
def test_a_cancelled_repair_moves_no_new_batch_and_says_so(
        twins: tuple[FakeNamespace, FakeNamespace], use_asyncio: bool) -> None:
    """Cancelled from the first progress: the batches in flight finish, nothing new
    starts, the report's outcome is CANCELLED and counts exactly what moved."""
    namespace = twins[1] if use_asyncio else twins[0]
    cancel = CancelToken()

    def first_batch_cancels(_progress: Progress) -> None:
        cancel.cancel()

    with ManagementClient.from_connection_string(namespace.connection_string) as client:
        plan = _resubmit_all(client)
        before = sum(_landed(client, "orders").values())
        options: dict[str, Any] = {"batch_size": 10, "in_flight": 1,
                                   "on_progress": first_batch_cancels, "cancel": cancel}
        if use_asyncio:
            async def main() -> Any:
                async with AsyncManagementClient.from_connection_string(
                        namespace.connection_string) as aclient:
                    return await repair_async(aclient, plan, **options)
            report = asyncio.run(main())
        else:
            report = repair(client, plan, **options)
        back = _landed(client, "orders")
        still = _landed(client, SOURCE)
    assert report.outcome is Outcome.CANCELLED and report.cancelled
    assert 10 <= len(report.moved) < len(plan.items) and report.not_found == []
    assert sum(back.values()) == before + len(report.moved)
    assert sum(still.values()) == len(plan.items) - len(report.moved)
