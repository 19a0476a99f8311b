"""Nothing lost, nothing doubled: resubmit / move with the connection cut at random points.

Each round dead-letters 1,000 messages (each its own MessageId and body) and moves them
while a thread closes every client connection at random moments (between receives, sends,
settlements, declares and discharges alike). What a cut leaves locked by the dead link
comes back when its lock expires (the fake's clock is moved past the lock duration), and
the move is run again until nothing is left. Then every message is counted by MessageId and
body, in the target and in the source: each exactly once, in one place.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest

from fakes import FakeClock, FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.repair import RepairReport, plan_move, plan_resubmit, repair

MOVES = 1000
ROUNDS = 20
LOCK = timedelta(seconds=30)
SOURCE = "orders/$DeadLetterQueue"


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    # Any token: the clock jumps past a SAS token's hour, which is not what is tested here.
    namespace = FakeNamespace(clock=FakeClock(), accept_any_token=True).start()
    try:
        yield namespace
    finally:
        namespace.stop()


def _dead_letters(fake: FakeNamespace, client: ManagementClient, round_: int,
                  count: int = MOVES) -> dict[str, bytes]:
    sent = {f"r{round_}-m{i}": f"body {round_}/{i}".encode() for i in range(count)}
    fake.send("orders", *(Message(body=body, message_id=mid) for mid, body in sent.items()))
    locked = fake.receive_and_lock("orders", count)
    tokens = [m.lock_token for m in locked]
    for start in range(0, len(tokens), 500):
        client.entity("orders").update_disposition(tokens[start:start + 500], "suspended",
                                                   dead_letter_reason="Poison")
    return sent


def _cutter(fake: FakeNamespace, stop: threading.Event, rng: random.Random,
            cuts: list[int]) -> threading.Thread:
    def run() -> None:
        while not stop.wait(rng.uniform(0.005, 0.08)):
            cuts.append(fake.faults.close_connections())
    thread = threading.Thread(target=run, name="cutter", daemon=True)
    thread.start()
    return thread


def _count(client: ManagementClient, *paths: str) -> Counter[tuple[str | None, bytes]]:
    seen: Counter[tuple[str | None, bytes]] = Counter()
    for path in paths:
        for message in client.entity(path).peek_all():
            seen[(message.message_id, bytes(message.body))] += 1
    return seen


def _move_until_done(fake: FakeNamespace, client: ManagementClient, target: str | None,
                     rng: random.Random, *, transactional: bool = True,
                     cut: bool = True) -> list[RepairReport]:
    reports = []
    for _attempt in range(40):
        plan = (plan_resubmit(client, SOURCE) if target is None
                else plan_move(client, SOURCE, target))
        if not plan.items:
            return reports
        stop, cuts = threading.Event(), []
        cutter = _cutter(fake, stop, rng, cuts) if cut and _attempt < 25 else None
        try:
            reports.append(repair(client, plan, batch_size=rng.choice([10, 50, 100]),
                                  in_flight=rng.choice([1, 4, 8]), idle_wait=0.3,
                                  transactional=transactional))
        finally:
            stop.set()
            if cutter is not None:
                cutter.join()
        fake.clock.advance(LOCK.total_seconds() + 1)  # what the cuts left locked comes back
    raise AssertionError("the move did not finish in 40 attempts")


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_a_thousand_moves_cut_at_random_lose_and_double_nothing(
        fake: FakeNamespace, round_: int) -> None:
    rng = random.Random(round_)
    fake.add_queue("orders", lock_duration=LOCK)
    fake.add_queue("archive", lock_duration=LOCK)
    target = "archive" if round_ % 2 else None  # move to another queue, or resubmit
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        sent = _dead_letters(fake, client, round_)
        reports = _move_until_done(fake, client, target, rng)
        landed = _count(client, target or "orders")
        left = _count(client, SOURCE)
    expected = Counter({(mid, body): 1 for mid, body in sent.items()})
    assert left == Counter()
    assert landed == expected  # every message once, none lost, none doubled
    assert all(r.transactional and not r.duplicates for r in reports)
    moved = [seq for r in reports for seq in r.moved]
    assert len(moved) == len(set(moved)) == MOVES  # each reported moved exactly once


def test_without_transactions_a_cut_may_double_but_reports_it_and_loses_nothing(
        fake: FakeNamespace) -> None:
    """Send, then complete: a cut between the two leaves the copy in the target and the
    original in the source; the next send of it is reported as a duplicate, and a target
    with duplicate detection keeps one."""
    rng = random.Random(99)
    fake.add_queue("orders", lock_duration=LOCK)
    # A window longer than the run, whose attempts move the clock 31 s each.
    fake.add_queue("archive", lock_duration=LOCK, requires_duplicate_detection=True,
                   duplicate_detection_history_time_window=timedelta(days=1))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        sent = _dead_letters(fake, client, 0)
        reports = _move_until_done(fake, client, "archive", rng, transactional=False)
        landed = _count(client, "archive")
        left = _count(client, SOURCE)
    assert left == Counter()
    assert landed == Counter({(mid, body): 1 for mid, body in sent.items()})
    assert not any(r.transactional for r in reports)
    duplicates = [mid for r in reports for mid in r.duplicates]
    assert len(duplicates) == len(set(duplicates))
    assert set(duplicates) <= set(sent)


def test_no_cut_moves_everything_in_one_run(fake: FakeNamespace) -> None:
    fake.add_queue("orders", lock_duration=LOCK)
    fake.add_queue("archive", lock_duration=LOCK)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        sent = _dead_letters(fake, client, 0, 300)
        reports = _move_until_done(fake, client, "archive", random.Random(1), cut=False)
        landed = _count(client, "archive")
    assert len(reports) == 1
    report = reports[0]
    assert report.complete and report.planned == 300 and not report.failed
    assert report.not_found == [] and report.duplicates == []
    assert landed == Counter({(mid, body): 1 for mid, body in sent.items()})
