"""Deferred messages: finding them among many, and completing them, beside the official SDK.

    python -m bench.deferred_figures [--messages 100000] [--deferred 1000] [--reps 3]

The fake runs in its own process (:class:`bench._fake.FakeProcess`). Two figures:

- *finding*: ``find_deferred`` over an entity of ``--messages`` messages of which
  ``--deferred`` are deferred, against ``peek_all`` of the same entity (the time of a
  whole-entity read; the target is "about as long");
- *completing*: ``settle_deferred(..., "complete")`` of ``--deferred`` deferred messages
  (receive-by-sequence-number and update-disposition in batches, several in flight),
  against the official SDK doing the same job as its users do: ``receive_deferred_messages``
  of one batch of sequence numbers at a time, then ``complete_message`` of each (the SDK
  settles a message received by sequence number through the management link, one request
  per message), at each injected reply latency; "kept" is ours at that latency over ours
  at 0 ms.

The messages are deferred with sbmgmt's own update-disposition (``defered``) on locks the
fake hands out: how they came to be deferred does not change what is measured.
"""

from __future__ import annotations

import argparse
import os
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

_BATCH = 100  # sequence numbers per SDK receive_deferred_messages call


def _defer(fake: FakeProcess, client: ManagementClient, queue: str, count: int) -> list[int]:
    """Lock ``count`` messages of ``queue`` and defer them; their sequence numbers."""
    tokens = fake.lock(queue, count)
    entity = client.entity(queue)
    for start in range(0, len(tokens), 500):
        entity.update_disposition(tokens[start:start + 500], "defered")
    return sorted(m.sequence_number or 0 for m in find_deferred(entity))


def _seconds(work: Callable[[], object]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def _finding(fake: FakeProcess, client: ManagementClient, messages: int, deferred: int,
             reps: int) -> None:
    """Each repetition reads the entity with ``peek_all`` and then with ``find_deferred``,
    one after the other (under a changing load, a ratio within one repetition is what
    holds); the median of each and of the ratios."""
    queue = fake.new_queue("find")
    fake.fill(queue, deferred, 1024)
    _defer(fake, client, queue, deferred)
    fake.fill(queue, messages - deferred, 1024)
    entity = client.entity(queue)
    found_count = sum(1 for _ in find_deferred(entity))
    reads, finds = [], []
    for _ in range(reps):
        reads.append(_seconds(lambda: sum(1 for _ in entity.peek_all())))
        finds.append(_seconds(lambda: list(find_deferred(entity))))
    ratios = [f / r for f, r in zip(finds, reads, strict=True)]
    print(f"| finding {found_count} deferred among {messages} | find_deferred "
          f"{statistics.median(finds):.3f} s ({min(finds):.3f}-{max(finds):.3f}) | peek_all "
          f"{statistics.median(reads):.3f} s ({min(reads):.3f}-{max(reads):.3f}) | "
          f"{statistics.median(ratios):.2f}x the time ({min(ratios):.2f}-{max(ratios):.2f}) |")


def _ours(fake: FakeProcess, client: ManagementClient, count: int, batch_size: int,
          in_flight: int) -> float:
    queue = fake.new_queue("ours")
    fake.fill(queue, count, 256)
    numbers = _defer(fake, client, queue, count)
    began = time.perf_counter()
    report = settle_deferred(client.entity(queue), numbers, "complete",
                             batch_size=batch_size, in_flight=in_flight)
    took = time.perf_counter() - began
    assert sorted(report.settled) == numbers, report
    return count / took


def _sdk(fake: FakeProcess, client: ManagementClient, sdk: ServiceBusClient,
         count: int) -> float:
    queue = fake.new_queue("sdk")
    fake.fill(queue, count, 256)
    numbers = _defer(fake, client, queue, count)
    with sdk.get_queue_receiver(queue) as receiver:
        began = time.perf_counter()
        for start in range(0, len(numbers), _BATCH):
            for message in receiver.receive_deferred_messages(numbers[start:start + _BATCH]):
                receiver.complete_message(message)
        took = time.perf_counter() - began
    return count / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--deferred", type=int, default=1_000)
    parser.add_argument("--sdk-deferred", type=int, default=300,
                        help="the SDK's sample (it takes a round trip per message)")
    parser.add_argument("--latency-ms", type=float, action="append", dest="latencies")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--in-flight", type=int, default=DEFAULT_IN_FLIGHT)
    parser.add_argument("--skip-finding", action="store_true")
    args = parser.parse_args()
    latencies = args.latencies or [0.0, 5.0, 20.0]
    print(f"load average before: {os.getloadavg()}")
    with FakeProcess() as fake, fake.apart() as placement, \
            ManagementClient.from_connection_string(fake.connection_string,
                                                    timeout=60) as client, \
            ServiceBusClient.from_connection_string(fake.connection_string) as sdk:
        print(placement)
        print("| scenario | ours | the other | ratio |\n| --- | --- | --- | --- |")
        if not args.skip_finding:
            _finding(fake, client, args.messages, args.deferred, args.reps)
        at_zero = None
        for latency in latencies:
            fake.set_latency(latency / 1000)
            ours = statistics.median(_ours(fake, client, args.deferred, args.batch_size,
                                          args.in_flight) for _ in range(args.reps))
            theirs = statistics.median(_sdk(fake, client, sdk, args.sdk_deferred)
                                       for _ in range(args.reps))
            at_zero = ours if at_zero is None else at_zero
            print(f"| completing {args.deferred} deferred, {latency:g} ms, batches of "
                  f"{args.batch_size}, {args.in_flight} in flight | {ours:,.0f} msg/s"
                  f" (kept {ours / at_zero:.0%}) | SDK {theirs:,.0f} msg/s "
                  f"({args.sdk_deferred}) | {ours / theirs:.1f}x |")
        fake.set_latency(0)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
