"""sbmgmt.actions.purge: the plan counts what the purge deletes (one cutoff), progress is a
running total, and the report says finished, cancelled or failed with the count."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions import purge as action
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.errors import BadRequestError


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("q")
        yield namespace


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
        yield c


def test_the_plan_counts_what_the_purge_deletes(fake: FakeNamespace,
                                                client: ManagementClient) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(1200)))
    fake.send("q", Message(body=b"later", scheduled_enqueue_time=datetime.now(timezone.utc)
                           + timedelta(hours=1)))
    locked = fake.receive_and_lock("q", 2)
    q = client.entity("q")
    job = action.plan(q)
    assert job.eligible == 1200  # the two locked ones are counted: the service can't tell
    fake.clock.advance(1.0)
    fake.send("q", Message(body=b"after the plan"))
    totals: list[int] = []
    report = action.purge(q, job, on_progress=totals.append)
    assert report.outcome is action.PurgeOutcome.FINISHED
    assert report.deleted == 1198 == totals[-1]
    assert totals == sorted(totals)
    assert report.as_record()["deleted"] == 1198 and report.before == job.before
    counts = fake.accounting("q")
    assert (counts["active"], counts["locked"], counts["scheduled"]) == (1, 2, 1)
    assert len(locked) == 2


def test_max_count_caps_the_plan_and_the_purge(fake: FakeNamespace,
                                               client: ManagementClient) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(50)))
    q = client.entity("q")
    job = action.plan(q, max_count=20)
    assert job.eligible == 20
    assert action.purge(q, job, batch_size=7).deleted == 20
    assert fake.accounting("q")["active"] == 30


def test_a_cancelled_purge_reports_its_count(fake: FakeNamespace,
                                             client: ManagementClient) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(3000)))
    q = client.entity("q")
    cancel = threading.Event()

    def stop(total: int) -> None:
        if total >= 300:
            cancel.set()

    # Batches of 10: at most 1 + 32 requests (330 messages) are out when the cancel is set,
    # so the purge cannot finish the 3,000 first (with 100 a batch it could, on a fast turn).
    report = action.purge(q, action.plan(q), batch_size=10, on_progress=stop, cancel=cancel)
    assert report.outcome is action.PurgeOutcome.CANCELLED
    assert report.deleted == fake.accounting("q")["deleted"] >= 300
    assert report.error is None


def test_a_failed_purge_reports_the_error(fake: FakeNamespace, client: ManagementClient) -> None:
    fake.send("q", Message(body=b"x"))
    q = client.entity("q")
    report = action.purge(q, action.plan(q), batch_size=5000)
    assert report.outcome is action.PurgeOutcome.FAILED
    assert isinstance(report.error, BadRequestError)
    assert report.deleted == 0 and "between 1 and 500" in str(report.as_record()["error"])


def test_a_plan_is_for_one_entity(fake: FakeNamespace, client: ManagementClient) -> None:
    fake.add_queue("other")
    job = action.plan(client.entity("q"))
    with pytest.raises(ValueError, match="plan is for 'q'"):
        action.purge(client.entity("other"), job)
    with pytest.raises(TypeError, match="before"):
        action.plan(client.entity("q"), before="now")  # type: ignore[arg-type]


def test_the_asyncio_action(fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(900)))

    async def main() -> tuple[int, action.PurgeReport]:
        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=10) as c:
            q = c.entity("q")
            job = await action.plan_async(q)
            return job.eligible, await action.purge_async(q, job, batch_size=200)

    eligible, report = asyncio.run(main())
    assert eligible == 900
    assert (report.outcome, report.deleted) == (action.PurgeOutcome.FINISHED, 900)
