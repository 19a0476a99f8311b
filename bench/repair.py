"""Resubmitting dead letters: sbmgmt's action against what an official SDK user writes.

    .venv/bin/python -m bench.repair --messages 10000 --size 1024 --latency-ms 0,5,20 --rounds 3

The fake runs in its own process (``bench/_fake.py``). Each run dead-letters ``--messages``
messages of ``--size`` bytes in a fresh queue and resubmits them to it:

- *sbmgmt*: ``plan_resubmit`` + ``repair`` with its defaults (batches of 100 in
  transactions, 24 in flight); with ``--asyncio``, ``repair_async`` over an
  ``AsyncManagementClient`` (the same cores, tasks instead of threads);
- *SDK*: azure-servicebus's receiver on the dead-letter queue (prefetch 100) and a sender:
  receive 100, send their copies in one batch, complete each (the SDK has no
  cross-entity transactions; a cut between the send and the completions doubles them).

Latency is a round trip added on the TCP path by ``bench/_delay.py``'s proxy, which delays
every chunk by half of it each way, in order, in a process of its own (so it takes none of
the measured client's CPU; at 0 ms there is no proxy), so it slows every frame, links and
transactions included (the fake's own ``faults.latency`` delays management replies only).
The messages/s of each and their ratio, per latency; ``kept`` is each one's rate against
its own at the first latency. ``--rounds N`` runs the latencies N times over, interleaved (0,
5, 20, 0, 5, 20, ...: a slow spell of a shared machine falls on every latency alike) and
prints each rate's median with its lowest and highest; ``kept`` and the ratio are of the
medians, and a line adds ``kept`` round by round (the median of each round's ratio to its
own first latency: what a slow spell that spans a round does not tilt). ``--split`` adds
sbmgmt's plan and move apart, each with the CPU it took in the client's process and in the
fake's (both sides of the measured work).

A latency written ``20f`` is held in the fake instead (``FakeNamespace.network_latency``:
every byte of the measured connections waits half the round trip each way in the fake's
own loop), with no proxy: no third process takes CPU from the two the machine's cores
serve, as a network takes none. A row of each (``20`` and ``20f``) tells what the proxy's
hop costs on top of the round trips.

A latency written ``0p`` runs through the proxy with no delay: what the proxy itself costs
on a machine whose cores the fake and the client already keep busy (a network takes no CPU
of theirs), told apart from what the round trips cost. Such a row is printed with its own
``kept`` beside it, the later latencies' rates against it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus import (  # noqa: E402
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusSubQueue,
)

from bench._delay import delayed  # noqa: E402
from bench._fake import FakeProcess  # noqa: E402
from bench._measure import Figure, cpu_seconds  # noqa: E402
from sbmgmt import AsyncManagementClient, ManagementClient  # noqa: E402
from sbmgmt.actions.repair import (  # noqa: E402
    RepairPlan,
    RepairReport,
    plan_resubmit,
    repair,
    repair_async,
)


def _dead_letters(fake: FakeProcess, client: ManagementClient, count: int, size: int) -> str:
    queue = fake.new_queue("repair")
    fake.fill(queue, count, size)
    tokens = fake.lock(queue, count)
    entity = client.entity(queue)
    for start in range(0, count, 1000):
        entity.update_disposition(tokens[start:start + 1000], "suspended",
                                  dead_letter_reason="bench")
    fake.freeze()  # the dead letters made through the client, kept off full collections
    return queue


def _ours(conn: str, queue: str, split: dict[str, float] | None = None,
          fake_pid: int | None = None, use_asyncio: bool = False) -> int:
    """plan_resubmit + repair (``repair_async`` on an AsyncManagementClient with
    ``use_asyncio``); with ``split``, the plan's and the move's wall time and the CPU each
    took in this process and in the fake's (``fake_pid``) are put in it."""
    def mark(name: str) -> None:
        if split is not None:
            split[f"{name}_s"] = time.perf_counter()
            split[f"{name}_cpu"] = time.process_time()
            split[f"{name}_fake_cpu"] = cpu_seconds(fake_pid) if fake_pid else 0.0

    with ManagementClient.from_connection_string(conn, timeout=60) as client:
        mark("start")
        plan = plan_resubmit(client, f"{queue}/$DeadLetterQueue")
        mark("planned")
        # Its defaults: what a caller gets.
        report = (asyncio.run(_move_async(conn, plan)) if use_asyncio
                  else repair(client, plan))
        mark("moved")
    return len(report.moved)


async def _move_async(conn: str, plan: RepairPlan) -> RepairReport:
    async with AsyncManagementClient.from_connection_string(conn, timeout=60) as client:
        return await repair_async(client, plan)  # its defaults, as repair's


def _phases(marks: dict[str, float]) -> dict[str, float]:
    """The plan's and the move's wall time and CPU (client, fake) from ``_ours``' marks."""
    out: dict[str, float] = {}
    for phase, (start, end) in {"plan": ("start", "planned"),
                                "move": ("planned", "moved")}.items():
        for measure in ("s", "cpu", "fake_cpu"):
            out[f"{phase}_{measure}"] = marks[f"{end}_{measure}"] - marks[f"{start}_{measure}"]
    return out


def _sdk(conn: str, queue: str, count: int) -> int:
    done = 0
    with ServiceBusClient.from_connection_string(conn) as sdk, \
            sdk.get_queue_receiver(queue, sub_queue=ServiceBusSubQueue.DEAD_LETTER,
                                   prefetch_count=100) as receiver, \
            sdk.get_queue_sender(queue) as sender:
        while done < count:
            batch = receiver.receive_messages(100, max_wait_time=5)
            if not batch:
                break
            sender.send_messages([ServiceBusMessage(
                b"".join(m.body), message_id=m.message_id,
                application_properties=m.application_properties) for m in batch])
            for message in batch:
                receiver.complete_message(message)
            done += len(batch)
    return done


def _timed(run: Callable[[], int]) -> tuple[int, float]:
    """``run()`` and the seconds it took, after a full collection, untimed (as
    ``bench._measure.rate``: the run pays for the collections its own objects set off)."""
    gc.collect()
    start = time.perf_counter()
    moved = run()
    return moved, time.perf_counter() - start


@dataclass(frozen=True)
class _Latency:
    """One latency of the run: its round trip, whether the proxy is there at 0 ms, and
    whether the fake holds the bytes instead of the proxy."""

    ms: float
    proxy_at_zero: bool = False
    in_fake: bool = False

    @classmethod
    def parse(cls, text: str) -> _Latency:
        """``20``; ``0p`` for 0 ms through the proxy; ``20f`` for 20 ms held in the fake."""
        if text.endswith("p"):
            ms = float(text[:-1])
            if ms != 0:
                raise ValueError(f"only 0 ms takes 'p' (through the proxy), got {text!r}")
            return cls(0.0, proxy_at_zero=True)
        if text.endswith("f"):
            ms = float(text[:-1])
            if ms <= 0:
                raise ValueError(f"'f' (held in the fake) takes a latency above 0, got {text!r}")
            return cls(ms, in_fake=True)
        return cls(float(text))

    @property
    def label(self) -> str:
        """The key of its figures (``20.0``; ``0.0p`` through the proxy; ``20.0f`` held in
        the fake)."""
        return f"{self.ms}{'p' if self.proxy_at_zero else ''}{'f' if self.in_fake else ''}"

    def __str__(self) -> str:
        return f"{self.ms:g}ms{'*' if self.proxy_at_zero else ''}{'(f)' if self.in_fake else ''}"


def _paired(rows: list[dict[str, Any]], base: _Latency, latency: _Latency) -> float:
    """sbmgmt's rate at ``latency`` against ``base``'s in the same round, the median over the
    rounds: a slow spell of the machine that spans a round falls on both of its runs, where
    the medians of each latency (``kept``) may take them from different spells."""
    def rates(of: _Latency) -> list[float]:
        return [row["ours_per_s"] for row in rows if row["latency"] == of.label]
    return statistics.median(at / first for at, first in zip(rates(latency), rates(base),
                                                               strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--latency-ms", default="0,5,20",
                        help="round trips to add, in ms; 0p: 0 ms through the proxy; 20f: "
                        "20 ms held in the fake (no proxy)")
    parser.add_argument("--sdk-messages", type=int, default=None,
                        help="messages for the SDK's run (default: --messages; its one "
                        "round trip per completion makes it slow at latency)")
    parser.add_argument("--split", action="store_true",
                        help="also print sbmgmt's plan and move apart: wall time and the CPU "
                        "each took in the client's process and in the fake's")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the latencies this many times over, interleaved, and print "
                        "the medians")
    parser.add_argument("--asyncio", action="store_true",
                        help="sbmgmt's move through repair_async on an AsyncManagementClient")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    try:
        latencies = [_Latency.parse(x) for x in args.latency_ms.split(",")]
    except ValueError as exc:
        parser.error(f"--latency-ms: {exc}")
    sdk_count = args.sdk_messages or args.messages
    rows: list[dict[str, Any]] = []
    with FakeProcess() as fake, \
            ManagementClient.from_connection_string(fake.connection_string,
                                                    timeout=60) as setup:
        for _round in range(args.rounds):
            for latency in latencies:
                fake.set_network_latency(latency.ms / 1000 if latency.in_fake else 0.0)
                with delayed(fake.connection_string, 0.0 if latency.in_fake else latency.ms,
                             proxy_at_zero=latency.proxy_at_zero) as conn:
                    queue = _dead_letters(fake, setup, args.messages, args.size)
                    marks: dict[str, float] = {}
                    ours, ours_s = _timed(partial(_ours, conn, queue, marks, fake.pid,
                                                    args.asyncio))
                    queue = _dead_letters(fake, setup, sdk_count, args.size)
                    sdk, sdk_s = _timed(partial(_sdk, conn, queue, sdk_count))
                rows.append({"latency_ms": latency.ms, "latency": latency.label,
                             "ours": ours, "ours_per_s": ours / ours_s,
                             "sdk": sdk, "sdk_per_s": sdk / sdk_s, **_phases(marks)})
    figures = {latency: {side: Figure.of([row[f"{side}_per_s"] for row in rows
                                          if row["latency"] == latency.label])
                         for side in ("ours", "sdk")}
               for latency in latencies}
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "load": load, "medians": {
            latency.label: {side: figure.median for side, figure in sides.items()}
            for latency, sides in figures.items()}, "kept_paired": {
            latency.label: _paired(rows, latencies[0], latency) for latency in latencies[1:]}}))
        return
    print(f"resubmit {args.messages} dead letters of {args.size} B to their queue "
          f"(SDK: {sdk_count}), {args.rounds} round(s); load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'latency':>8} {'sbmgmt/s':>10} {'kept':>6} {'SDK/s':>8} {'kept':>6} {'ratio':>7}"
          + ("  sbmgmt/s lowest-highest" if args.rounds > 1 else ""))
    base = figures[latencies[0]]
    for latency, sides in figures.items():
        ours_f, sdk_f = sides["ours"], sides["sdk"]
        spread = f"  {ours_f.low:,.0f}-{ours_f.high:,.0f}" if args.rounds > 1 else ""
        print(f"{latency!s:>8} {ours_f.median:>10.0f} "
              f"{ours_f.median / base['ours'].median:>6.0%} {sdk_f.median:>8.0f} "
              f"{sdk_f.median / base['sdk'].median:>6.0%} "
              f"{ours_f.median / sdk_f.median:>6.1f}x{spread}")
    if args.rounds > 1 and len(latencies) > 1:
        paired = [f"{latency} {_paired(rows, latencies[0], latency):.0%}"
                  for latency in latencies[1:]]
        print(f"sbmgmt kept, round by round (the median of each round's rate against its own "
              f"{latencies[0]} run): {', '.join(paired)}")
    proxied = [latency for latency in latencies if latency.proxy_at_zero]
    if proxied:
        through = figures[proxied[0]]["ours"].median
        later = [f"{latency} {sides['ours'].median / through:.0%}"
                 for latency, sides in figures.items()
                 if latency.ms > 0 and not latency.in_fake]
        print(f"* 0 ms through the proxy: {through:,.0f}/s, "
              f"{through / base['ours'].median:.0%} of straight to the fake; sbmgmt kept "
              f"against it: {', '.join(later) or '-'}")
    if args.split:
        print("sbmgmt apart: plan s (client CPU, fake CPU) | move s (client CPU, fake CPU)")
        for row in rows:
            print(f"{row['latency']:>8}  plan {row['plan_s']:.2f} "
                  f"({row['plan_cpu']:.2f}, {row['plan_fake_cpu']:.2f}) | move "
                  f"{row['move_s']:.2f} ({row['move_cpu']:.2f}, {row['move_fake_cpu']:.2f})")


if __name__ == "__main__":
    main()
