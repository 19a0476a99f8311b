"""Streaming reads of the ``servicebus`` Spark source on ``local-cluster[2,1,1024]``.

Runs standalone: ``python -m bench.spark_streaming [--messages N] [--seconds S] [--rate R]``.

- **throughput**: a fake namespace on loopback holds N messages of 1 KB; a stream from
  ``startingSequenceNumber=earliest`` with ``maxMessagesPerTrigger=N/4`` reads them all
  (``Trigger.AvailableNow``) into the ``noop`` sink with 1 and with 4 partitions. Rows
  per second = N / the summed duration of the micro-batches (query start-up excluded),
  and N / the query's wall time.
- **latency**: a thread sends R messages per second (in 10 sends a second) for S
  seconds while a stream from ``latest`` (default trigger: the next micro-batch as soon
  as one ends) delivers them to a ``foreachBatch`` sink on the driver, which notes when
  each micro-batch's rows arrive. Latency = that time - the message's enqueued time
  (the fake stamps it with the wall clock when it stores the message); median and p99
  over the run, for 1 and 4 partitions.

Two executors with one core each run in their own JVMs (``local-cluster``), so each
task's peeks travel from another process to the fake in this one. A short latency run
first starts the executors' Python workers, so neither figure pays for that. The table and a last
JSON line are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from fakes import FakeNamespace
from sbmgmt.message import Message

from ._spark import session

MASTER = "local-cluster[2,1,1024]"
PARTITIONS = (1, 4)


def _stream(spark: Any, fake: FakeNamespace, entity: str, partitions: int,
            **options: Any) -> Any:
    reader = (spark.readStream.format("servicebus")
              .option("connectionString", fake.connection_string)
              .option("entity", entity).option("partitions", partitions))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def throughput(spark: Any, fake: FakeNamespace, messages: int, partitions: int,
               checkpoint: Path) -> dict[str, float]:
    """Read the ``export`` queue to its end; rows per second over batches and wall time."""
    started = time.perf_counter()
    query = (_stream(spark, fake, "export", partitions, startingSequenceNumber="earliest",
                     maxMessagesPerTrigger=max(1, messages // 4))
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    wall = time.perf_counter() - started
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in progress)
    if rows != messages:
        raise RuntimeError(f"read {rows} rows, expected {messages}")
    batches = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000.0
    return {"rows_per_second": rows / batches, "rows_per_second_wall": rows / wall,
            "batches": len(progress)}


class _Feeder(threading.Thread):
    """Sends ``rate`` messages a second to ``entity`` in 10 sends a second."""

    def __init__(self, fake: FakeNamespace, entity: str, rate: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.fake, self.entity, self.rate, self.seconds = fake, entity, rate, seconds
        self.sent = 0

    def run(self) -> None:
        per_tick = max(1, self.rate // 10)
        body = b"x" * 1024
        start = time.monotonic()
        tick = 0
        while time.monotonic() - start < self.seconds:
            self.fake.send(self.entity, *(Message(body=body, message_id=str(self.sent + i))
                                          for i in range(per_tick)))
            self.sent += per_tick
            tick += 1
            time.sleep(max(0.0, start + tick / 10 - time.monotonic()))


def latency(spark: Any, fake: FakeNamespace, entity: str, partitions: int, rate: int,
            seconds: float, checkpoint: Path) -> dict[str, float]:
    """Enqueue-to-sink latency while ``rate`` messages a second arrive for ``seconds``."""
    latencies: list[float] = []

    def sink(batch: Any, batch_id: int) -> None:
        rows = batch.select("enqueued_time").collect()
        arrived = time.time()
        latencies.extend(arrived - row.enqueued_time.timestamp() for row in rows)

    query = (_stream(spark, fake, entity, partitions).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(checkpoint)).start())
    while not query.recentProgress:  # the first (empty) micro-batch fixed the start
        time.sleep(0.2)
    feeder = _Feeder(fake, entity, rate, seconds)
    feeder.start()
    feeder.join()
    deadline = time.monotonic() + 120
    while len(latencies) < feeder.sent and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    if len(latencies) != feeder.sent:
        raise RuntimeError(f"the sink saw {len(latencies)} of {feeder.sent} messages")
    ordered = sorted(latencies)
    return {"messages": len(ordered), "median_s": statistics.median(ordered),
            "p99_s": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run both scenarios and print the table and the JSON line; return the figures."""
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rate", type=int, default=200, help="messages/s in the latency run")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of a latency run")
    args = parser.parse_args(argv)
    spark = session(MASTER, "sbmgmt-spark-streaming")
    results: dict[str, Any] = {"master": MASTER, "messages": args.messages,
                               "rate": args.rate, "seconds": args.seconds,
                               "throughput": {}, "latency": {}}
    with FakeNamespace() as fake, tempfile.TemporaryDirectory() as scratch:
        fake.add_queue("export")
        body = b"x" * 1024
        for start in range(0, args.messages, 1000):
            fake.send("export", *(Message(body=body, message_id=str(i))
                                  for i in range(start, min(start + 1000, args.messages))))
        fake.add_queue("warm-up")
        latency(spark, fake, "warm-up", 4, 100, 2.0, Path(scratch) / "w")  # start workers
        for partitions in PARTITIONS:
            fake.add_queue(f"live-{partitions}")
            results["throughput"][partitions] = throughput(
                spark, fake, args.messages, partitions, Path(scratch) / f"t{partitions}")
            results["latency"][partitions] = latency(
                spark, fake, f"live-{partitions}", partitions, args.rate, args.seconds,
                Path(scratch) / f"l{partitions}")
    spark.stop()
    print(f"{'partitions':>10} {'rows/s (batches)':>17} {'rows/s (wall)':>14} "
          f"{'latency median':>15} {'latency p99':>12}")
    for partitions in PARTITIONS:
        rate, lag = results["throughput"][partitions], results["latency"][partitions]
        print(f"{partitions:>10} {rate['rows_per_second']:>17.0f} "
              f"{rate['rows_per_second_wall']:>14.0f} {lag['median_s']:>14.2f}s "
              f"{lag['p99_s']:>11.2f}s")
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
