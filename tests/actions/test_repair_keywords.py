"""repair's keywords before the actions' contract (issue 57) still work for one release,
each with a DeprecationWarning: ``progress(done, planned)`` and a ``threading.Event`` as
``cancel``."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.contract import Outcome
from sbmgmt.actions.repair import RepairPlan, plan_resubmit, repair

COUNT = 60


@pytest.fixture
def planned() -> Iterator[tuple[ManagementClient, RepairPlan]]:
    with FakeNamespace() as fake:
        fake.add_queue("orders")
        fake.send("orders", *[Message(body=f"m{n}".encode(), message_id=f"id-{n}")
                              for n in range(COUNT)])
        locked = fake.receive_and_lock("orders", COUNT)
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            client.entity("orders").update_disposition(
                [m.lock_token for m in locked if m.lock_token is not None], "suspended",
                dead_letter_reason="Poison")
            yield client, plan_resubmit(client, "orders/$DeadLetterQueue")


def test_progress_with_done_and_planned_warns_and_is_told(
        planned: tuple[ManagementClient, RepairPlan]) -> None:
    client, plan = planned
    told: list[tuple[int, int]] = []
    with pytest.warns(DeprecationWarning, match="on_progress"):
        report = repair(client, plan, batch_size=20,
                        progress=lambda done, total: told.append((done, total)))
    assert report.complete and len(report.moved) == COUNT
    assert told[-1] == (COUNT, COUNT) and len(told) == 3  # one a batch of 20


def test_an_event_as_cancel_warns_and_stops_the_run(
        planned: tuple[ManagementClient, RepairPlan]) -> None:
    client, plan = planned
    stop = threading.Event()
    stop.set()  # set before the run: no batch starts
    with pytest.warns(DeprecationWarning, match="CancelToken"):
        report = repair(client, plan, cancel=stop)
    assert report.outcome is Outcome.CANCELLED and report.cancelled
    assert report.moved == [] and report.not_found == []
    assert len(list(client.entity("orders/$DeadLetterQueue").peek_all())) == COUNT


def test_both_progress_keywords_at_once_are_refused(
        planned: tuple[ManagementClient, RepairPlan]) -> None:
    client, plan = planned
    with pytest.raises(TypeError, match="not both"):
        repair(client, plan, on_progress=lambda _p: None, progress=lambda _d, _t: None)
    assert len(list(client.entity("orders/$DeadLetterQueue").peek_all())) == COUNT
