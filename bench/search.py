"""Finding messages by their body: sbmgmt's search against reading the entity and against
what an official SDK user writes.

    .venv/bin/python -m bench.search --messages 100000 --size 1024 --latency-ms 0,5,20

The fake runs in its own process (``bench/_fake.py``). One queue is filled once with
``--messages`` JSON messages of about ``--size`` bytes (an order each; one in a hundred,
spread evenly through the queue, has ``"status": "failed"``); peeking changes nothing, so
every run reads the same queue. At each latency (a round trip added on the TCP path by
``bench/_delay.py``'s proxy, as ``bench.repair`` does) three readers read it whole:

- *peek_all*: ``EntityClient.peek_all()``, every message handed out, nothing looked at
  (what reading costs);
- *search*: ``sbmgmt.actions.search.search`` with ``Conditions(body='"status": "failed"')``
  (the body as the explorer shows it, any case): the 1% found; the time to the first match
  is printed too;
- *SDK*: azure-servicebus's receiver, ``peek_messages`` of 250 from the next sequence
  number until none come (the SDK's peek loop), each body joined, decoded and tested with
  the same text, any case, in Python (``needle in text.casefold()``).

``--rounds N`` reads each latency's row N times, the readers taking turns (peek_all,
search, SDK, peek_all, ...), and prints each round and the medians: on a machine shared
with other work, one round's ratio says more about the others' load than about the
search.

``--namespace N`` adds a row: N queues of ``--per-entity`` messages each (the same bodies)
searched as a namespace (``search_namespace``) with 1 and with ``--in-flight`` entities at
once, at each latency. Each row prints seconds and messages read per second; ``x peek_all``
is the search's time over peek_all's, ``SDK/search`` the SDK's over the search's. The
client's peak memory (``ru_maxrss``) is printed after the fill and at the end: the search
holds only the pages in flight.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusClient  # noqa: E402

from bench._delay import delayed  # noqa: E402
from bench._fake import FakeProcess  # noqa: E402
from sbmgmt import ManagementClient, Message  # noqa: E402
from sbmgmt.actions.search import Conditions, search, search_namespace  # noqa: E402

NEEDLE = '"status": "failed"'
_BATCH = 500


def _body(n: int, size: int) -> bytes:
    order = {"order": {"id": n, "status": "failed" if n % 100 == 50 else "ok",
                       "customer": {"id": n % 977, "name": f"customer {n % 977}"},
                       "lines": [{"sku": f"SKU-{(n + i) % 9973:05d}", "qty": i + 1,
                                  "price": 9.5 + i} for i in range(4)]}}
    text = json.dumps(order)
    pad = max(0, size - len(text) - len(', "note": ""'))
    return json.dumps({**order, "note": "n" * pad}).encode()


def _fill(client: ManagementClient, queue: str, count: int, size: int) -> None:
    with client.entity(queue).sender() as sender:
        pending = []
        for start in range(0, count, _BATCH):
            pending.append(sender.submit_all(
                [Message(body=_body(n, size), message_id=f"order-{n}",
                         content_type="application/json")
                 for n in range(start, min(count, start + _BATCH))]))
            if len(pending) >= 8:
                pending.pop(0).result()
        for future in pending:
            future.result()


def _timed(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    gc.collect()
    start = time.perf_counter()
    result = run()
    result["s"] = time.perf_counter() - start
    return result


def _peek_all(conn: str, queue: str) -> dict[str, Any]:
    with ManagementClient.from_connection_string(conn, timeout=60) as client:
        start = time.perf_counter()
        read = sum(1 for _ in client.entity(queue).peek_all())
        return {"read": read, "s": time.perf_counter() - start}


def _search(conn: str, queue: str) -> dict[str, Any]:
    with ManagementClient.from_connection_string(conn, timeout=60) as client:
        start = time.perf_counter()
        first = None
        found = 0
        told: list[int] = []
        for _ in search(client, queue, Conditions(body=NEEDLE),
                        on_progress=lambda p: told.append(p.done)):
            if first is None:
                first = time.perf_counter() - start
            found += 1
        return {"read": told[-1], "found": found, "first_s": first,
                "s": time.perf_counter() - start}


def _sdk(conn: str, queue: str) -> dict[str, Any]:
    needle = NEEDLE.casefold()
    with ServiceBusClient.from_connection_string(conn) as sdk, \
            sdk.get_queue_receiver(queue) as receiver:
        start = time.perf_counter()
        first = None
        found = read = 0
        after = 0
        while True:
            page = receiver.peek_messages(max_message_count=250, sequence_number=after + 1)
            if not page:
                break
            for message in page:
                read += 1
                text = b"".join(message.body).decode("utf-8", "replace")
                if needle in text.casefold():
                    found += 1
                    if first is None:
                        first = time.perf_counter() - start
            after = page[-1].sequence_number or after + len(page)
        return {"read": read, "found": found, "first_s": first,
                "s": time.perf_counter() - start}


def _namespace(conn: str, queues: list[str], in_flight: int) -> dict[str, Any]:
    with ManagementClient.from_connection_string(conn, timeout=60) as client:
        start = time.perf_counter()
        told: list[int] = []
        found = sum(1 for _ in search_namespace(client, queues, Conditions(body=NEEDLE),
                                                in_flight=in_flight,
                                                on_progress=lambda p: told.append(p.done)))
        return {"read": told[-1], "found": found, "s": time.perf_counter() - start}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--latency-ms", default="0,5,20")
    parser.add_argument("--namespace", type=int, default=0,
                        help="also search N queues of --per-entity messages as a namespace")
    parser.add_argument("--per-entity", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--no-sdk", action="store_true", help="leave the SDK's loop out")
    parser.add_argument("--rounds", type=int, default=1,
                        help="read each latency's row N times, the readers taking turns, "
                             "and print the medians")
    args = parser.parse_args()
    latencies = [float(x) for x in args.latency_ms.split(",")]
    rows: list[dict[str, Any]] = []
    with FakeProcess() as fake, \
            ManagementClient.from_connection_string(fake.connection_string,
                                                    timeout=120) as setup:
        queue = fake.new_queue("search")
        started = time.perf_counter()
        _fill(setup, queue, args.messages, args.size)
        filled_s = time.perf_counter() - started
        queues = [fake.new_queue(f"ns{i}") for i in range(args.namespace)]
        for name in queues:
            _fill(setup, name, args.per_entity, args.size)
        fake.freeze()
        after_fill = _peak_mb()
        print(f"filled {args.messages} messages of ~{args.size} B in {filled_s:.1f} s "
              f"({args.messages / filled_s:,.0f}/s); load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        for ms in latencies:
            with delayed(fake.connection_string, ms) as conn:
                rounds = [_round(conn, queue, queues, ms, args) for _ in range(args.rounds)]
            row = rounds[0] if len(rounds) == 1 else _median(rounds)
            rows.append(row)
            if len(rounds) > 1:
                for number, one in enumerate(rounds, 1):
                    print(f"  round {number}: ", end="")
                    _print(one, args)
                print("  median: ", end="")
            _print(row, args)
    print(f"client peak RSS: {after_fill:.0f} MB after the fill, {_peak_mb():.0f} MB at the end")
    print(json.dumps(rows))


def _round(conn: str, queue: str, queues: list[str], ms: float,
           args: argparse.Namespace) -> dict[str, Any]:
    """One reading of a latency's row, each reader in turn."""
    row: dict[str, Any] = {"latency_ms": ms}
    row["peek_all"] = _timed(lambda: _peek_all(conn, queue))
    row["search"] = _timed(lambda: _search(conn, queue))
    if not args.no_sdk:
        row["sdk"] = _timed(lambda: _sdk(conn, queue))
    if queues:
        row["namespace_1"] = _timed(lambda: _namespace(conn, queues, 1))
        row["namespace_n"] = _timed(lambda: _namespace(conn, queues, args.in_flight))
    return row


def _median(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds' median of each time (the counts are every round's)."""
    row: dict[str, Any] = {"latency_ms": rounds[0]["latency_ms"]}
    for reader in rounds[0]:
        if reader != "latency_ms":
            row[reader] = {**rounds[0][reader]}
            for key in ("s", "first_s"):
                if key in row[reader]:
                    row[reader][key] = statistics.median(one[reader][key] for one in rounds)
    return row


def _print(row: dict[str, Any], args: argparse.Namespace) -> None:
    ms = row["latency_ms"]
    peek, found = row["peek_all"], row["search"]
    line = (f"{ms:g} ms: peek_all {peek['s']:.2f} s ({peek['read'] / peek['s']:,.0f}/s); "
            f"search {found['s']:.2f} s ({found['read'] / found['s']:,.0f}/s, "
            f"{found['found']} found, first after {found['first_s'] * 1000:.0f} ms) = "
            f"{found['s'] / peek['s']:.2f} x peek_all")
    if "sdk" in row:
        sdk = row["sdk"]
        line += (f"; SDK loop {sdk['s']:.2f} s ({sdk['read'] / sdk['s']:,.0f}/s, "
                 f"{sdk['found']} found, first after {sdk['first_s'] * 1000:.0f} ms) = "
                 f"{sdk['s'] / found['s']:.1f} x the search")
    print(line, flush=True)
    if "namespace_1" in row:
        one, many = row["namespace_1"], row["namespace_n"]
        print(f"   namespace {args.namespace} x {args.per_entity}: one entity at a time "
              f"{one['s']:.2f} s, {args.in_flight} in flight {many['s']:.2f} s "
              f"({many['read'] / many['s']:,.0f}/s, {many['found']} found)", flush=True)


if __name__ == "__main__":
    main()
