"""Deferred messages (issue 42): completing them beside the official SDK, finding them among
many beside ``peek_all``.

Each repetition runs every measure at every latency in turn (0 ms, 5 ms, 20 ms, then
again), as :mod:`bench._kept` does, so that the share kept at 5 and 20 ms compares runs of
the same moments of a shared machine (the figures of one latency taken one after the other
moved the 5 ms share between 63% and 113% from one run to the next). The measures:

- completing ``deferred`` (1,000) deferred messages (three times a repetition) with
  ``settle_deferred(..., "complete")`` (receive-by-sequence-number then update-disposition,
  batches of 100, 16 in flight), against the official SDK doing the same job as its users
  do: ``receive_deferred_messages`` of one batch of 100 sequence numbers at a time, then
  ``complete_message`` of each (the SDK settles a message received by sequence number
  through the management link: one request a message), on a sample of ``sdk_deferred``;
- the same *sustained*: ``sustained_deferred`` (10,000) deferred messages in one call,
  where the round trips are a small part of the time;
- finding ``deferred`` deferred messages among ``find_among`` (100,000) with
  ``find_deferred``, against ``peek_all`` of the same entity (0 ms only; both in one
  repetition, one after the other; the target is "about as long": 0.9x the rate or more).

Every queue is new and its messages deferred (with sbmgmt's update-disposition on locks the
fake hands out; how a message came to be deferred does not change what is measured) and
peeked once before the clock (the fake encodes a message at its first peek).

Why a burst of 1,000 cannot keep 80% at 20 ms when the machine is quiet: a burst takes at
least its time at 0 ms plus one round trip (the last reply comes back a round trip after
the fake made it). 1,000 completed in 50 ms at 0 ms (20,000/s) take at least 70 ms at
20 ms: 71% kept at most. The row's note gives that bound from the measured 0 ms figure;
the sustained row shows what is kept once the round trips overlap the work.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from azure.servicebus import ServiceBusClient

from sbmgmt import ManagementClient
from sbmgmt.actions.deferred import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_IN_FLIGHT,
    find_deferred,
    settle_deferred,
)

from ._fake import FakeProcess
from ._measure import Figure, rate

__all__ = ["DeferredSizes", "deferred_rows"]

_SDK_BATCH = 100
"""Sequence numbers per SDK ``receive_deferred_messages`` call."""

_SETTLE_BODY = 256
_FIND_BODY = 1024
_DEFER_CALL = 500
_BURSTS = 3
"""Bursts of ``deferred`` measured per repetition and latency (each is short: more samples
for its median)."""

Measured = tuple[str, float, str, Figure, Figure | None, str, float | None, str, float | None]
"""(scenario, latency, unit, ours, other, other's name, ratio target, note, kept target)."""


class DeferredSizes:
    """How much work each measure does."""

    def __init__(self, deferred: int, sustained_deferred: int, sdk_deferred: int,
                 find_among: int) -> None:
        self.deferred = deferred
        self.sustained_deferred = sustained_deferred
        self.sdk_deferred = sdk_deferred
        self.find_among = max(find_among, deferred)


def _defer(fake: FakeProcess, client: ManagementClient, queue: str, count: int,
           body: int) -> list[int]:
    """Fill ``queue`` with ``count`` messages, lock and defer them; their sequence numbers
    (read with a whole-entity peek, which also has the fake encode them before the clock)."""
    fake.fill(queue, count, body)
    tokens = fake.lock(queue, count)
    entity = client.entity(queue)
    for start in range(0, len(tokens), _DEFER_CALL):
        entity.update_disposition(tokens[start:start + _DEFER_CALL], "defered")
    numbers = sorted(m.sequence_number or 0 for m in find_deferred(entity))
    if len(numbers) != count:
        raise RuntimeError(f"{len(numbers)} of {count} messages deferred")
    return numbers


def complete_ours(fake: FakeProcess, client: ManagementClient, count: int) -> float:
    """Deferred messages completed per second by ``settle_deferred`` (its defaults)."""
    queue = fake.new_queue("deferred-ours")
    numbers = _defer(fake, client, queue, count, _SETTLE_BODY)
    entity = client.entity(queue)
    settled: list[int] = []

    def work() -> None:
        settled.extend(settle_deferred(entity, numbers, "complete").settled)

    measured = rate(count, work)
    if sorted(settled) != numbers:
        raise RuntimeError(f"settle_deferred completed {len(settled)} of {count}")
    return measured


def complete_sdk(fake: FakeProcess, client: ManagementClient, sdk: ServiceBusClient,
                 count: int) -> float:
    """Deferred messages completed per second by the SDK, a batch of sequence numbers at a
    time (its links and CBS opened before the clock)."""
    queue = fake.new_queue("deferred-sdk")
    numbers = _defer(fake, client, queue, count, _SETTLE_BODY)
    with sdk.get_queue_receiver(queue) as receiver:
        receiver.peek_messages(1, sequence_number=1)

        def work() -> None:
            for start in range(0, count, _SDK_BATCH):
                for message in receiver.receive_deferred_messages(
                        numbers[start:start + _SDK_BATCH]):
                    receiver.complete_message(message)

        return rate(count, work)


def _finding(fake: FakeProcess, client: ManagementClient, sizes: DeferredSizes, reps: int,
             say: Callable[[str], None]) -> list[Measured]:
    queue = fake.new_queue("deferred-find")
    say(f"deferred: {sizes.deferred:,} deferred among {sizes.find_among:,} x 1 KB")
    _defer(fake, client, queue, sizes.deferred, _FIND_BODY)
    fake.fill(queue, sizes.find_among - sizes.deferred, _FIND_BODY)
    entity = client.entity(queue)
    sum(1 for _ in entity.peek_all())  # the fake encodes a message at its first peek
    reads: list[float] = []
    finds: list[float] = []
    found: list[int] = []
    for _ in range(reps):
        reads.append(rate(sizes.find_among, lambda: sum(1 for _ in entity.peek_all())))
        finds.append(rate(sizes.find_among, lambda: found.append(
            sum(1 for _ in find_deferred(entity)))))
    if set(found) != {sizes.deferred}:
        raise RuntimeError(f"find_deferred found {found}, not {sizes.deferred}")
    return [(f"find {sizes.deferred:,} deferred among {sizes.find_among:,} x 1 KB with "
             "find_deferred vs peek_all", 0.0, "messages read/s", Figure.of(finds),
             Figure.of(reads), "peek_all", 0.9,
             f"peek_all {statistics.median(reads):,.0f} messages/s ({min(reads):,.0f}-"
             f"{max(reads):,.0f}); about as long: 0.9x its rate or more", None)]


def _bound(count: int, at_zero: float, latency_ms: float) -> str:
    """What a burst can keep: its 0 ms time over that time plus one round trip."""
    if not latency_ms:
        return ""
    seconds = count / at_zero
    return (f"a burst takes its 0 ms time ({seconds * 1000:.0f} ms) plus a round trip at "
            f"least: at most {seconds / (seconds + latency_ms / 1000):.0%} kept")


def deferred_rows(fake: FakeProcess, sizes: DeferredSizes, latencies_ms: list[float],
                  reps: int, say: Callable[[str], None]) -> list[Measured]:
    """Finding (at 0 ms), then completing at every latency, repetitions interleaved."""
    burst: dict[float, list[float]] = {latency: [] for latency in latencies_ms}
    sustained: dict[float, list[float]] = {latency: [] for latency in latencies_ms}
    sdk: dict[float, list[float]] = {latency: [] for latency in latencies_ms}
    with ManagementClient.from_connection_string(fake.connection_string,
                                                 timeout=60) as client, \
            ServiceBusClient.from_connection_string(fake.connection_string) as sdk_client:
        fake.set_latency(0)
        rows = _finding(fake, client, sizes, reps, say)
        for rep in range(reps):
            for latency in latencies_ms:
                fake.set_latency(latency / 1000)
                say(f"deferred: completing, repetition {rep + 1}/{reps} at {latency:g} ms")
                started = time.perf_counter()
                burst[latency] += [complete_ours(fake, client, sizes.deferred)
                                   for _ in range(_BURSTS)]
                sustained[latency].append(complete_ours(fake, client,
                                                        sizes.sustained_deferred))
                sdk[latency].append(complete_sdk(fake, client, sdk_client,
                                                 sizes.sdk_deferred))
                say(f"deferred: {time.perf_counter() - started:.1f} s")
        fake.set_latency(0)
    name = (f"batches of {DEFAULT_BATCH_SIZE}, {DEFAULT_IN_FLIGHT} in flight, vs SDK "
            f"receive_deferred_messages of {_SDK_BATCH} then complete_message each "
            f"({sizes.sdk_deferred:,})")
    at_zero = Figure.of(burst[latencies_ms[0]])
    rows.append((f"complete {sizes.deferred:,} deferred with settle_deferred", 0.0,
                 "messages/s", at_zero, None, "absolute", 5000.0, "issue 42's target", None))
    for latency in latencies_ms:
        rows.append((f"complete {sizes.deferred:,} deferred, {name}", latency, "messages/s",
                     Figure.of(burst[latency]), Figure.of(sdk[latency]), "sdk", None,
                     _bound(sizes.deferred, at_zero.median, latency), 0.8))
        rows.append((f"sustained: complete {sizes.sustained_deferred:,} deferred, {name}",
                     latency, "messages/s", Figure.of(sustained[latency]),
                     Figure.of(sdk[latency]), "sdk", None, "", 0.8))
    return rows
