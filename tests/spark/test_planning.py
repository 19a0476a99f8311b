"""Planning: bounds by galloping and fan-out search, and range splitting."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbmgmt.spark._options import MAX_SEQUENCE_NUMBER
from sbmgmt.spark._paging import peek_range, probe_first
from sbmgmt.spark._planning import SequenceRange, find_bounds, split_range

from ._pager import MemoryPager


def _probe(pager: MemoryPager):  # type: ignore[no-untyped-def]
    def probe(starts: Sequence[int]) -> list[int | None]:
        return probe_first(pager, starts)
    return probe


def test_empty_entity_has_no_bounds() -> None:
    assert find_bounds(_probe(MemoryPager([])), 0, MAX_SEQUENCE_NUMBER) is None


def test_single_message() -> None:
    bounds = find_bounds(_probe(MemoryPager([7])), 0, MAX_SEQUENCE_NUMBER)
    assert bounds == SequenceRange(7, 7)


def test_bounds_with_holes_and_a_far_last_message() -> None:
    pager = MemoryPager([3, 4, 90, 2**40 + 5])
    assert find_bounds(_probe(pager), 0, MAX_SEQUENCE_NUMBER) == SequenceRange(3, 2**40 + 5)
    # galloping plus 16-way search: far fewer round trips than sequence numbers
    assert len(pager.submitted) < 250


def test_bounds_respect_from_and_to() -> None:
    probe = _probe(MemoryPager(range(1, 1001)))
    assert find_bounds(probe, 100, 250) == SequenceRange(100, 250)
    assert find_bounds(probe, 1001, MAX_SEQUENCE_NUMBER) is None
    assert find_bounds(_probe(MemoryPager([5, 500])), 6, 400) is None


@given(st.sets(st.integers(0, 5000), max_size=60), st.integers(0, 5000), st.integers(0, 6000))
def test_bounds_are_first_and_last_in_range(numbers: set[int], start: int, stop: int) -> None:
    inside = sorted(n for n in numbers if start <= n <= stop)
    bounds = find_bounds(_probe(MemoryPager(numbers)), start, stop)
    assert bounds == (SequenceRange(inside[0], inside[-1]) if inside else None)


def test_split_range_is_contiguous_and_balanced() -> None:
    parts = split_range(SequenceRange(1, 10_000), 4)
    assert parts == [SequenceRange(1, 2500), SequenceRange(2501, 5000),
                     SequenceRange(5001, 7500), SequenceRange(7501, 10_000)]


def test_split_range_never_makes_more_ranges_than_numbers() -> None:
    assert split_range(SequenceRange(5, 7), 10) == [
        SequenceRange(5, 5), SequenceRange(6, 6), SequenceRange(7, 7)]
    assert split_range(SequenceRange(5, 4), 3) == []
    with pytest.raises(ValueError, match="partitions must be at least 1"):
        split_range(SequenceRange(1, 2), 0)


@given(st.sets(st.integers(1, 3000), max_size=300), st.integers(1, 8), st.integers(1, 50),
       st.integers(1, 5))
def test_partitioned_read_equals_sequential_peek(
    numbers: set[int], partitions: int, page_size: int, in_flight: int
) -> None:
    pager = MemoryPager(numbers)
    bounds = find_bounds(_probe(pager), 0, MAX_SEQUENCE_NUMBER)
    ranges = [] if bounds is None else split_range(bounds, partitions)
    read = [m.sequence_number for r in ranges for m in peek_range(pager, r, page_size, in_flight)]
    assert read == sorted(numbers)


def test_paging_skips_a_long_gap_instead_of_walking_it() -> None:
    pager = MemoryPager([*range(1, 11), *range(1_000_001, 1_000_011)])
    read = [m.sequence_number for m in peek_range(pager, SequenceRange(1, 1_000_010), 10, 2)]
    assert read == [*range(1, 11), *range(1_000_001, 1_000_011)]
    assert len(pager.submitted) < 10


def test_paging_stops_at_the_end_of_the_entity() -> None:
    pager = MemoryPager(range(1, 6))
    read = [m.sequence_number for m in peek_range(pager, SequenceRange(1, 10**12), 100, 6)]
    assert read == [1, 2, 3, 4, 5]
    # The first window's three pages (half of 6), then one peek from 6 that answers
    # nothing: a short reply does not prove the end (the service may answer fewer than
    # asked), an empty one does.
    assert pager.submitted == [(1, 100), (101, 100), (201, 100), (6, 100)]


def test_transient_peek_failure_is_retried_for_that_window_only() -> None:
    pager = MemoryPager(range(1, 101), busy_once=[51])
    read = [m.sequence_number for m in peek_range(pager, SequenceRange(1, 100), 10, 4)]
    assert read == list(range(1, 101))
    assert pager.retried == [(51, 10)]


@given(st.sets(st.integers(0, 3000), max_size=80), st.integers(0, 3000), st.integers(1, 400))
def test_bounds_with_a_span_hold_at_most_span_numbers(
    numbers: set[int], start: int, span: int
) -> None:
    after = sorted(n for n in numbers if n >= start)
    bounds = find_bounds(_probe(MemoryPager(numbers)), start, MAX_SEQUENCE_NUMBER, span)
    if not after:
        assert bounds is None
        return
    within = [n for n in after if n < after[0] + span]
    assert bounds == SequenceRange(after[0], within[-1])
