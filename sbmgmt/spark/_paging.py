"""Pipelined peeks: probes for planning, and one partition's range.

A partition's range ``first..last`` is read by the client's pager
(:mod:`sbmgmt._client.peek_pager`, the same as ``EntityClient.peek_all``): ``in_flight`` peeks
of ``page_size`` on the wire at once, every message of the range once, in order,
whatever the holes in its sequence numbers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .._client.peek_pager import EntityPager, Pager, PeekPlan, page_outcome, peek_all
from ..message import ReceivedMessage
from ._options import DEFAULT_PAGES_IN_FLIGHT
from ._planning import SequenceRange, find_bounds

__all__ = ["EntityPager", "Pager", "entity_bounds", "peek_range", "probe_first"]


def probe_first(pager: Pager, starts: Sequence[int]) -> list[int | None]:
    """For each start, the first sequence number at or after it (None: none), pipelined."""
    futures = [pager.submit(start, 1) for start in starts]
    firsts: list[int | None] = []
    for start, future in zip(starts, futures, strict=True):
        found = page_outcome(pager, future, start, 1)
        firsts.append(found[0].sequence_number if found else None)
    return firsts


def entity_bounds(pager: Pager, start: int, stop: int,
                  span: int | None = None) -> SequenceRange | None:
    """The first and last sequence numbers present in ``start..stop`` (None: none),
    the last at most ``first + span - 1`` when ``span`` is given."""
    return find_bounds(lambda starts: probe_first(pager, starts), start, stop, span)


def peek_range(
    pager: Pager, bounds: SequenceRange, page_size: int, in_flight: int = DEFAULT_PAGES_IN_FLIGHT
) -> Iterator[ReceivedMessage]:
    """Every message with a sequence number in ``bounds``, once each, in order."""
    plan = PeekPlan(bounds.first, bounds.last, page_size=page_size, pages_in_flight=in_flight)
    return peek_all(pager, plan)
