"""sbmgmt doing the bench's work: batched renewals, pipelined requests, paged peeks.

Every function opens one client (connection, CBS and link attach happen in a
warm-up request before the clock starts) and returns one rate per repetition.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from threading import Barrier

from sbmgmt import ManagementClient
from sbmgmt._protocol.dispatcher import DEFAULT_WINDOW
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import EntityClient
from sbmgmt.ops import peek_message, renew_lock

from ._measure import rate

__all__ = ["PAGES_AHEAD", "PURGE_BATCH", "RENEW_BATCH", "THREADS", "peek_pages",
           "peek_parallel", "peek_singles", "peek_singles_gather", "peek_singles_threads",
           "purge", "renew_batched"]

RENEW_BATCH = 1000
"""Lock tokens per renew-lock request (requests are pipelined)."""

PAGES_AHEAD = 16
"""Peek pages on the wire ahead of the one being read, in the parallel-ranges scenario."""

THREADS = 32
"""Caller threads on the blocking public method, in the threads scenario."""

PURGE_BATCH = 4000
"""Messages per batch delete in the purge scenario: the Premium quota (the bench's fake is
a Premium namespace: bench/_fake.py)."""

Measure = Callable[[int, Callable[[], object]], float]
"""How one repetition is timed: ``measure(units, work)`` runs ``work`` once and returns
units per second (:func:`~bench._measure.rate`; a diagnostic may wrap it)."""


def _warm(entity: EntityClient) -> None:
    entity.peek_messages(1, 1)


def _results(futures: list[Future[object]]) -> list[object]:
    """Every result, once all are in (one wake-up of this thread, not one per future)."""
    wait(futures)
    return [future.result() for future in futures]


def renew_batched(
    conn_str: str, queue: str, tokens: list[uuid.UUID], reps: int
) -> list[float]:
    """Locks renewed per second: ``RENEW_BATCH`` tokens a request, all requests in flight."""
    batches = [tuple(tokens[i:i + RENEW_BATCH]) for i in range(0, len(tokens), RENEW_BATCH)]
    with ManagementClient.from_connection_string(conn_str) as client:
        entity = client.entity(queue)
        _warm(entity)

        def work() -> None:
            futures = [entity.submit(renew_lock.Request(lock_tokens=b)) for b in batches]
            for future in futures:
                response = future.result()
                if not response.expirations:
                    raise RuntimeError("renew-lock answered no expirations")

        return [rate(len(tokens), work) for _ in range(reps)]


def peek_singles(conn_str: str, queue: str, count: int, reps: int, *,
                 window: int = DEFAULT_WINDOW,
                 stride: int = 1, measure: Measure = rate) -> list[float]:
    """Single-message peeks per second, all pipelined on one link pair (``window`` in
    flight); request ``i`` peeks sequence number ``1 + i * stride``."""
    requests = [
        peek_message.Request(from_sequence_number=1 + i * stride, message_count=1)
        for i in range(count)
    ]
    with ManagementClient.from_connection_string(conn_str, window=window) as client:
        entity = client.entity(queue)
        _warm(entity)

        def work() -> None:
            _results([entity.submit(request) for request in requests])

        return [measure(count, work) for _ in range(reps)]


def peek_singles_gather(conn_str: str, queue: str, count: int, reps: int) -> list[float]:
    """Single-message peeks per second through the public asyncio API: ``asyncio.gather``
    of awaited ``peek_messages`` on ``AsyncManagementClient`` (request ``i`` peeks
    sequence number ``1 + i``)."""

    async def main() -> list[float]:
        async with AsyncManagementClient.from_connection_string(conn_str) as client:
            entity = client.entity(queue)
            await entity.peek_messages(1, 1)
            samples = []
            for _ in range(reps):
                started = time.perf_counter()
                await asyncio.gather(*(entity.peek_messages(1 + i, 1) for i in range(count)))
                samples.append(count / (time.perf_counter() - started))
            return samples

    return asyncio.run(main())


def peek_singles_threads(conn_str: str, queue: str, count: int, reps: int, *,
                         threads: int = THREADS, measure: Measure = rate) -> list[float]:
    """Single-message peeks per second through the public blocking API: ``threads``
    caller threads, each calling ``peek_messages`` for its share of the ``count``."""
    with ManagementClient.from_connection_string(conn_str) as client, \
            ThreadPoolExecutor(threads) as pool:
        entity = client.entity(queue)
        _warm(entity)
        started = Barrier(threads + 1)
        for _ in range(threads):  # every thread of the pool started before the clock
            pool.submit(started.wait)
        started.wait()

        def share(first: int) -> None:
            for i in range(first, count, threads):
                entity.peek_messages(1 + i, 1)

        def work() -> None:
            for future in [pool.submit(share, first) for first in range(threads)]:
                future.result()

        return [measure(count, work) for _ in range(reps)]


def peek_pages(conn_str: str, queue: str, count: int, page: int, reps: int) -> list[float]:
    """Messages peeked per second, page after page (each page waits for the last)."""
    with ManagementClient.from_connection_string(conn_str) as client:
        entity = client.entity(queue)
        _warm(entity)

        def work() -> None:
            seen = 0
            next_number = 1
            while seen < count:
                batch = entity.peek_messages(next_number, min(page, count - seen))
                if not batch:
                    raise RuntimeError(f"peeked {seen} of {count} messages")
                seen += len(batch)
                next_number = (batch[-1].sequence_number or 0) + 1

        return [rate(count, work) for _ in range(reps)]


def peek_parallel(conn_str: str, queue: str, count: int, page: int, reps: int, *,
                  ahead: int = PAGES_AHEAD) -> list[float]:
    """Messages peeked per second, the sequence ranges of the next ``ahead`` pages
    requested while earlier pages are read and dropped (a streaming reader).

    The queue's sequence numbers are known to run from 1 to ``count`` without gaps
    (the bench filled it), so each page's start is known before any reply.
    """
    requests = [
        peek_message.Request(from_sequence_number=start, message_count=min(page, count - start + 1))
        for start in range(1, count + 1, page)
    ]
    with ManagementClient.from_connection_string(conn_str) as client:
        entity = client.entity(queue)
        _warm(entity)

        def work() -> None:
            waiting: deque[Future[peek_message.Response]] = deque()
            seen = 0
            for request in requests:
                waiting.append(entity.submit(request))
                if len(waiting) >= ahead:
                    seen += len(waiting.popleft().result().messages)
            while waiting:
                seen += len(waiting.popleft().result().messages)
            if seen != count:
                raise RuntimeError(f"peeked {seen} of {count} messages")

        return [rate(count, work) for _ in range(reps)]


def purge(conn_str: str, queue: str, count: int) -> float:
    """Messages deleted per second by ``purge_messages`` (batches of ``PURGE_BATCH``, the
    client's requests in flight) of a queue holding ``count``; the whole queue must go."""
    with ManagementClient.from_connection_string(conn_str) as client:
        entity = client.entity(queue)
        _warm(entity)
        deleted: list[int] = []

        def work() -> None:
            deleted.append(entity.purge_messages(batch_size=PURGE_BATCH))

        per_second = rate(count, work)
    if deleted != [count]:
        raise RuntimeError(f"the purge deleted {deleted} of {count} messages")
    return per_second
