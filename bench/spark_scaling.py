"""Export throughput of the ``servicebus`` Spark reader with 1, 2 and 4 partitions.

Runs standalone: ``python -m bench.spark_scaling [--messages N] [--latency-ms MS]``.
A fake namespace on loopback holds N messages of 1 KB; every management reply is
delayed by the injected latency. Each read counts the rows (all columns are built);
the table gives rows per second and the speed-up over one partition, and the last
line is the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from fakes import FakeNamespace
from sbmgmt.message import Message

from ._spark import session


def _timed_read(spark: Any, fake: FakeNamespace, partitions: int, page_size: int,
                in_flight: int) -> float:
    df = (spark.read.format("servicebus")
          .option("connectionString", fake.connection_string)
          .option("entity", "export").option("partitions", partitions)
          .option("pageSize", page_size).option("pagesInFlight", in_flight).load())
    started = time.perf_counter()
    rows = df.select("sequence_number", "body").rdd.map(lambda r: len(r.body)).count()
    elapsed = time.perf_counter() - started
    if rows != _messages:
        raise RuntimeError(f"read {rows} rows, expected {_messages}")
    return elapsed


_messages = 0


#: (name, pageSize, pagesInFlight): the defaults-like pipelined read, and a latency-bound
#: one (one small page at a time) where only partitions can hide the latency.
CONFIGS = (("pipelined", 100, 8), ("latency-bound", 10, 1))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the scenario and print the table and the JSON line; return the figures."""
    global _messages
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=8_000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    _messages = args.messages
    spark = session("local[4]", "sbmgmt-spark-scaling")
    results: dict[str, Any] = {"messages": args.messages, "latency_ms": args.latency_ms,
                               "rows_per_second": {}}
    with FakeNamespace() as fake:
        fake.add_queue("export")
        body = b"x" * 1024
        for start in range(0, args.messages, 1000):
            fake.send("export", *(Message(body=body, message_id=str(i))
                                  for i in range(start, min(start + 1000, args.messages))))
        fake.faults.latency(args.latency_ms / 1000.0)
        _timed_read(spark, fake, 4, 100, 8)  # warm up the Python workers
        for name, page_size, in_flight in CONFIGS:
            rates = results["rows_per_second"][name] = {}
            for partitions in (1, 2, 4):
                best = min(_timed_read(spark, fake, partitions, page_size, in_flight)
                           for _ in range(args.repeat))
                rates[partitions] = args.messages / best
    spark.stop()
    print(f"{'read':>14} {'partitions':>10} {'rows/s':>10} {'speed-up':>9}")
    for name, rates in results["rows_per_second"].items():
        for partitions, rate in rates.items():
            print(f"{name:>14} {partitions:>10} {rate:>10.0f} {rate / rates[1]:>8.2f}x")
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
