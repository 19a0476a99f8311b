"""The peek pager's plan (sans-I/O) against a model entity: every message once, in order,
whatever the holes, the service's short replies, and what changes during the read."""

from __future__ import annotations

import bisect
from concurrent.futures import Future

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbmgmt._client.peek_pager import PeekPlan, PeekRequest, peek_all
from sbmgmt.errors import ProtocolError, ServerBusyError
from sbmgmt.message import ReceivedMessage
from sbmgmt.ops import peek_message


class ModelEntity:
    """Answers peeks from a mutable set of sequence numbers; a reply holds at most
    ``cap`` messages (the service may answer fewer than asked); ``changes`` are applied
    one per request before it is answered (a change: numbers removed, numbers added)."""

    def __init__(self, numbers: set[int], cap: int | None = None,
                 changes: list[tuple[set[int], set[int]]] | None = None,
                 busy: set[int] | None = None) -> None:
        self.numbers = sorted(numbers)
        self.cap = cap
        self.changes = list(changes or [])
        self.busy = set(busy or ())
        self.ever: set[int] = set(numbers)
        self.always: set[int] = set(numbers)
        self.requests: list[tuple[int, int]] = []
        self.retried: list[tuple[int, int]] = []

    def _change(self) -> None:
        if not self.changes:
            return
        removed, added = self.changes.pop(0)
        top = self.numbers[-1] if self.numbers else 0
        added = {top + n for n in added}  # the service numbers new messages upwards
        current = (set(self.numbers) - removed) | added
        self.always -= removed
        self.ever |= added
        self.numbers = sorted(current)

    def answer(self, start: int, count: int) -> list[ReceivedMessage]:
        self._change()
        if self.cap is not None:
            count = min(count, self.cap)
        index = bisect.bisect_left(self.numbers, start)
        return [ReceivedMessage(sequence_number=n) for n in self.numbers[index:index + count]]

    def submit(self, start: int, count: int) -> Future[peek_message.Response]:
        self.requests.append((start, count))
        future: Future[peek_message.Response] = Future()
        if start in self.busy:
            self.busy.discard(start)
            future.set_exception(ServerBusyError("busy", status_code=503))
        else:
            future.set_result(peek_message.Response(messages=tuple(self.answer(start, count))))
        return future

    def peek(self, start: int, count: int) -> list[ReceivedMessage]:
        self.retried.append((start, count))
        return self.answer(start, count)


def _read(entity: ModelEntity, first: int = 1, last: int | None = None, *, page_size: int,
          in_flight: int) -> list[int]:
    plan = PeekPlan(first, last, page_size=page_size, pages_in_flight=in_flight)
    return [m.sequence_number for m in peek_all(entity, plan)]  # type: ignore[misc]


numbers_with_holes = st.sets(st.integers(1, 2000), max_size=300)


@settings(max_examples=300)
@given(numbers_with_holes, st.integers(1, 40), st.integers(1, 8),
       st.none() | st.integers(1, 40), st.integers(0, 2100), st.none() | st.integers(0, 2100))
def test_every_message_once_in_order_whatever_the_holes_and_short_replies(
    numbers: set[int], page_size: int, in_flight: int, cap: int | None, first: int,
    last: int | None,
) -> None:
    entity = ModelEntity(numbers, cap)
    read = _read(entity, first, last, page_size=page_size, in_flight=in_flight)
    top = float("inf") if last is None else last
    assert read == sorted(n for n in numbers if first <= n <= top)


changes = st.lists(
    st.tuples(st.sets(st.integers(1, 600), max_size=20), st.sets(st.integers(1, 50), max_size=5)),
    max_size=30,
)


@settings(max_examples=300)
@given(st.sets(st.integers(1, 600), max_size=200), changes, st.integers(1, 30),
       st.integers(1, 6), st.none() | st.integers(1, 30))
def test_messages_sent_or_removed_during_the_read_are_seen_at_most_once(
    numbers: set[int], changed: list[tuple[set[int], set[int]]], page_size: int,
    in_flight: int, cap: int | None,
) -> None:
    entity = ModelEntity(numbers, cap, changed)
    read = _read(entity, page_size=page_size, in_flight=in_flight)
    assert read == sorted(set(read))  # strictly increasing: in order, no duplicates
    assert set(read) <= entity.ever
    assert entity.always <= set(read)  # what stayed for the whole read was all seen


@settings(max_examples=200)
@given(numbers_with_holes, st.integers(1, 40), st.integers(1, 8), st.none() | st.integers(1, 40))
def test_requests_outstanding_never_exceed_the_pages_in_flight_and_one_gap(
    numbers: set[int], page_size: int, in_flight: int, cap: int | None,
) -> None:
    entity = ModelEntity(numbers, cap)
    plan = PeekPlan(1, page_size=page_size, pages_in_flight=in_flight)
    read: list[int] = []
    outstanding = 0  # sent by to_send, not yet answered by on_reply
    while not plan.done:
        outstanding += len(plan.to_send())
        assert outstanding <= in_flight + 1
        request = plan.next_reply()
        assert request.start <= plan.cursor  # never a reply that leaves a gap
        messages = entity.answer(request.start, request.count)
        read.extend(m.sequence_number for m in plan.on_reply(request, messages))  # type: ignore[misc]
        outstanding -= 1
    assert read == sorted(numbers)


def test_a_long_run_of_holes_is_skipped_and_pages_are_spaced_by_what_they_cover() -> None:
    numbers = set(range(1, 10_000_001, 1000))  # 10,000 messages, 999 holes between each two
    entity = ModelEntity(numbers)
    read = _read(entity, page_size=100, in_flight=8)
    assert read == sorted(numbers)
    # Spaced a page apart, the pages after the first would have walked 100 numbers each:
    # 100,000 requests. Spaced by what a page covers, about one per 100 messages.
    assert len(entity.requests) < 400


def test_a_short_reply_is_not_taken_for_the_end() -> None:
    entity = ModelEntity(set(range(1, 101)), cap=7)
    assert _read(entity, page_size=50, in_flight=3) == list(range(1, 101))


def test_an_empty_reply_ends_the_read_and_a_bounded_read_stops_at_its_last_number() -> None:
    entity = ModelEntity(set(range(1, 11)))
    assert _read(entity, page_size=4, in_flight=2) == list(range(1, 11))
    assert entity.requests[-1] == (11, 4)
    bounded = ModelEntity(set(range(1, 1001)))
    assert _read(bounded, 10, 25, page_size=10, in_flight=4) == list(range(10, 26))
    assert all(start + count - 1 <= 25 for start, count in bounded.requests)


def test_a_read_starts_with_half_its_pages_in_flight_and_widens_once_they_came_back_full(
) -> None:
    def outstanding_by_reply(entity: ModelEntity, in_flight: int) -> list[int]:
        plan = PeekPlan(1, page_size=10, pages_in_flight=in_flight)
        outstanding, sent = [], 0
        while not plan.done:
            sent += len(plan.to_send())
            outstanding.append(sent)
            request = plan.next_reply()
            plan.on_reply(request, entity.answer(request.start, request.count))
            sent -= 1
        return outstanding

    large = outstanding_by_reply(ModelEntity(set(range(1, 1001))), 8)
    assert large[:5] == [4, 4, 4, 4, 8]  # widened after the first four came back full
    assert max(large) == 8
    # An entity inside the first window: the same requests as a read with half as many.
    small, half = ModelEntity(set(range(1, 31))), ModelEntity(set(range(1, 31)))
    outstanding_by_reply(small, 8)
    outstanding_by_reply(half, 4)
    assert small.requests == half.requests


def test_a_transient_failure_is_retried_for_that_page_only() -> None:
    entity = ModelEntity(set(range(1, 101)), busy={41})
    assert _read(entity, page_size=10, in_flight=4) == list(range(1, 101))
    assert entity.retried == [(41, 10)]


def test_bad_arguments_and_replies_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="page_size"):
        PeekPlan(1, page_size=0)
    with pytest.raises(ValueError, match="pages_in_flight"):
        PeekPlan(1, pages_in_flight=0)
    with pytest.raises(ValueError, match="from_sequence_number must not be negative"):
        PeekPlan(-1)
    with pytest.raises(TypeError, match="to_sequence_number must be an int, got str"):
        PeekPlan(1, "9")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="page_size must be an int, got bool"):
        PeekPlan(1, page_size=True)
    plan = PeekPlan(1, page_size=5, pages_in_flight=4)
    _, second = plan.to_send()
    with pytest.raises(ValueError, match="order"):
        plan.on_reply(second, [])
    assert PeekPlan(5, 4).done
    stray = PeekRequest(1, 5)
    with pytest.raises(ValueError, match="order"):
        plan.on_reply(stray, [])


def test_a_reply_before_its_start_is_a_protocol_error_not_a_loop() -> None:
    plan = PeekPlan(10, page_size=5, pages_in_flight=1)
    (request,) = plan.to_send()
    with pytest.raises(ProtocolError, match="from sequence number 10 answered messages up to 7"):
        plan.on_reply(request, [ReceivedMessage(sequence_number=7)])
