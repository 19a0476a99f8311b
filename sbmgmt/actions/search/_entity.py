"""A search of one entity (or its dead-letter queue): its messages peeked in order, each
tested as it comes, the matches handed out as they are found."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator

from ...aio import AsyncManagementClient
from ...client import ManagementClient
from ...entity_paths import dead_letter_path
from ...errors import ServiceBusManagementError
from ...message import ReceivedMessage
from ..contract import CancelToken, OnProgress, Outcome
from ._conditions import Conditions
from ._records import Found
from ._tally import PROGRESS_EVERY, AsyncMatches, Matches, Tally

__all__ = ["check_max", "entity_path", "read", "read_async", "search", "search_async"]


def entity_path(entity: str, dead_letter: bool) -> str:
    """The path read: the entity, or its dead-letter queue."""
    return dead_letter_path(entity) if dead_letter else entity


def check_max(max_count: int | None) -> None:
    """ValueError unless ``max_count`` is None or 1 or more."""
    if max_count is not None and (isinstance(max_count, bool) or max_count < 1):
        raise ValueError(f"max_count must be 1 or more, got {max_count}")


def _prepared(entity: str, conditions: Conditions | None, dead_letter: bool,
              max_count: int | None, on_progress: OnProgress | None,
              ) -> tuple[str, Conditions, Callable[[ReceivedMessage], bool], Tally]:
    """One entity's search checked (before anything is sent): its path, its conditions,
    their test and its tally."""
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    check_max(max_count)
    path = entity_path(entity, dead_letter)
    return path, conditions, matches, Tally(path, 1, on_progress, max_count)


def search(client: ManagementClient, entity: str, conditions: Conditions | None = None, *,
           dead_letter: bool = False, max_count: int | None = None,
           on_progress: OnProgress | None = None,
           cancel: CancelToken | None = None) -> Matches:
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
        on_progress: Told a ``Progress`` (``sbmgmt.actions.contract``) every few hundred
            messages and at the end: ``done`` is the messages read, ``counts`` has
            ``found``.
        cancel: Cancel it to stop the read: the iterator ends, and its report says
            CANCELLED.

    Returns:
        An iterator of [Found][sbmgmt.actions.search.Found], in sequence-number order,
        whose ``report`` ([SearchReport][sbmgmt.actions.search.SearchReport]) counts what
        was read and found.

    Raises:
        ConditionError: A condition cannot be used.
        ValueError: ``max_count`` is below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (raised by the iterator;
            the report then says FAILED).
    """
    path, conditions, matches, tally = _prepared(entity, conditions, dead_letter, max_count,
                                                 on_progress)
    return Matches(read(client, path, conditions, matches, tally, cancel, True), tally.report,
                   tally.full)


class _Stopped(Exception):
    """The search has what it wants (``max_count``): the read ends."""


class _Cancelled(_Stopped):
    """The search was cancelled: the read ends."""


class _Reading:
    """One entity's read as it goes: the step the sync and the asyncio loops both take
    for each message they peek (:meth:`take`), and, around the loop (a context manager),
    how the read ended, told to the tally (``last``: the search's only entity, which
    fails with it and is told done here)."""

    def __init__(self, path: str, conditions: Conditions,
                 matches: Callable[[ReceivedMessage], bool], tally: Tally,
                 cancel: CancelToken | None, last: bool) -> None:
        self.path, self.matches, self.tally, self.cancel, self.last = (path, matches, tally,
                                                                       cancel, last)
        self.numbers = conditions.from_sequence_number or 1, conditions.to_sequence_number
        self.read = self.found = 0
        self.stopping = False

    def take(self, message: ReceivedMessage) -> Found | None:
        """The message, found if it matches; :class:`_Stopped` (which ends the read) once
        the search has what it wants or is cancelled."""
        if self.stopping:
            raise _Stopped
        if self.cancel is not None and self.cancel.cancelled:
            raise _Cancelled
        self.read += 1
        if self.matches(message):
            self.found += 1
            self._tell()
            self.stopping = self.tally.full()
            return Found(self.path, message)
        if self.read >= PROGRESS_EVERY:
            self._tell()
        return None

    def __enter__(self) -> _Reading:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: object) -> bool:
        if kind is _Cancelled:
            self.tally.ended(Outcome.CANCELLED)
        elif isinstance(error, ServiceBusManagementError) and self.last:
            self.tally.ended(Outcome.FAILED, str(error))
        self._tell()
        if self.last:
            self.tally.entity_done()
        return kind is not None and issubclass(kind, _Stopped)

    def _tell(self) -> None:
        self.tally.counted(self.read, self.found)
        self.read = self.found = 0


def read(client: ManagementClient, path: str, conditions: Conditions,
         matches: Callable[[ReceivedMessage], bool], tally: Tally,
         cancel: CancelToken | None, last: bool) -> Generator[Found, None, None]:
    """One entity's matches, as read (``last``: the search's only entity)."""
    with _Reading(path, conditions, matches, tally, cancel, last) as reading:
        for message in client.entity(path).peek_all(*reading.numbers):
            if (found := reading.take(message)) is not None:
                yield found


def search_async(client: AsyncManagementClient, entity: str,
                 conditions: Conditions | None = None, *, dead_letter: bool = False,
                 max_count: int | None = None, on_progress: OnProgress | None = None,
                 cancel: CancelToken | None = None) -> AsyncMatches:
    """:func:`search` on the asyncio client: an asynchronous iterator of the matches.

    Args:
        client: The namespace's asyncio client.
        entity: A queue, a subscription or a dead-letter queue.
        conditions: What to find; None: every message.
        dead_letter: Read the entity's dead-letter queue.
        max_count: Stop after this many matches; None: read to the end.
        on_progress: Told what was read and found now and then (as :func:`search`).
        cancel: Cancel it to stop the read (or cancel the task, or stop iterating).

    Returns:
        An asynchronous iterator of [Found][sbmgmt.actions.search.Found], in
        sequence-number order, with its ``report``.

    Raises:
        ConditionError: A condition cannot be used (nothing is sent).
        ValueError: ``max_count`` is below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (raised by the iterator).
    """
    path, conditions, matches, tally = _prepared(entity, conditions, dead_letter, max_count,
                                                 on_progress)
    return AsyncMatches(read_async(client, path, conditions, matches, tally, cancel, True),
                        tally.report, tally.full)


async def read_async(client: AsyncManagementClient, path: str, conditions: Conditions,
                     matches: Callable[[ReceivedMessage], bool], tally: Tally,
                     cancel: CancelToken | None, last: bool) -> AsyncGenerator[Found, None]:
    """:func:`read` on the asyncio client."""
    with _Reading(path, conditions, matches, tally, cancel, last) as reading:
        async for message in client.entity(path).peek_all(*reading.numbers):
            if (found := reading.take(message)) is not None:
                yield found
