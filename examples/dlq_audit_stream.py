"""Dead-letter audit trail: tail a dead-letter queue into Parquet, chart the reasons.

Usage::

    python examples/dlq_audit_stream.py CONNECTION_STRING ENTITY OUT_DIR [--available-now]

``ENTITY`` is a queue or subscription path; its ``/$DeadLetterQueue`` is followed with
``spark.readStream.format("servicebus")`` from its first message on. Every dead-lettered
message becomes a row of ``OUT_DIR/dead_letters`` (Parquet, checkpointed in
``OUT_DIR/checkpoint``: stop or kill the script at any point and run it again, it
resumes where it stopped, without duplicates or gaps). ``OUT_DIR/reasons.png`` charts
the dead-letter reasons over time; it is redrawn every ``--chart-every`` seconds while
the stream runs. With ``--available-now`` the script reads what the queue holds now,
draws the chart, prints the count per reason and exits.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sbmgmt.spark import READ_SCHEMA, register

#: Messages one micro-batch reads at most.
MAX_PER_TRIGGER = 500
#: Time buckets on the chart's axis.
BUCKETS = 24


def start_audit(spark: Any, connection_string: str, entity: str, out_dir: Path,
                available_now: bool = False) -> Any:
    """Start the query that appends the dead-letter queue's messages to Parquet."""
    dead_letters = (spark.readStream.format("servicebus")
                    .option("connectionString", connection_string)
                    .option("entity", f"{entity}/$DeadLetterQueue")
                    .option("startingSequenceNumber", "earliest")
                    .option("maxMessagesPerTrigger", MAX_PER_TRIGGER)
                    .option("partitions", 2)
                    .load())
    writer = (dead_letters.writeStream.format("parquet")
              .option("path", str(out_dir / "dead_letters"))
              .option("checkpointLocation", str(out_dir / "checkpoint"))
              .queryName("dlq_audit"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="1 second")
    return writer.start()


def reasons_over_time(spark: Any, out_dir: Path, entity: str) -> list[Any]:
    """Draw ``reasons.png`` from the table; return the ``(reason, messages)`` rows."""
    if not (out_dir / "dead_letters").exists():
        return []
    table = (spark.read.schema(READ_SCHEMA).parquet(str(out_dir / "dead_letters"))
             .select(F.coalesce("dead_letter_reason", F.lit("(none)")).alias("reason"),
                     "enqueued_time"))
    span = table.agg(F.min("enqueued_time").alias("first"),
                     F.max("enqueued_time").alias("last")).first()
    totals: list[Any] = (table.groupBy("reason").agg(F.count("*").alias("messages"))
                         .orderBy(F.desc("messages"), "reason").collect())
    if span is None or span.first is None:
        return totals
    width = max(1, int((span.last - span.first).total_seconds() // BUCKETS) + 1)
    seconds = F.col("enqueued_time").cast("long")
    counts = (table.groupBy("reason", (seconds - seconds % width).alias("bucket"))
              .count().collect())
    _chart(counts, width, out_dir / "reasons.png", entity)
    return totals


def _chart(counts: list[Any], width: int, path: Path, entity: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buckets = sorted({row.bucket for row in counts})
    times = [datetime.fromtimestamp(b).astimezone() for b in buckets]
    by_reason: dict[str, dict[int, int]] = {}
    for row in counts:
        by_reason.setdefault(row.reason, {})[row.bucket] = row["count"]
    figure, axes = plt.subplots(figsize=(9, 4.5))
    bottom = [0] * len(buckets)
    bar = timedelta(seconds=width * 0.9)
    for reason in sorted(by_reason, key=lambda r: -sum(by_reason[r].values())):
        heights = [by_reason[reason].get(b, 0) for b in buckets]
        axes.bar(times, heights, width=bar, bottom=bottom, align="edge", label=reason)
        bottom = [a + b for a, b in zip(bottom, heights, strict=True)]
    axes.set_ylabel(f"messages per {width} s")
    axes.set_xlabel("enqueued time")
    axes.set_title(f"Dead-lettered messages of {entity} by reason")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.autofmt_xdate()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("connection_string")
    parser.add_argument("entity")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--available-now", action="store_true",
                        help="read what the queue holds now, chart it and exit")
    parser.add_argument("--chart-every", type=float, default=60.0,
                        help="seconds between redraws of the chart while following")
    args = parser.parse_args(argv)
    spark = (SparkSession.builder.appName("dlq-audit-stream")
             # A run killed while Spark wrote its very first offsets leaves a temporary
             # file in the checkpoint, which this check would refuse on the next start.
             .config("spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart", "false")
             .getOrCreate())
    register(spark)
    query = start_audit(spark, args.connection_string, args.entity, args.out_dir,
                        args.available_now)
    print(f"following {args.entity}/$DeadLetterQueue into {args.out_dir / 'dead_letters'}",
          flush=True)
    while not query.awaitTermination(args.chart_every):
        reasons_over_time(spark, args.out_dir, args.entity)
    for row in reasons_over_time(spark, args.out_dir, args.entity):
        print(f"{row.messages:8d}  {row.reason}")


if __name__ == "__main__":
    main()
