"""Kept at latency: the API people call, the same work at each injected latency.

Each repetition runs every measure at every latency in turn (0 ms, 5 ms, 20 ms, then
again), so the share kept at 5 and 20 ms of the same work at 0 ms does not depend on
when the shared machine was busier. The measures:

- independent requests: ``asyncio.gather`` of awaited ``peek_messages`` (one message
  each) on ``AsyncManagementClient`` with its default window;
- lock renewal: blocking ``renew_message_locks`` (100 tokens a call) from a pool of
  threads started before the clock (each thread has one call in flight: at most
  ``threads x 100 / round trip`` locks/s), and ``asyncio.gather`` of awaited
  ``renew_message_locks`` (every call in flight at once, up to the window);
- the same independent requests and renewals *sustained*: the work done ``rounds``
  times over in one gather (or one pass of the pool), the peeks cycling over the same
  sequence numbers and the renewals over the same locks, so that the one round trip
  every burst pays is a small part of the time and the figure is a throughput; the
  blocking renewals from a pool sized for 20 ms (``SIZED_THREADS``);
- reading a whole entity of 1 KB messages with ``EntityClient.peek_all`` (its default
  pages and pages in flight), ``small_read`` (2,000) and ``peek_messages`` (100,000) of
  them; and the SDK's page
  loop (``peek_messages(250, sequence_number=next)``) on the same queues (a sample of
  ``sdk_peek_messages`` on the large one), for the read's ratio to it.

A burst of work cannot take less than its time at 0 ms plus one round trip: the notes
give what that allows (a read of 2,000 messages at 20 ms cannot keep 80%). A sustained
row's floor is the same, over a time ``rounds`` times longer.
"""

from __future__ import annotations

import asyncio
import gc
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

from sbmgmt import ManagementClient
from sbmgmt.aio import AsyncManagementClient

from . import _sdk
from ._fake import FakeProcess
from ._measure import Figure, rate

__all__ = ["RENEW_CALL", "RENEW_THREADS", "SIZED_THREADS", "KeptSizes", "kept_rows"]

RENEW_CALL = 100
"""Lock tokens per ``renew_message_locks`` call."""

RENEW_THREADS = 64
"""Threads calling ``renew_message_locks`` (at 20 ms, at most 64 x 100 / 20 ms = 320,000
locks/s, about half of what they do at 0 ms)."""

SIZED_THREADS = 192
"""Threads sized for 20 ms: a blocking caller has one call in flight, so a pool keeps up
with the 0 ms rate R only with R x (round trip + the fake's time) / ``RENEW_CALL``
threads (about 650,000 x 24 ms / 100 = 156 here), plus headroom."""

_SMALL_BODY = 256
_READ_BODY = 1024
_LOCK_BODY = 16
_SDK_PAGE = 250


def gather_peeks(conn_str: str, queue: str, count: int, rounds: int = 1) -> float:
    """Single-message peeks per second: ``asyncio.gather`` of ``count x rounds`` awaited
    calls (sequence numbers 1 to ``count``, ``rounds`` times)."""

    async def main() -> float:
        async with AsyncManagementClient.from_connection_string(conn_str) as client:
            entity = client.entity(queue)
            await entity.peek_messages(1, 1)
            gc.collect()
            started = time.perf_counter()
            await asyncio.gather(*(entity.peek_messages(1 + i % count, 1)
                                   for i in range(count * rounds)))
            return count * rounds / (time.perf_counter() - started)

    return asyncio.run(main())


def _renew_calls(tokens: list[uuid.UUID], rounds: int) -> list[list[uuid.UUID]]:
    """``RENEW_CALL`` tokens a call, every token once per round."""
    return [tokens[i:i + RENEW_CALL] for i in range(0, len(tokens), RENEW_CALL)] * rounds


def renew_from_threads(conn_str: str, queue: str, tokens: list[uuid.UUID],
                       rounds: int = 1, threads: int = RENEW_THREADS) -> float:
    """Locks renewed per second: blocking ``renew_message_locks`` of ``RENEW_CALL``
    tokens from ``threads`` threads, every lock ``rounds`` times."""
    calls = _renew_calls(tokens, rounds)
    with ManagementClient.from_connection_string(conn_str) as client, \
            ThreadPoolExecutor(threads) as pool:
        entity = client.entity(queue)
        entity.renew_message_locks(calls[0])
        started = Barrier(threads + 1)
        for _ in range(threads):  # every thread of the pool started before the clock
            pool.submit(started.wait)
        started.wait()

        def work() -> None:
            for expiries in pool.map(entity.renew_message_locks, calls):
                if not expiries:
                    raise RuntimeError("renew-lock answered no expirations")

        return rate(len(tokens) * rounds, work)


def renew_gathered(conn_str: str, queue: str, tokens: list[uuid.UUID],
                   rounds: int = 1) -> float:
    """Locks renewed per second: ``asyncio.gather`` of awaited ``renew_message_locks``
    of ``RENEW_CALL`` tokens each, every lock ``rounds`` times."""
    calls = _renew_calls(tokens, rounds)

    async def main() -> float:
        async with AsyncManagementClient.from_connection_string(conn_str) as client:
            entity = client.entity(queue)
            await entity.renew_message_locks(calls[0])
            gc.collect()
            started = time.perf_counter()
            renewed = await asyncio.gather(*(entity.renew_message_locks(c) for c in calls))
            elapsed = time.perf_counter() - started
            if not all(renewed):
                raise RuntimeError("renew-lock answered no expirations")
            return len(tokens) * rounds / elapsed

    return asyncio.run(main())


def read_whole(conn_str: str, queue: str, count: int) -> float:
    """Messages per second read by ``peek_all`` from sequence number 1 to the end."""
    with ManagementClient.from_connection_string(conn_str) as client:
        entity = client.entity(queue)
        entity.peek_messages(1, 1)
        seen = 0

        def work() -> None:
            nonlocal seen
            seen = sum(1 for _ in entity.peek_all())

        measured = rate(count, work)
    if seen != count:
        raise RuntimeError(f"peek_all read {seen} of {count} messages")
    return measured


def _floor(count: int, unit: str, latency_ms: float) -> str:
    if not latency_ms:
        return ""
    return (f"a burst of {count:,} {unit} takes at least its 0 ms time plus one round trip "
            f"({latency_ms:g} ms)")


class KeptSizes:
    """How much work each kept-at-latency measure does."""

    def __init__(self, requests: int, locks: int, small_read: int, large_read: int,
                 sdk_read: int, rounds: int = 5) -> None:
        self.requests = requests
        self.locks = locks
        self.rounds = rounds
        self.small_read = small_read
        self.large_read = large_read
        self.sdk_read = min(sdk_read, large_read)


def kept_rows(fake: FakeProcess, sizes: KeptSizes, latencies_ms: list[float], reps: int,
              say: Callable[[str], None]) -> list[tuple[str, float, str, Figure,
                                                         Figure | None, float | None, str]]:
    """(scenario, latency, unit, ours, SDK or None, ratio target or None, note) per
    measure and latency; every latency's repetitions interleaved."""
    conn = fake.connection_string
    independent = fake.new_queue("kept-independent")
    fake.fill(independent, sizes.requests, _SMALL_BODY)
    renew = fake.new_queue("kept-renew")
    fake.fill(renew, sizes.locks, _LOCK_BODY)
    tokens = fake.lock(renew, sizes.locks)
    small = fake.new_queue("kept-small")
    fake.fill(small, sizes.small_read, _READ_BODY)
    large = fake.new_queue("kept-large")
    fake.fill(large, sizes.large_read, _READ_BODY)
    for queue, count in ((small, sizes.small_read), (large, sizes.large_read)):
        read_whole(conn, queue, count)  # the fake encodes a message at its first peek: untimed

    rounds = sizes.rounds
    sustained_renewals = (f"sustained: {sizes.locks * rounds:,} renewals ({sizes.locks:,} "
                          f"locks {rounds} times)")

    def sdk(queue: str, count: int) -> float:
        return _sdk.peek_pages(conn, queue, count, _SDK_PAGE, 1)[0]

    measures: list[tuple[str, str, Callable[[], float], Callable[[], float] | None, int]] = [
        (f"{sizes.requests:,} single-message peeks, asyncio gather of peek_messages",
         "requests/s", lambda: gather_peeks(conn, independent, sizes.requests), None,
         sizes.requests),
        (f"renew {sizes.locks:,} locks, {RENEW_THREADS} threads on renew_message_locks "
         f"({RENEW_CALL} a call)", "locks/s", lambda: renew_from_threads(conn, renew, tokens),
         None, sizes.locks),
        (f"renew {sizes.locks:,} locks, asyncio gather of renew_message_locks "
         f"({RENEW_CALL} a call)", "locks/s", lambda: renew_gathered(conn, renew, tokens),
         None, sizes.locks),
        (f"sustained: {sizes.requests * rounds:,} single-message peeks ({sizes.requests:,} "
         f"{rounds} times), asyncio gather of peek_messages", "requests/s",
         lambda: gather_peeks(conn, independent, sizes.requests, rounds), None,
         sizes.requests * rounds),
        (f"{sustained_renewals}, {SIZED_THREADS} threads on renew_message_locks "
         f"({RENEW_CALL} a call)", "locks/s",
         lambda: renew_from_threads(conn, renew, tokens, rounds, SIZED_THREADS), None,
         sizes.locks * rounds),
        (f"{sustained_renewals}, asyncio gather of renew_message_locks ({RENEW_CALL} a call)",
         "locks/s",
         lambda: renew_gathered(conn, renew, tokens, rounds), None, sizes.locks * rounds),
        (f"read {sizes.small_read:,} x 1 KB whole with peek_all vs SDK page loop", "messages/s",
         lambda: read_whole(conn, small, sizes.small_read), lambda: sdk(small, sizes.small_read),
         sizes.small_read),
        (f"read {sizes.large_read:,} x 1 KB whole with peek_all vs SDK page loop "
         f"({sizes.sdk_read:,})", "messages/s",
         lambda: read_whole(conn, large, sizes.large_read),
         lambda: sdk(large, sizes.sdk_read), sizes.large_read),
    ]
    ours: dict[tuple[int, float], list[float]] = {}
    theirs: dict[tuple[int, float], list[float]] = {}
    for rep in range(reps):
        for latency in latencies_ms:
            fake.set_latency(latency / 1000)
            say(f"kept at latency: repetition {rep + 1}/{reps} at {latency:g} ms")
            for index, (_, _, measure, sdk_measure, _) in enumerate(measures):
                ours.setdefault((index, latency), []).append(measure())
                if sdk_measure is not None:
                    theirs.setdefault((index, latency), []).append(sdk_measure())
    fake.set_latency(0)
    rows = []
    for index, (name, unit, _, sdk_measure, count) in enumerate(measures):
        for latency in latencies_ms:
            other = None if sdk_measure is None else Figure.of(theirs[(index, latency)])
            target = 4.0 if other is not None and latency == 5 else None
            rows.append((name, latency, unit, Figure.of(ours[(index, latency)]), other,
                         target, _floor(count, unit.split("/")[0], latency)))
    return rows
