"""What turns the window at latency: when each reply comes, and what the window allows.

``timeline``: batches of peeks submitted at once at each latency; the milliseconds after
submit at which each future resolved (every reply delayed by L on its own, and read as it
comes, shows as L plus the fake's and the client's time, never as a staircase of L).
``window``: ``asyncio.gather`` of awaited single-message peeks with each window at each
latency, and the most requests in flight the client saw.

    .venv/bin/python bench/latency_probe.py timeline
    .venv/bin/python bench/latency_probe.py window --windows 64,256,1024 --requests 2000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._fake import FakeProcess  # noqa: E402
from sbmgmt import ManagementClient  # noqa: E402
from sbmgmt.aio import AsyncManagementClient  # noqa: E402
from sbmgmt.ops import peek_message  # noqa: E402

_BATCHES = ((16, 250), (16, 25), (64, 1))  # (requests, messages each)


def timeline(fake: FakeProcess, queue: str, latencies: list[float]) -> None:
    """Print, per latency and batch, when each future resolved (ms after submit)."""
    for latency in latencies:
        fake.set_latency(latency / 1000)
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            entity = client.entity(queue)
            entity.peek_messages(1, 1)
            for count, size in _BATCHES:
                started = time.perf_counter()
                futures = [entity.submit(peek_message.Request(
                    from_sequence_number=1 + i * size, message_count=size)) for i in range(count)]
                resolved = []
                for future in futures:
                    future.result()
                    resolved.append((time.perf_counter() - started) * 1000)
                print(f"{latency:g} ms, {count} x {size}: "
                      + " ".join(f"{ms:.0f}" for ms in resolved), flush=True)


def window_sweep(fake: FakeProcess, queue: str, latencies: list[float], windows: list[int],
                 requests: int) -> None:
    """Print ``gather`` rates per window and latency, and the most in flight."""

    async def gathered(window: int) -> tuple[float, int]:
        async with AsyncManagementClient.from_connection_string(
                fake.connection_string, window=window) as client:
            entity = client.entity(queue)
            await entity.peek_messages(1, 1)
            gc.collect()
            started = time.perf_counter()
            await asyncio.gather(*(entity.peek_messages(1 + i, 1) for i in range(requests)))
            return requests / (time.perf_counter() - started), client.stats.max_in_flight

    for latency in latencies:
        fake.set_latency(latency / 1000)
        for window in windows:
            rate, most = asyncio.run(gathered(window))
            print(f"{latency:g} ms, window {window}: {rate:,.0f} requests/s, "
                  f"at most {most} in flight", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("probe", choices=("timeline", "window"))
    parser.add_argument("--latency-ms", type=float, action="append", dest="latencies")
    parser.add_argument("--windows", default="64,256,1024")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    latencies = args.latencies or [0.0, 5.0, 20.0]
    with FakeProcess() as fake, fake.apart():
        queue = fake.new_queue("probe")
        timeline_size = max(count * size for count, size in _BATCHES)
        fake.fill(queue, args.requests if args.probe == "window" else timeline_size, 1024)
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            sum(1 for _ in client.entity(queue).peek_all())  # the fake encodes at first peek
        if args.probe == "timeline":
            timeline(fake, queue, latencies)
        else:
            window_sweep(fake, queue, latencies, [int(w) for w in args.windows.split(",")],
                         args.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
