"""Nothing lost, nothing doubled: resubmit / move with the connection dropped at every step.

A move of a few dead-lettered messages (each its own MessageId and body) is recorded frame
by frame through a proxy (``_cutting_proxy``): the SASL exchange, open, the CBS token, the
attaches of the receiver, the senders and the transaction coordinator, the credit, every
message received, sent and completed, every declare and discharge and their outcomes, the
detaches and the close. Then the same move is made again once per frame of that record,
each time on fresh queues with the connection dropped just before that frame crosses: the
fake has had every frame before it and none after it, and the client none of the fake's
frames from then on (a cut before the fake's answer to a discharge is the commit whose
outcome is lost). What a cut leaves locked by the dead link comes back when its lock
expires (the fake's clock is moved past the lock duration), and the move is run again
until nothing is left. Then every message is counted by MessageId and body, in the target
and in the source: each exactly once, in one place.

Every step of the protocol is cut, each once, where random cuts of a long run hit the same
steps many times and others by chance. The messages are few because the steps are what is
tested: three batches of two, two in flight, so that transactions are declared ahead and
batches overlap; more messages repeat the same frames.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest

from fakes import FakeClock, FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.repair import RepairReport, plan_move, plan_resubmit, repair

from ._cutting_proxy import CuttingProxy, FrameKey

LOCK = timedelta(seconds=30)
#: A cut move: three batches of two, two batches in flight.
MOVES, BATCH, IN_FLIGHT = 6, 2, 2


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    # Any token: the clock jumps past a SAS token's hour, which is not what is tested here.
    namespace = FakeNamespace(clock=FakeClock(), accept_any_token=True).start()
    try:
        yield namespace
    finally:
        namespace.stop()


def _dead_letters(fake: FakeNamespace, client: ManagementClient, queue: str,
                  count: int) -> dict[str, bytes]:
    sent = {f"{queue}-m{i}": f"body {queue}/{i}".encode() for i in range(count)}
    fake.send(queue, *(Message(body=body, message_id=mid) for mid, body in sent.items()))
    locked = fake.receive_and_lock(queue, count)
    tokens = [m.lock_token for m in locked]
    for start in range(0, len(tokens), 500):
        client.entity(queue).update_disposition(tokens[start:start + 500], "suspended",
                                                dead_letter_reason="Poison")
    return sent


def _count(client: ManagementClient, *paths: str) -> Counter[tuple[str | None, bytes]]:
    seen: Counter[tuple[str | None, bytes]] = Counter()
    for path in paths:
        for message in client.entity(path).peek_all():
            seen[(message.message_id, bytes(message.body))] += 1
    return seen


@dataclass(frozen=True)
class _Run:
    sent: dict[str, bytes]
    reports: list[RepairReport]
    #: Counted by (MessageId, body): in the target, and left in the source.
    landed: Counter[tuple[str | None, bytes]]
    left: Counter[tuple[str | None, bytes]]
    #: What the proxy forwarded until the move was done (the client's close, after it,
    #: aside), and whether it cut.
    frames: list[FrameKey]
    cut_done: bool

    @property
    def expected(self) -> Counter[tuple[str | None, bytes]]:
        return Counter({(mid, body): 1 for mid, body in self.sent.items()})


def _cut_move(fake: FakeNamespace, client: ManagementClient, case: int, *, move: bool,
              cut: FrameKey | None, transactional: bool = True, count: int = MOVES,
              batch_size: int = BATCH, in_flight: int = IN_FLIGHT) -> _Run:
    """Dead-letter ``count`` messages on queues of this case's own, move them (to another
    queue, or back to their own: resubmit) through a proxy that drops the connection before
    the frame ``cut`` (None: it only records the frames), and run again until nothing is
    left. Without transactions the target has duplicate detection, with a window longer
    than the run (whose attempts move the clock 31 s each)."""
    orders, archive = f"orders-{case}", f"archive-{case}"
    fake.add_queue(orders, lock_duration=LOCK)
    fake.add_queue(archive, lock_duration=LOCK, requires_duplicate_detection=not transactional,
                   duplicate_detection_history_time_window=timedelta(days=1))
    sent = _dead_letters(fake, client, orders, count)
    source = f"{orders}/$DeadLetterQueue"
    reports: list[RepairReport] = []
    with CuttingProxy(fake.port, cut) as proxy, ManagementClient.from_connection_string(
            proxy.connection_string(fake.connection_string), timeout=5) as mover:
        for _attempt in range(5):
            plan = plan_move(client, source, archive) if move else plan_resubmit(client, source)
            if not plan.items:
                break
            reports.append(repair(mover, plan, batch_size=batch_size, in_flight=in_flight,
                                  idle_wait=0.05, transactional=transactional))
            fake.clock.advance(LOCK.total_seconds() + 1)  # what the cut left locked comes back
        else:
            raise AssertionError("the move did not finish in 5 attempts")
        frames, cut_done = list(proxy.frames), proxy.cut_done
    return _Run(sent, reports, _count(client, archive if move else orders), _count(client, source),
                frames, cut_done)


def _cut_at_every_frame(fake: FakeNamespace, client: ManagementClient, direction: str, *,
                        move: bool, transactional: bool = True) -> list[_Run]:
    """The move recorded, then made again once per frame it sent ``direction``, cut
    before that frame; every run, the recording first."""
    recorded = _cut_move(fake, client, 0, move=move, cut=None, transactional=transactional)
    cuts = [key for key in recorded.frames if key[0] == direction]
    runs = [recorded, *(_cut_move(fake, client, case, move=move, cut=key,
                                  transactional=transactional)
                        for case, key in enumerate(cuts, 1))]
    kinds = {key[:2] for key in cuts}
    assert {name for _, name in kinds} >= {"attach", "flow", "transfer", "disposition"}
    missed = [key for key, run in zip(cuts, runs[1:], strict=True) if not run.cut_done]
    # Every kind of frame was cut; a frame may be missing from its cut's run: how many flows
    # and dispositions a run has depends on timing (credit topped up, settlements in ranges).
    assert {key[:2] for key in cuts if key not in missed} == kinds
    assert len(missed) <= len(cuts) // 10, missed
    return runs


@pytest.mark.parametrize("direction", ["to fake", "to client"])
@pytest.mark.parametrize("move", [False, True], ids=["resubmit", "move"])
def test_a_move_cut_before_any_frame_loses_and_doubles_nothing(
        fake: FakeNamespace, move: bool, direction: str) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        runs = _cut_at_every_frame(fake, client, direction, move=move)
    for run in runs:
        assert run.left == Counter()
        assert run.landed == run.expected  # every message once, none lost, none doubled
        assert all(r.transactional and not r.duplicates for r in run.reports)
        moved = [seq for r in run.reports for seq in r.moved]
        assert len(moved) == len(set(moved)) == MOVES  # each reported moved exactly once


@pytest.mark.parametrize("direction", ["to fake", "to client"])
def test_without_transactions_a_cut_may_double_but_reports_it_and_loses_nothing(
        fake: FakeNamespace, direction: str) -> None:
    """Send, then complete: a cut between the two leaves the copy in the target and the
    original in the source; the next send of it is reported as a duplicate, and a target
    with duplicate detection keeps one."""
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        runs = _cut_at_every_frame(fake, client, direction, move=True, transactional=False)
    for run in runs:
        assert run.left == Counter()
        assert run.landed == run.expected
        assert not any(r.transactional for r in run.reports)
        duplicates = [mid for r in run.reports for mid in r.duplicates]
        assert len(duplicates) == len(set(duplicates))
        assert set(duplicates) <= set(run.sent)


def test_no_cut_moves_everything_in_one_run(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        run = _cut_move(fake, client, 0, move=True, cut=None, count=300, batch_size=50,
                        in_flight=4)
    assert len(run.reports) == 1
    report = run.reports[0]
    assert report.complete and report.planned == 300 and not report.failed
    assert report.not_found == [] and report.duplicates == []
    assert run.landed == run.expected
