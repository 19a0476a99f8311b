"""Planning a read: find the entity's sequence-number bounds and split them.

Pure functions over a *probe*: given sequence numbers ``p1, p2, ...`` a probe returns,
for each, the first sequence number present at or after it (a one-message peek from
``p``), or ``None`` when nothing is. Probes in one call are independent, so the
reader sends them pipelined: each search step costs one round trip, not one per probe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["SEARCH_FANOUT", "Probe", "SequenceRange", "find_bounds", "split_range"]

#: How many probes one step of the last-sequence-number search sends at once.
SEARCH_FANOUT = 15

Probe = Callable[[Sequence[int]], list[int | None]]


@dataclass(frozen=True, slots=True)
class SequenceRange:
    """The inclusive range ``first..last`` of sequence numbers (empty when first > last)."""

    first: int
    last: int

    @property
    def size(self) -> int:
        """How many sequence numbers the range spans (holes included)."""
        return max(0, self.last - self.first + 1)


def find_bounds(probe: Probe, start: int, stop: int,
                span: int | None = None) -> SequenceRange | None:
    """The first and last sequence numbers present in ``start..stop``; None if none is.

    First: one probe from ``start``. Last: galloping (probes at ``first + 2**k``, all
    at once) bounds it, then a search with :data:`SEARCH_FANOUT` probes per step
    narrows ``(lo, hi)`` — ``lo`` present, nothing at or after ``hi`` — to ``hi = lo + 1``.
    With ``span``, the search stops at ``first + span - 1``: the range then holds at
    most ``span`` messages (a stream's ``maxMessagesPerTrigger``).
    """
    first = probe([start])[0]
    if first is None or first > stop:
        return None
    if span is not None:
        stop = min(stop, first + span - 1)
    lo, hi = first, stop + 1
    if hi - lo > 1:
        gallop = [first + (1 << k) for k in range(63) if first + (1 << k) < hi]
        lo, hi = _narrow(probe, gallop, lo, hi)
    while hi - lo > 1:
        span = hi - lo
        points = sorted({lo + span * i // (SEARCH_FANOUT + 1)
                         for i in range(1, SEARCH_FANOUT + 1)} - {lo})
        lo, hi = _narrow(probe, points, lo, hi)
    return SequenceRange(first, lo)


def _narrow(probe: Probe, points: Sequence[int], lo: int, hi: int) -> tuple[int, int]:
    """Tighten ``(lo, hi)`` with the answers for ``points`` (all strictly inside it)."""
    for point, found in zip(points, probe(points), strict=True):
        if found is None or found >= hi:
            hi = min(hi, point)
        else:
            lo = max(lo, found)
    return lo, hi


def split_range(bounds: SequenceRange, partitions: int) -> list[SequenceRange]:
    """Split ``bounds`` into at most ``partitions`` contiguous, disjoint ranges covering it.

    Ranges are equal in span (within one); never more ranges than sequence numbers.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    count = min(partitions, bounds.size)
    if count == 0:
        return []
    edges = [bounds.first + bounds.size * i // count for i in range(count + 1)]
    return [SequenceRange(edges[i], edges[i + 1] - 1) for i in range(count)]
