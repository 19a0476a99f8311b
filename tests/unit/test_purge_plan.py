"""BatchDeletePipeline (the client's purge state machine), sans-I/O: one request first, all
of them once a reply came back full, a zero ends it, max_count never exceeded, a failure or
a cancellation counted; and the purge's one cutoff rule."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbmgmt._client.purger import BatchDeletePipeline
from sbmgmt.errors import (
    BadRequestError,
    ConnectionLostError,
    OperationTimeoutError,
    PurgeCancelledError,
    PurgeError,
)
from sbmgmt.ops.batch_delete_messages import cutoff


def test_starts_narrow_widens_after_a_full_reply_and_ends_on_zero() -> None:
    plan = BatchDeletePipeline(batch_size=10, in_flight=3)
    assert plan.to_send() == [10]
    assert plan.to_send() == []
    plan.on_deleted(10, 10)
    assert plan.to_send() == [10, 10, 10]
    plan.on_deleted(10, 4)  # a short reply is not the end ("best effort")
    assert plan.to_send() == [10]
    plan.on_deleted(10, 0)
    assert plan.to_send() == []
    assert not plan.done
    plan.on_deleted(10, 3)  # still in flight when the zero came: counted
    plan.on_deleted(10, 0)
    assert plan.done and plan.result() == 17


def test_a_short_first_reply_keeps_one_in_flight() -> None:
    plan = BatchDeletePipeline(batch_size=10, in_flight=8)
    plan.to_send()
    plan.on_deleted(10, 9)
    assert plan.to_send() == [10]


@given(limit=st.integers(1, 5000), batch=st.integers(1, 700), width=st.integers(1, 9),
       replies=st.lists(st.floats(0.0, 1.0), max_size=60))
def test_the_counts_asked_never_add_up_past_the_limit(limit: int, batch: int, width: int,
                                                      replies: list[float]) -> None:
    plan = BatchDeletePipeline(batch_size=batch, in_flight=width, max_count=limit)
    in_flight: list[int] = []
    for share in [*replies, *[1.0] * 20000]:
        in_flight += plan.to_send()
        assert plan.deleted + sum(in_flight) <= limit
        if not in_flight:
            break
        asked = in_flight.pop(0)
        plan.on_deleted(asked, max(1, round(asked * share)))
    assert plan.done and plan.result() <= limit


def test_a_failure_ends_it_and_counts_the_uncertain() -> None:
    plan = BatchDeletePipeline(batch_size=10, in_flight=4)
    plan.to_send()
    plan.on_deleted(10, 10)
    assert len(plan.to_send()) == 4
    plan.on_deleted(10, 10)
    lost = ConnectionLostError("lost")
    lost.may_have_been_applied = True
    plan.on_failed(10, lost)
    plan.on_failed(10, OperationTimeoutError("late"))
    plan.on_failed(10, BadRequestError("refused"))  # answered: deleted nothing
    assert plan.to_send() == [] and plan.done
    with pytest.raises(PurgeError) as caught:
        plan.result()
    assert (caught.value.deleted, caught.value.uncertain_requests) == (20, 2)
    assert caught.value.error is lost and caught.value.__cause__ is lost
    assert caught.value.may_have_been_applied


def test_a_cancellation_waits_for_what_is_in_flight() -> None:
    plan = BatchDeletePipeline(batch_size=10, in_flight=2)
    plan.to_send()
    plan.on_deleted(10, 10)
    plan.to_send()
    plan.cancel()
    assert plan.to_send() == [] and not plan.done
    plan.on_deleted(10, 10)
    plan.on_deleted(10, 5)
    with pytest.raises(PurgeCancelledError) as caught:
        plan.result()
    assert caught.value.deleted == 25


def test_a_cancellation_after_the_end_is_no_cancellation() -> None:
    plan = BatchDeletePipeline()
    plan.to_send()
    plan.on_deleted(500, 0)
    plan.cancel()
    assert plan.done and plan.result() == 0


@pytest.mark.parametrize(("arguments", "error"), [
    ({"batch_size": 0}, ValueError), ({"in_flight": 0}, ValueError),
    ({"max_count": 0}, ValueError), ({"batch_size": 2**31}, ValueError),
    ({"batch_size": True}, TypeError), ({"max_count": 2.5}, TypeError),
])
def test_bad_arguments(arguments: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        BatchDeletePipeline(**arguments)  # type: ignore[arg-type]


def test_the_cutoff_is_the_millisecond_it_travels_as() -> None:
    """sbmgmt.ops.batch_delete_messages.cutoff, the one rule: a given cutoff to the
    millisecond (a naive one as UTC), "now" as the start of the next millisecond (a message
    enqueued in the current one is included), anything else refused by name."""
    given = datetime(2026, 1, 2, 3, 4, 5, 678_901)
    assert cutoff(given) == datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=timezone.utc)
    before = datetime.now(timezone.utc)
    now = cutoff(None)
    after = datetime.now(timezone.utc)
    assert now.microsecond % 1000 == 0
    assert before < now <= cutoff(after) + timedelta(milliseconds=1)
    with pytest.raises(TypeError, match="before must be a datetime, got str"):
        cutoff("now")  # type: ignore[arg-type]
