"""A search of one entity (or its dead-letter queue): its messages peeked in order, each
tested as it comes, the matches handed out as they are found; and the tally of what a
search (of one entity or many) has read and found, told now and then."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, field

from ...aio import AsyncManagementClient
from ...client import ManagementClient
from ...message import ReceivedMessage
from ..repair import DEAD_LETTER_SUFFIX
from ._conditions import Conditions
from ._records import Found, OnProgress, SearchProgress

__all__ = ["Tally", "check_max", "entity_path", "read", "read_async", "search",
           "search_async"]

#: Progress is told every so many messages read (and at each entity's end).
_PROGRESS_EVERY = 500


def entity_path(entity: str, dead_letter: bool) -> str:
    if dead_letter and not entity.endswith(DEAD_LETTER_SUFFIX):
        return entity + DEAD_LETTER_SUFFIX
    return entity


def check_max(max_count: int | None) -> None:
    if max_count is not None and (isinstance(max_count, bool) or max_count < 1):
        raise ValueError(f"max_count must be 1 or more, got {max_count}")


@dataclass
class Tally:
    """What a search has read and found, told to ``on_progress`` now and then."""

    entities: int
    on_progress: OnProgress | None
    max_count: int | None
    read: int = 0
    found: int = 0
    entities_done: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    _told: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def counted(self, read: int, found: int) -> None:
        with self._lock:
            self.read += read
            self.found += found
            if self.read - self._told >= _PROGRESS_EVERY:
                self._tell()

    def entity_done(self, failure: tuple[str, str] | None = None) -> None:
        with self._lock:
            self.entities_done += 1
            if failure is not None:
                self.failed.append(failure)
            self._tell()

    def full(self) -> bool:
        return self.max_count is not None and self.found >= self.max_count

    def _tell(self) -> None:
        self._told = self.read
        if self.on_progress is not None:
            self.on_progress(SearchProgress(self.read, self.found, self.entities_done,
                                            self.entities, tuple(self.failed)))


def _range(conditions: Conditions) -> tuple[int, int | None]:
    return conditions.from_sequence_number or 1, conditions.to_sequence_number


def search(client: ManagementClient, entity: str, conditions: Conditions | None = None, *,
           dead_letter: bool = False, max_count: int | None = None,
           on_progress: OnProgress | None = None,
           cancel: threading.Event | None = None) -> Iterator[Found]:
    """The messages of one entity (or its dead-letter queue) that meet ``conditions``,
    handed out as they are read (peeked: nothing is locked or changed).

    The conditions are checked here, before anything is sent; the read starts when the
    iterator is first advanced.

    Args:
        client: The namespace's client.
        entity: A queue, a subscription (``TOPIC/Subscriptions/SUB``) or a dead-letter queue.
        conditions: What to find; None: every message.
        dead_letter: Read the entity's dead-letter queue.
        max_count: Stop after this many matches; None: read to the end.
        on_progress: Told what was read and found, every few hundred messages and at the
            end.
        cancel: Set it to stop the read (the iterator ends).

    Returns:
        An iterator of [Found][sbmgmt.actions.search.Found], in sequence-number order.

    Raises:
        ConditionError: A condition cannot be used.
        ValueError: ``max_count`` is below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (raised by the iterator).
    """
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    check_max(max_count)
    tally = Tally(1, on_progress, max_count)
    return read(client, entity_path(entity, dead_letter), conditions, matches, tally, cancel, True)


class _Reading:
    """One entity's read, as it goes: what it has read and found, told to the tally (the
    loop that peeks is the sync or the asyncio one)."""

    def __init__(self, path: str, matches: Callable[[ReceivedMessage], bool],
                 tally: Tally) -> None:
        self.path, self.matches, self.tally = path, matches, tally
        self.read = self.found = 0

    def take(self, message: ReceivedMessage) -> Found | None:
        """The message, found if it matches."""
        self.read += 1
        if self.matches(message):
            self.found += 1
            self._tell()
            return Found(self.path, message)
        if self.read >= _PROGRESS_EVERY:
            self._tell()
        return None

    def end(self, last: bool) -> None:
        """The read is over (``last``: the search's only entity, told done here)."""
        self._tell()
        if last:
            self.tally.entity_done()

    def _tell(self) -> None:
        self.tally.counted(self.read, self.found)
        self.read = self.found = 0


def read(client: ManagementClient, path: str, conditions: Conditions,
          matches: Callable[[ReceivedMessage], bool], tally: Tally,
          cancel: threading.Event | None, last: bool) -> Generator[Found, None, None]:
    first, to = _range(conditions)
    reading = _Reading(path, matches, tally)
    try:
        for message in client.entity(path).peek_all(first, to):
            found = reading.take(message)
            if found is not None:
                yield found
                if tally.full():
                    break
            if cancel is not None and cancel.is_set():
                break
    finally:
        reading.end(last)


async def search_async(client: AsyncManagementClient, entity: str,
                       conditions: Conditions | None = None, *, dead_letter: bool = False,
                       max_count: int | None = None,
                       on_progress: OnProgress | None = None) -> AsyncIterator[Found]:
    """:func:`search` on the asyncio client: an asynchronous iterator of the matches.

    Args:
        client: The namespace's asyncio client.
        entity: A queue, a subscription or a dead-letter queue.
        conditions: What to find; None: every message.
        dead_letter: Read the entity's dead-letter queue.
        max_count: Stop after this many matches; None: read to the end.
        on_progress: Told what was read and found now and then.

    Yields:
        Each [Found][sbmgmt.actions.search.Found], in sequence-number order (cancel the
        task, or stop iterating, to stop the read).

    Raises:
        ConditionError: A condition cannot be used (at the first iteration, before
            anything is sent).
        ValueError: ``max_count`` is below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    check_max(max_count)
    tally = Tally(1, on_progress, max_count)
    async for found in read_async(client, entity_path(entity, dead_letter), conditions, matches,
                                   tally, True):
        yield found


async def read_async(client: AsyncManagementClient, path: str, conditions: Conditions,
                      matches: Callable[[ReceivedMessage], bool], tally: Tally,
                      last: bool) -> AsyncIterator[Found]:
    first, to = _range(conditions)
    reading = _Reading(path, matches, tally)
    try:
        async for message in client.entity(path).peek_all(first, to):
            found = reading.take(message)
            if found is not None:
                yield found
                if tally.full():
                    break
    finally:
        reading.end(last)
