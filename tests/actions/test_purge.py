"""sbmgmt.actions.purge: the plan counts what the purge deletes (one cutoff), progress is a
running total (Progress records), a CancelToken stops it, and the report (an ActionReport)
says finished, cancelled or failed with the count."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions import purge as action
from sbmgmt.actions.contract import CancelToken, Outcome, Progress
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
    told: list[Progress] = []
    report = action.purge(q, job, on_progress=told.append)
    totals = [progress.done for progress in told]
    assert report.outcome is Outcome.FINISHED
    assert report.deleted == 1198 == totals[-1]
    assert totals == sorted(totals)
    assert report.record()["deleted"] == 1198 and report.before == job.before
    assert {(p.total, p.counts["deleted"] == p.done) for p in told} == {(job.eligible, True)}
    assert report.record()["counts"] == {"deleted": 1198}
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
    cancel = CancelToken()

    def stop(progress: Progress) -> None:
        if progress.done >= 300:
            cancel.cancel()

    # Batches of 10: at most 1 + 32 requests (330 messages) are out when the cancel is set,
    # so the purge cannot finish the 3,000 first (with 100 a batch it could, on a fast turn).
    report = action.purge(q, action.plan(q), batch_size=10, on_progress=stop, cancel=cancel)
    assert report.outcome is Outcome.CANCELLED
    assert report.deleted == fake.accounting("q")["deleted"] >= 300
    assert report.error is None and report.failure is None


def test_a_failed_purge_reports_the_error(fake: FakeNamespace, client: ManagementClient) -> None:
    fake.send("q", Message(body=b"x"))
    q = client.entity("q")
    report = action.purge(q, action.plan(q), batch_size=5000)
    assert report.outcome is Outcome.FAILED
    assert isinstance(report.failure, BadRequestError)
    assert report.deleted == 0 and "between 1 and 500" in str(report.record()["error"])


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
    assert (report.outcome, report.deleted) == (Outcome.FINISHED, 900)


def test_a_cancelled_asyncio_purge_reports_its_count(fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(3000)))

    async def main() -> action.PurgeReport:
        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=10) as c:
            q = c.entity("q")
            cancel = CancelToken()

            def stop(progress: Progress) -> None:
                if progress.done >= 300:
                    cancel.cancel()

            return await action.purge_async(q, await action.plan_async(q), batch_size=10,
                                            on_progress=stop, cancel=cancel)

    report = asyncio.run(main())
    assert report.outcome is Outcome.CANCELLED and report.cancelled
    assert 300 <= report.deleted == fake.accounting("q")["deleted"] < 3000


def test_a_token_cancelled_before_the_start_sends_nothing(fake: FakeNamespace,
                                                          client: ManagementClient) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(10)))
    q = client.entity("q")
    cancel = CancelToken()
    cancel.cancel()
    report = action.purge(q, action.plan(q), cancel=cancel)
    assert (report.outcome, report.deleted) == (Outcome.CANCELLED, 0)
    assert fake.applied("q", "com.microsoft:batch-delete-messages") == 0


def test_the_old_names_are_deprecated_aliases_or_refused(fake: FakeNamespace,
                                                         client: ManagementClient) -> None:
    """One release of aliases for the renamed names (PurgeOutcome, as_record); a
    threading.Event for ``cancel`` is refused by name before anything is sent (a token's
    type cannot be aliased); ``requests_in_flight`` is ``in_flight`` now."""
    fake.send("q", *(Message(body=b"x") for _ in range(20)))
    q = client.entity("q")
    job = action.plan(q)
    with pytest.raises(TypeError, match="CancelToken, got Event"):
        action.purge(q, job, cancel=threading.Event())  # type: ignore[arg-type]
    assert fake.accounting("q")["deleted"] == 0
    report = action.purge(q, job, batch_size=5, in_flight=1)
    assert report.deleted == 20
    assert fake.applied("q", "com.microsoft:batch-delete-messages") == 5  # one at a time
    with pytest.deprecated_call(match="Outcome"):
        assert action.PurgeOutcome.FINISHED is report.outcome is Outcome.FINISHED
    with pytest.deprecated_call(match="record"):
        assert report.as_record() == report.record()
