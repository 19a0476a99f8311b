"""A search of many entities, several read at once (threads on the blocking client, tasks
on the asyncio one), their matches handed out through one bounded queue; see the
package's theory of operation."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Sequence
from typing import TypeGuard

from ...aio import AsyncManagementClient
from ...client import ManagementClient
from ...errors import ServiceBusManagementError
from ...message import ReceivedMessage
from ..contract import CancelToken, OnProgress, Outcome, is_cancelled
from ._conditions import Conditions
from ._entity import check_max, entity_path, read, read_async
from ._records import Found
from ._tally import AsyncMatches, Matches, Tally

__all__ = ["DEFAULT_IN_FLIGHT", "NAMESPACE", "search_namespace", "search_namespace_async"]

#: Entities read at once by a namespace search.
DEFAULT_IN_FLIGHT = 4
#: The ``entity`` of a namespace search's report.
NAMESPACE = "(namespace)"
#: Matches held for the reader at most, in a namespace search (the readers wait beyond).
_QUEUED_MATCHES = 256
#: How often the caller's side looks at the caller's cancel token while it waits, seconds.
_POLL = 0.1


class _Stop(Exception):
    """The reader stopped taking matches: the entity readers end."""


class _Handing:
    """What the caller's side of a namespace search has handed out, as the readers' matches
    come through the queue (the sync and the asyncio loop both): it is :attr:`open` while
    a reader is still reading and fewer than ``max_count`` were handed out."""

    def __init__(self, readers: int, max_count: int | None) -> None:
        self.running, self.left = readers, max_count

    @property
    def open(self) -> bool:
        return self.running > 0 and self.left != 0

    def passes(self, found: Found | None) -> TypeGuard[Found]:
        """Whether this item of the queue is a match to hand out (None: a reader ended)."""
        if found is None:
            self.running -= 1
            return False
        if self.left is not None:
            self.left -= 1
        return True


def _prepared(conditions: Conditions | None, entities: Iterable[str], dead_letter: bool,
              max_count: int | None, in_flight: int, on_progress: OnProgress | None,
              ) -> tuple[Conditions, Callable[[ReceivedMessage], bool], list[str], Tally]:
    """A namespace search's arguments checked (before anything is sent), its paths and its
    tally."""
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    check_max(max_count)
    if isinstance(in_flight, bool) or in_flight < 1:
        raise ValueError(f"in_flight must be 1 or more, got {in_flight}")
    paths = [entity_path(entity, dead_letter) for entity in entities]
    return conditions, matches, paths, Tally(NAMESPACE, len(paths), on_progress, max_count)


def search_namespace(client: ManagementClient, entities: Iterable[str],
                     conditions: Conditions | None = None, *, dead_letter: bool = False,
                     max_count: int | None = None, in_flight: int = DEFAULT_IN_FLIGHT,
                     on_progress: OnProgress | None = None,
                     cancel: CancelToken | None = None) -> Matches:
    """The messages of many entities that meet ``conditions``, several entities read at
    once, each match handed out as its entity's reader finds it.

    An entity that cannot be read (deleted meanwhile, not authorized) does not stop the
    others: it is counted (``not_searched``) and named in the report's ``failed``. Each
    reader is a thread of its own; the matches wait for the caller in a bounded queue, so
    a caller that takes them slowly slows the readers rather than fill the memory.
    Closing the iterator (or ``cancel``) stops every reader.

    Args:
        client: The namespace's client.
        entities: The paths to read: queues and subscriptions (a topic keeps no
            messages), e.g. from [list_entities][sbmgmt.actions.entities.list_entities].
        conditions: What to find; None: every message.
        dead_letter: Read each entity's dead-letter queue instead.
        max_count: Stop after this many matches in all; None: read everything.
        in_flight: Entities read at once (1 or more).
        on_progress: Told what was read and found now and then, and at each entity's end
            (from the readers' threads); ``counts`` has ``found``, ``entities_done`` and
            ``not_searched``.
        cancel: Cancel it to stop every reader: the iterator ends, its report says
            CANCELLED.

    Returns:
        An iterator of [Found][sbmgmt.actions.search.Found] (each entity's in
        sequence-number order, the entities interleaved), with its ``report``.

    Raises:
        ConditionError: A condition cannot be used (nothing is sent).
        ValueError: ``max_count`` or ``in_flight`` is below 1.
    """
    conditions, matches, paths, tally = _prepared(conditions, entities, dead_letter,
                                                  max_count, in_flight, on_progress)
    return Matches(_namespace(client, paths, conditions, matches, tally, in_flight, cancel),
                   tally.report)


def _namespace(client: ManagementClient, paths: Sequence[str], conditions: Conditions,
               matches: Callable[[ReceivedMessage], bool], tally: Tally, in_flight: int,
               cancel: CancelToken | None) -> Generator[Found, None, None]:
    waiting: queue.Queue[Found | None] = queue.Queue(_QUEUED_MATCHES)
    stop = CancelToken()  # the readers' own: the caller's cancel, or the iterator left
    todo = iter(paths)
    todo_lock = threading.Lock()
    crashed: list[Exception] = []

    def hand(found: Found | None) -> None:
        while not stop.cancelled:
            with contextlib.suppress(queue.Full):
                waiting.put(found, timeout=_POLL)
                return
        raise _Stop

    def reader() -> None:
        try:
            while not stop.cancelled and not tally.full():
                with todo_lock:
                    path = next(todo, None)
                if path is None:
                    return
                failure = None
                try:
                    with contextlib.closing(read(client, path, conditions, matches, tally,
                                                 stop, last=False)) as matched:
                        for found in matched:
                            hand(found)
                except ServiceBusManagementError as error:
                    failure = (path, str(error))
                tally.entity_done(failure)
        except _Stop:
            return
        except Exception as error:  # not the service's answer: the caller's iterator raises it
            crashed.append(error)
            stop.cancel()
        finally:
            with contextlib.suppress(_Stop):
                hand(None)

    readers = [threading.Thread(target=reader, name=f"sbmgmt-search-{n}", daemon=True)
               for n in range(min(in_flight, max(1, len(paths))))]
    for thread in readers:
        thread.start()
    handing = _Handing(len(readers), tally.max_count)
    try:
        while handing.open and not stop.cancelled:
            if is_cancelled(cancel):
                tally.ended(Outcome.CANCELLED)
                break
            try:
                found = waiting.get(timeout=_POLL)
            except queue.Empty:
                continue
            if handing.passes(found):
                yield found
    finally:
        stop.cancel()
        for thread in readers:
            thread.join()
    if crashed:
        tally.ended(Outcome.FAILED, str(crashed[0]))
        raise crashed[0]


def search_namespace_async(client: AsyncManagementClient, entities: Iterable[str],
                           conditions: Conditions | None = None, *,
                           dead_letter: bool = False, max_count: int | None = None,
                           in_flight: int = DEFAULT_IN_FLIGHT,
                           on_progress: OnProgress | None = None,
                           cancel: CancelToken | None = None) -> AsyncMatches:
    """:func:`search_namespace` on the asyncio client: each entity read by a task of its
    own, ``in_flight`` at once.

    Args:
        client: The namespace's asyncio client.
        entities: The paths to read (queues and subscriptions).
        conditions: What to find; None: every message.
        dead_letter: Read each entity's dead-letter queue instead.
        max_count: Stop after this many matches in all; None: read everything.
        in_flight: Entities read at once (1 or more).
        on_progress: Told what was read and found now and then.
        cancel: Cancel it to stop every task (or stop iterating).

    Returns:
        An asynchronous iterator of [Found][sbmgmt.actions.search.Found] as each entity's
        task finds them, with its ``report``.

    Raises:
        ConditionError: A condition cannot be used (nothing is sent).
        ValueError: ``max_count`` or ``in_flight`` is below 1.
    """
    conditions, matches, paths, tally = _prepared(conditions, entities, dead_letter,
                                                  max_count, in_flight, on_progress)
    return AsyncMatches(_namespace_async(client, paths, conditions, matches, tally, in_flight,
                                         cancel), tally.report)


async def _namespace_async(client: AsyncManagementClient, paths: Sequence[str],
                           conditions: Conditions, matches: Callable[[ReceivedMessage], bool],
                           tally: Tally, in_flight: int, cancel: CancelToken | None,
                           ) -> AsyncGenerator[Found, None]:
    waiting: asyncio.Queue[Found | None] = asyncio.Queue(_QUEUED_MATCHES)
    todo = iter(paths)

    async def reader() -> None:
        try:
            for path in todo:
                if tally.full() or is_cancelled(cancel):
                    return
                failure = None
                try:
                    async for found in read_async(client, path, conditions, matches, tally,
                                                  cancel, last=False):
                        await waiting.put(found)
                except ServiceBusManagementError as error:
                    failure = (path, str(error))
                tally.entity_done(failure)
        finally:
            await waiting.put(None)

    tasks = [asyncio.create_task(reader()) for _ in range(min(in_flight, max(1, len(paths))))]
    handing = _Handing(len(tasks), tally.max_count)
    try:
        while handing.open:
            found = await waiting.get()
            if handing.passes(found):
                yield found
    finally:
        for task in tasks:
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
    if is_cancelled(cancel):
        tally.ended(Outcome.CANCELLED)
    crashed = [e for e in ended if isinstance(e, Exception)]  # not the service's answer
    if crashed:
        tally.ended(Outcome.FAILED, str(crashed[0]))
        raise crashed[0]
