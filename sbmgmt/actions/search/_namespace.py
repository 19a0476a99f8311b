"""A search of many entities, several read at once (threads on the blocking client, tasks
on the asyncio one), their matches handed out through one bounded queue; see the
package's theory of operation."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence

from ...aio import AsyncManagementClient
from ...client import ManagementClient
from ...errors import ServiceBusManagementError
from ...message import ReceivedMessage
from ._conditions import Conditions
from ._entity import Tally, check_max, entity_path, read, read_async
from ._records import Found, OnProgress

__all__ = ["DEFAULT_ENTITIES_IN_FLIGHT", "search_namespace", "search_namespace_async"]

#: Entities read at once by a namespace search.
DEFAULT_ENTITIES_IN_FLIGHT = 4
#: Matches held for the reader at most, in a namespace search (the readers wait beyond).
_QUEUED_MATCHES = 256


class _Stop(Exception):
    """The reader stopped taking matches: the entity readers end."""


def _prepared(conditions: Conditions | None, entities: Iterable[str], dead_letter: bool,
              max_count: int | None, in_flight: int, on_progress: OnProgress | None,
              ) -> tuple[Conditions, Callable[[ReceivedMessage], bool], list[str], Tally]:
    """A namespace search's arguments checked (before anything is sent), its paths and its
    tally."""
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    check_max(max_count)
    if in_flight < 1:
        raise ValueError(f"entities_in_flight must be 1 or more, got {in_flight}")
    paths = [entity_path(entity, dead_letter) for entity in entities]
    return conditions, matches, paths, Tally(len(paths), on_progress, max_count)


def search_namespace(client: ManagementClient, entities: Iterable[str],
                     conditions: Conditions | None = None, *, dead_letter: bool = False,
                     max_count: int | None = None,
                     entities_in_flight: int = DEFAULT_ENTITIES_IN_FLIGHT,
                     on_progress: OnProgress | None = None,
                     cancel: threading.Event | None = None) -> Iterator[Found]:
    """The messages of many entities that meet ``conditions``, several entities read at
    once, each match handed out as its entity's reader finds it.

    An entity that cannot be read (deleted meanwhile, not authorized) does not stop the
    others: it is told in ``on_progress``'s ``failed``. Each reader is a thread of its
    own; the matches wait for the caller in a bounded queue, so a caller that takes them
    slowly slows the readers rather than fill the memory. Closing the iterator (or
    ``cancel``) stops every reader.

    Args:
        client: The namespace's client.
        entities: The paths to read: queues and subscriptions (a topic keeps no
            messages), e.g. from [list_entities][sbmgmt.actions.entities.list_entities].
        conditions: What to find; None: every message.
        dead_letter: Read each entity's dead-letter queue instead.
        max_count: Stop after this many matches in all; None: read everything.
        entities_in_flight: Entities read at once (1 or more).
        on_progress: Told what was read and found now and then, and at each entity's end
            (from the readers' threads).
        cancel: Set it to stop every reader (the iterator ends).

    Returns:
        An iterator of [Found][sbmgmt.actions.search.Found]: each entity's in
        sequence-number order, the entities interleaved.

    Raises:
        ConditionError: A condition cannot be used (nothing is sent).
        ValueError: ``max_count`` or ``entities_in_flight`` is below 1.
    """
    conditions, matches, paths, tally = _prepared(conditions, entities, dead_letter,
                                                  max_count, entities_in_flight, on_progress)
    return _namespace(client, paths, conditions, matches, tally, entities_in_flight,
                      cancel or threading.Event())


def _namespace(client: ManagementClient, paths: Sequence[str], conditions: Conditions,
               matches: Callable[[ReceivedMessage], bool], tally: Tally, in_flight: int,
               cancel: threading.Event) -> Iterator[Found]:
    waiting: queue.Queue[Found | None] = queue.Queue(_QUEUED_MATCHES)
    todo = iter(paths)
    todo_lock = threading.Lock()
    crashed: list[Exception] = []

    def hand(found: Found | None) -> None:
        while not cancel.is_set():
            with contextlib.suppress(queue.Full):
                waiting.put(found, timeout=0.1)
                return
        raise _Stop

    def reader() -> None:
        try:
            while not cancel.is_set() and not tally.full():
                with todo_lock:
                    path = next(todo, None)
                if path is None:
                    return
                failure = None
                try:
                    with contextlib.closing(read(client, path, conditions, matches, tally,
                                                  cancel, last=False)) as matched:
                        for found in matched:
                            hand(found)
                except ServiceBusManagementError as error:
                    failure = (path, str(error))
                tally.entity_done(failure)
        except _Stop:
            return
        except Exception as error:  # not the service's answer: the caller's iterator raises it
            crashed.append(error)
            cancel.set()
        finally:
            with contextlib.suppress(_Stop):
                hand(None)

    readers = [threading.Thread(target=reader, name=f"sbmgmt-search-{n}", daemon=True)
               for n in range(min(in_flight, max(1, len(paths))))]
    for thread in readers:
        thread.start()
    running = len(readers)
    handed = 0
    try:
        while running and not cancel.is_set():
            try:
                found = waiting.get(timeout=0.1)
            except queue.Empty:
                continue
            if found is None:
                running -= 1
                continue
            yield found
            handed += 1
            if tally.max_count is not None and handed >= tally.max_count:
                break
    finally:
        cancel.set()
        for thread in readers:
            thread.join()
    if crashed:
        raise crashed[0]


async def search_namespace_async(client: AsyncManagementClient, entities: Iterable[str],
                                 conditions: Conditions | None = None, *,
                                 dead_letter: bool = False, max_count: int | None = None,
                                 entities_in_flight: int = DEFAULT_ENTITIES_IN_FLIGHT,
                                 on_progress: OnProgress | None = None,
                                 ) -> AsyncIterator[Found]:
    """:func:`search_namespace` on the asyncio client: each entity read by a task of its
    own, ``entities_in_flight`` at once.

    Args:
        client: The namespace's asyncio client.
        entities: The paths to read (queues and subscriptions).
        conditions: What to find; None: every message.
        dead_letter: Read each entity's dead-letter queue instead.
        max_count: Stop after this many matches in all; None: read everything.
        entities_in_flight: Entities read at once (1 or more).
        on_progress: Told what was read and found now and then.

    Yields:
        Each [Found][sbmgmt.actions.search.Found] as its entity's task finds it.

    Raises:
        ConditionError: A condition cannot be used (at the first iteration, before
            anything is sent).
        ValueError: ``max_count`` or ``entities_in_flight`` is below 1.
    """
    conditions, matches, paths, tally = _prepared(conditions, entities, dead_letter,
                                                  max_count, entities_in_flight, on_progress)
    waiting: asyncio.Queue[Found | None] = asyncio.Queue(_QUEUED_MATCHES)
    todo = iter(paths)

    async def reader() -> None:
        try:
            for path in todo:
                if tally.full():
                    return
                failure = None
                try:
                    async for found in read_async(client, path, conditions, matches, tally,
                                                   last=False):
                        await waiting.put(found)
                except ServiceBusManagementError as error:
                    failure = (path, str(error))
                tally.entity_done(failure)
        finally:
            await waiting.put(None)

    tasks = [asyncio.create_task(reader())
             for _ in range(min(entities_in_flight, max(1, len(paths))))]
    running, handed = len(tasks), 0
    try:
        while running:
            found = await waiting.get()
            if found is None:
                running -= 1
                continue
            yield found
            handed += 1
            if max_count is not None and handed >= max_count:
                break
    finally:
        for task in tasks:
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
    crashed = [e for e in ended if isinstance(e, Exception)]  # not the service's answer
    if crashed:
        raise crashed[0]
