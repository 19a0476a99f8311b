"""Reading a whole entity with several peek pages in flight: every message once, in order.

Theory of operation
-------------------
A peek of ``count`` from sequence number ``s`` answers up to ``count`` messages whose
sequence numbers are ``>= s``, in order ("message-count: Maximum number of messages to
peek"). What one reply proves does not depend on where the next page starts: a
non-empty reply whose last message is ``L`` holds *every* message in ``s..L`` (the
service skips none in between), and an empty reply (204, "no more messages") proves
that nothing is at or after ``s``. A short reply proves no more than ``s..L``: the
service may answer fewer than asked while more are there (service limits; a partitioned
entity answers one at a time), so "fewer than asked" is never taken for the end.

:class:`PeekPlan` (sans-I/O) keeps a *cursor*: every sequence number below it has been
settled (its message handed out, or known to be absent). It plans requests ahead of
the cursor on a grid (``page_size`` apart, wider once replies show holes: a reply's
span over its count estimates the numbers a page covers, and three quarters of that
estimate is used, so a page usually reaches the next one's start); the driver sends
them, and hands their replies back in the order they were planned. For each reply:

- its messages at or after the cursor are handed out, and the cursor moves past its
  last message (a reply from an earlier start than the cursor may still reach beyond
  it; one that does not adds nothing);
- an empty reply from the cursor or before ends the read (nothing is left at or after
  the cursor); the read also ends past ``last``, when one is given; a reply whose
  messages all lie before its start (which no peek answers) is a ``ProtocolError``,
  not a request asked again forever;
- before waiting for a reply whose start is beyond the cursor (the reply before it
  stopped short of it: a short reply, or a wider grid step than the holes allowed),
  the plan asks for the gap first, from the cursor, and that request's reply comes
  first.

So every message present for the whole read is handed out once (each reply is
trimmed to what lies past the cursor, and the cursor only grows), in increasing
sequence-number order, whatever the holes; a message sent or removed meanwhile is
handed out at most once. At most ``pages_in_flight`` requests (and one gap request)
are outstanding: what the reader holds is bounded by them, whatever the entity's size.
A read starts with half of ``pages_in_flight`` and widens to all of them once as many
full replies came back as it started with: an entity that fits in the first window
(where the pages past its end are requests wasted) costs no more than with half, and a
larger one keeps twice as much on the wire, which is what a long round trip needs.

The drivers: :func:`peek_all` (a blocking iterator over a :class:`Pager`: requests
pipelined with ``submit``, a transient failure retried with the client's blocking
call) and :func:`peek_all_async` (an asynchronous iterator over a coroutine that
peeks with the client's retries, each request a task).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

from .._protocol.retry import is_retryable
from ..errors import ProtocolError, ServiceBusManagementError
from ..message import ReceivedMessage
from ..ops import peek_message

__all__ = [
    "DEFAULT_PAGES_IN_FLIGHT",
    "DEFAULT_PAGE_SIZE",
    "EntityPager",
    "PeekPlan",
    "PeekRequest",
    "Pager",
    "PeekingEntity",
    "page_outcome",
    "peek_all",
    "peek_all_async",
]

DEFAULT_PAGE_SIZE = 250
"""Messages asked per peek (the service answers at most about 250 per request)."""

DEFAULT_PAGES_IN_FLIGHT = 32
"""Peek requests outstanding at once, at most: a read starts with half of them and
widens to all once its first window came back full. At 20 ms a round trip, 32 pages of
250 keep 400,000 messages/s coming, twice what one client core decodes (16 left the
reader idle a fifth of the time at 20 ms: the fake's time per page adds to the trip)."""

_MAX_COUNT = 2**31 - 1  # "message-count | int"
_MAX_SEQUENCE_NUMBER = 2**63 - 1  # "from-sequence-number | long"
_WIDEN_NUMERATOR, _WIDEN_DENOMINATOR = 3, 4  # the share of a page's observed span used


@dataclass(slots=True, eq=False)
class PeekRequest:
    """One planned peek: ``count`` messages from ``start``."""

    start: int
    count: int


class PeekPlan:
    """What to peek next and what to hand out, for the sequence numbers ``first..last``
    (``last`` None: to the end of the entity); see the module's theory of operation."""

    def __init__(self, first: int, last: int | None = None, *,
                 page_size: int = DEFAULT_PAGE_SIZE,
                 pages_in_flight: int = DEFAULT_PAGES_IN_FLIGHT) -> None:
        for name, value in (("from_sequence_number", first), ("to_sequence_number", last),
                            ("page_size", page_size), ("pages_in_flight", pages_in_flight)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 1 <= page_size <= _MAX_COUNT:
            raise ValueError(f"page_size must be from 1 to {_MAX_COUNT}, got {page_size}")
        if pages_in_flight < 1:
            raise ValueError(f"pages_in_flight must be at least 1, got {pages_in_flight}")
        if first < 0:
            raise ValueError(f"from_sequence_number must not be negative, got {first}")
        self._last = _MAX_SEQUENCE_NUMBER if last is None else min(last, _MAX_SEQUENCE_NUMBER)
        self._page_size = page_size
        self._most_in_flight = pages_in_flight
        self._in_flight = max(1, pages_in_flight // 2)
        self._full_replies = 0
        self._cursor = first
        self._next_start = first
        self._stride = page_size
        self._planned: deque[PeekRequest] = deque()
        self._done = first > self._last

    @property
    def done(self) -> bool:
        """Whether every sequence number of the range is settled (or the entity ended)."""
        return self._done

    @property
    def cursor(self) -> int:
        """The lowest sequence number not yet settled."""
        return self._cursor

    def to_send(self) -> list[PeekRequest]:
        """The requests to send now, in order: a gap request first when the next reply
        would start past the cursor, then new pages up to ``pages_in_flight``."""
        if self._done:
            return []
        sent: list[PeekRequest] = []
        planned = self._planned
        if planned and planned[0].start > self._cursor:
            gap = self._request(self._cursor)
            planned.appendleft(gap)
            sent.append(gap)
        if not planned:  # every page answered: go on from the cursor
            self._next_start = self._cursor
        self._next_start = max(self._next_start, self._cursor)
        while len(planned) < self._in_flight and self._next_start <= self._last:
            request = self._request(self._next_start)
            planned.append(request)
            sent.append(request)
            self._next_start += self._stride
        return sent

    def next_reply(self) -> PeekRequest:
        """The request whose reply is wanted next (call :meth:`to_send` first)."""
        return self._planned[0]

    def on_reply(self, request: PeekRequest,
                 messages: Sequence[ReceivedMessage]) -> list[ReceivedMessage]:
        """The reply to :meth:`next_reply`'s request; what to hand out, in order."""
        if request is not self._planned[0]:
            raise ValueError("replies must be handed back in the order planned")
        self._planned.popleft()
        if not messages:
            if request.start <= self._cursor:
                self._finish()
            return []
        out: list[ReceivedMessage] = []
        cursor, last = self._cursor, self._last
        for message in messages:
            number = message.sequence_number
            if number is None:
                raise ValueError("a peeked message has no sequence number")
            if cursor <= number <= last:
                out.append(message)
                cursor = number + 1
        reached = messages[-1].sequence_number
        assert reached is not None
        if reached < request.start:  # what a peek from ``start`` cannot answer
            raise ProtocolError(f"a peek from sequence number {request.start} answered "
                                f"messages up to {reached} only")
        self._cursor = max(cursor, min(reached, last) + 1)
        if len(messages) >= request.count:
            self._widen(request.start, reached, len(messages))
            self._full_replies += 1
            if self._full_replies >= self._in_flight:
                self._in_flight = self._most_in_flight
        if self._cursor > self._last:
            self._finish()
        return out

    def _request(self, start: int) -> PeekRequest:
        return PeekRequest(start, min(self._page_size, self._last - start + 1))

    def _widen(self, start: int, reached: int, count: int) -> None:
        """A full reply spanning ``start..reached``: space the next pages by about the
        numbers a page covers (never less than a page)."""
        span = (reached - start + 1) * self._page_size // count
        self._stride = max(self._page_size, span * _WIDEN_NUMERATOR // _WIDEN_DENOMINATOR)

    def _finish(self) -> None:
        self._done = True


class Pager(Protocol):
    """Peeks on one entity: pipelined (no retry) and blocking (with the client's retries)."""

    def submit(self, start: int, count: int) -> Future[peek_message.Response]:
        """Send one peek; the future gives a ``peek_message.Response``."""

    def peek(self, start: int, count: int) -> list[ReceivedMessage]:
        """Peek with the client's retries (used when a pipelined peek failed transiently)."""


class PeekingEntity(Protocol):
    """What :class:`EntityPager` needs of :class:`~sbmgmt.client.EntityClient`."""

    def submit(self, request: peek_message.Request, *,
               timeout: float | None = None) -> Future[peek_message.Response]: ...

    def peek_messages(self, from_sequence_number: int = 1, max_count: int = 10,
                      session_id: str | None = None) -> list[ReceivedMessage]: ...


class EntityPager:
    """A :class:`Pager` over an entity client (optionally one session)."""

    def __init__(self, entity: PeekingEntity, session_id: str | None = None) -> None:
        self._entity = entity
        self._session_id = session_id

    def submit(self, start: int, count: int) -> Future[peek_message.Response]:
        return self._entity.submit(peek_message.Request(
            from_sequence_number=start, message_count=count, session_id=self._session_id))

    def peek(self, start: int, count: int) -> list[ReceivedMessage]:
        return self._entity.peek_messages(start, count, self._session_id)


def page_outcome(pager: Pager, future: Future[peek_message.Response], start: int,
                 count: int) -> Sequence[ReceivedMessage]:
    """The messages of a pipelined peek; if it failed transiently, the same peek again
    with the client's retries."""
    try:
        return future.result().messages
    except ServiceBusManagementError as exc:
        if not is_retryable(exc, idempotent=peek_message.IDEMPOTENT):
            raise
        return pager.peek(start, count)


def peek_all(pager: Pager, plan: PeekPlan) -> Iterator[ReceivedMessage]:
    """Every message ``plan`` covers, once each, in order, with its pages pipelined."""
    futures: dict[PeekRequest, Future[peek_message.Response]] = {}
    try:
        while not plan.done:
            for request in plan.to_send():
                futures[request] = pager.submit(request.start, request.count)
            request = plan.next_reply()
            messages = page_outcome(pager, futures.pop(request), request.start, request.count)
            yield from plan.on_reply(request, messages)
    finally:
        for future in futures.values():
            future.cancel()


async def peek_all_async(
    peek: Callable[[int, int], Awaitable[list[ReceivedMessage]]], plan: PeekPlan
) -> AsyncIterator[ReceivedMessage]:
    """:func:`peek_all` on the event loop: ``peek(start, count)`` peeks with the
    client's retries; each planned request runs as a task."""
    tasks: dict[PeekRequest, asyncio.Future[list[ReceivedMessage]]] = {}
    try:
        while not plan.done:
            for request in plan.to_send():
                tasks[request] = asyncio.ensure_future(peek(request.start, request.count))
            request = plan.next_reply()
            messages = await tasks.pop(request)
            for message in plan.on_reply(request, messages):
                yield message
    finally:
        for task in tasks.values():
            task.cancel()
