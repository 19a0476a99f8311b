"""The explorer's speed targets (issue 38): a namespace of 1,000 entities lists in under a
second against the fake; a queue of 100,000 messages pages without loading it whole, each
page under 300 ms at 5 ms of latency.

The fake runs in its own process (a ``FakeNamespace`` with an HTTP port, 900 queues and
20 topics of 4 subscriptions each: 1,000 entities, more than the emulator's config takes;
every management reply delayed by L ms); the explorer is served in this process as
``sbmgmt explore`` serves it, and asked over HTTP with its cookie, as a browser would (the
time to the last byte of the page, rendering included; the browser's drawing is not). Beside each
figure, in the same run, what a user of the official SDK does for the same job: the
administration client's three listings (what the explorer calls) and azure-servicebus's
``peek_messages`` of the same page.

    .venv/bin/python bench/explorer_timings.py [--latency-ms 5] [--messages 100000] [--reps 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusClient  # noqa: E402

from sbmgmt import ManagementClient, Message  # noqa: E402
from sbmgmt.actions.entities import admin_client, list_entities  # noqa: E402
from sbmgmt.explorer import Explorer, Namespace  # noqa: E402

QUEUES, TOPICS, SUBSCRIPTIONS = 900, 20, 4
BIG = "big"


# The fake in a child process (the emulator's config allows 50 queues; this namespace is
# bigger): the entities, the injected latency, then its connection string and HTTP port
# on stdout; it stops when its stdin closes.
_CHILD = """
import sys
from fakes import FakeNamespace
queues, topics, subscriptions, latency = (float(a) for a in sys.argv[1:])
with FakeNamespace(http_port=0) as fake:
    fake.add_queue("big")
    for n in range(int(queues) - 1):
        fake.add_queue(f"queue-{n:04d}")
    for t in range(int(topics)):
        fake.add_topic(f"topic-{t:02d}")
        for s in range(int(subscriptions)):
            fake.add_subscription(f"topic-{t:02d}", f"sub-{s}")
    if latency:
        fake.faults.latency(latency / 1000)
    print(fake.connection_string, fake.http_port, sep="\\n", flush=True)
    sys.stdin.read()
"""


def _sdk_listing(admin: Any) -> int:
    """What a user of the official SDK does for the namespace's counts: the three listings
    of the administration client, one after the other."""
    listed = 0
    for _ in admin.list_queues_runtime_properties():
        listed += 1
    for topic in admin.list_topics_runtime_properties():
        listed += 1 + sum(1 for _ in admin.list_subscriptions_runtime_properties(topic.name))
    return listed


def _timed(work: Callable[[], object], reps: int) -> list[float]:
    work()  # warm
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _row(label: str, ours: list[float], theirs: list[float] | None, target: str) -> str:
    median = statistics.median(ours)
    cell = f"{median:.0f} ({min(ours):.0f}-{max(ours):.0f})"
    if theirs is None:
        return f"| {label} | {cell} | | | {target} |"
    base = statistics.median(theirs)
    return (f"| {label} | {cell} | {base:.0f} ({min(theirs):.0f}-{max(theirs):.0f}) | "
            f"{median / base:.2f} | {target} |")


def _rss_mb() -> float:
    """This process's resident memory (Linux: /proc/self/statm)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _memory_row(get: Callable[[str], Callable[[], object]], messages: int) -> str:
    """Every page of the queue, 250 at a time, one after the other: the process's memory
    before and after (the server keeps no page: it should not grow with the queue)."""
    before = _rss_mb()
    started, pages = time.perf_counter(), 0
    for start in range(1, messages + 1, 250):
        get(f"/messages?path={BIG}&from={start}&size=250")()
        pages += 1
    seconds = time.perf_counter() - started
    return (f"| every page of {BIG} ({pages} pages of 250) | {seconds * 1000 / pages:.0f} per "
            f"page; resident memory {before:.0f} -> {_rss_mb():.0f} MB | | | |")


def main() -> None:
    """Run the measurements and print a Markdown table (milliseconds: median (min-max))."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    process = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(QUEUES), str(TOPICS), str(SUBSCRIPTIONS),
         str(args.latency_ms)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        http_port = int(process.stdout.readline().strip())
        _measure(connection_string, http_port, args)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def _measure(connection_string: str, http_port: int, args: argparse.Namespace) -> None:
    with ManagementClient.from_connection_string(connection_string) as client, \
            admin_client(connection_string=connection_string, http_port=http_port) as admin:
        started = time.perf_counter()
        entity = client.entity(BIG)
        for start in range(0, args.messages, 250):
            entity.schedule_messages([Message(body=b"x" * 100) for _ in range(
                min(250, args.messages - start))], datetime.now(timezone.utc))
        print(f"filled {BIG} with {args.messages} messages in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        namespace = Namespace(label="bench", client=client, admin=admin)
        with Explorer(namespace) as explorer:
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
            opener.open(explorer.url).read()

            def get(path: str) -> Callable[[], object]:
                return lambda: opener.open(explorer.base_url + path).read()

            counted = len(list_entities(admin))
            rows = [_row(f"namespace page, {counted} entities", _timed(get("/"), args.reps),
                         _timed(lambda: _sdk_listing(admin), args.reps), "< 1000 ms")]
            with ServiceBusClient.from_connection_string(connection_string) as sdk, \
                    sdk.get_queue_receiver(BIG) as receiver:
                for size in (50, 250):
                    for start in (1, args.messages // 2, args.messages - size + 1):
                        ours = _timed(get(f"/messages?path={BIG}&from={start}&size={size}"),
                                      args.reps)
                        theirs = _timed(lambda s=start, n=size: receiver.peek_messages(
                            max_message_count=n, sequence_number=s), args.reps)
                        rows.append(_row(f"messages page of {size} from {start}", ours,
                                         theirs, "< 300 ms"))
            rows.append(_memory_row(get, args.messages))
    load = os.getloadavg()
    print(f"latency {args.latency_ms:g} ms; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; ms, median (min-max) of {args.reps}")
    print("| what | explorer (HTTP, rendered) | official SDK, same job | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
