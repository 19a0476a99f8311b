"""Pipelined peeks: probes for planning, and one partition's range page by page.

A range ``first..last`` is cut into windows of ``page_size`` sequence numbers. A window
never holds more than ``page_size`` messages, so a peek of ``page_size`` messages from
its start returns all of them (and maybe some after it, which are dropped): windows are
independent requests, and up to ``in_flight`` of them are pending at once. A reply that
shows the next message far ahead lets the reader skip the empty windows between; a
short reply with nothing after the window means the entity ends there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Protocol

from .._retry import is_retryable
from ..client import EntityClient
from ..errors import ServiceBusManagementError
from ..message import ReceivedMessage
from ..ops import peek_message
from ._options import DEFAULT_PAGES_IN_FLIGHT
from ._planning import SequenceRange, find_bounds

__all__ = [
    "DEFAULT_IN_FLIGHT", "EntityPager", "Pager", "entity_bounds", "peek_range", "probe_first",
]

#: Peek requests one partition keeps pending at once (the ``pagesInFlight`` option).
DEFAULT_IN_FLIGHT = DEFAULT_PAGES_IN_FLIGHT


class Pager(Protocol):
    """Peeks on one entity: pipelined (no retry) and blocking (with retries)."""

    def submit(self, start: int, count: int) -> Future[peek_message.Response]:
        """Send one peek; the future gives a ``peek_message.Response``."""

    def peek(self, start: int, count: int) -> list[ReceivedMessage]:
        """Peek with the client's retries (used when a pipelined peek failed transiently)."""


class EntityPager:
    """A :class:`Pager` over an :class:`~sbmgmt.client.EntityClient` (optionally one session)."""

    def __init__(self, entity: EntityClient, session_id: str | None = None) -> None:
        self._entity = entity
        self._session_id = session_id

    def submit(self, start: int, count: int) -> Future[peek_message.Response]:
        return self._entity.submit(peek_message.Request(
            from_sequence_number=start, message_count=count, session_id=self._session_id))

    def peek(self, start: int, count: int) -> list[ReceivedMessage]:
        return self._entity.peek_messages(start, count, self._session_id)


def _outcome(pager: Pager, future: Future[peek_message.Response], start: int,
             count: int) -> list[ReceivedMessage]:
    try:
        return list(future.result().messages)
    except ServiceBusManagementError as exc:
        if not is_retryable(exc, idempotent=peek_message.IDEMPOTENT):
            raise
        return pager.peek(start, count)


def probe_first(pager: Pager, starts: Sequence[int]) -> list[int | None]:
    """For each start, the first sequence number at or after it (None: none), pipelined."""
    futures = [pager.submit(start, 1) for start in starts]
    firsts: list[int | None] = []
    for start, future in zip(starts, futures, strict=True):
        found = _outcome(pager, future, start, 1)
        firsts.append(found[0].sequence_number if found else None)
    return firsts


def entity_bounds(pager: Pager, start: int, stop: int,
                  span: int | None = None) -> SequenceRange | None:
    """The first and last sequence numbers present in ``start..stop`` (None: none),
    the last at most ``first + span - 1`` when ``span`` is given."""
    return find_bounds(lambda starts: probe_first(pager, starts), start, stop, span)


def peek_range(
    pager: Pager, bounds: SequenceRange, page_size: int, in_flight: int = DEFAULT_IN_FLIGHT
) -> Iterator[ReceivedMessage]:
    """Every message with a sequence number in ``bounds``, once each, in order."""
    pending: deque[tuple[int, int, Future[peek_message.Response]]] = deque()
    next_start = bounds.first

    def fill() -> None:
        nonlocal next_start
        while len(pending) < in_flight and next_start <= bounds.last:
            end = min(next_start + page_size - 1, bounds.last)
            pending.append((next_start, end, pager.submit(next_start, page_size)))
            next_start = end + 1

    fill()
    try:
        while pending:
            start, end, future = pending.popleft()
            messages = _outcome(pager, future, start, page_size)
            after = None
            for message in messages:
                sequence = message.sequence_number
                assert sequence is not None
                if start <= sequence <= end:
                    yield message
                elif sequence > end:
                    after = sequence if after is None else min(after, sequence)
            if after is not None:
                next_start = max(next_start, after)
            elif len(messages) < page_size:
                next_start = bounds.last + 1
            fill()
    finally:
        for _, _, future in pending:
            future.cancel()
