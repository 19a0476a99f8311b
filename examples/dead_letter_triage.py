"""Dead-letter triage: read a dead-letter queue, count by reason, write Parquet and a chart.

Usage::

    python examples/dead_letter_triage.py CONNECTION_STRING ENTITY OUT_DIR

``ENTITY`` is a queue or subscription path; its ``/$DeadLetterQueue`` is read. The
output directory gets ``messages.parquet`` (every dead-lettered message),
``by_reason.parquet`` (counts) and ``by_reason.png`` (a bar chart).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sbmgmt.spark import register


def triage(spark: Any, connection_string: str, entity: str, out_dir: Path) -> list[Any]:
    """Write the outputs; return the ``(dead_letter_reason, messages)`` rows, most first."""
    dead_letters = (spark.read.format("servicebus")
                    .option("connectionString", connection_string)
                    .option("entity", f"{entity}/$DeadLetterQueue")
                    .option("partitions", 4)
                    .load())
    dead_letters.write.mode("overwrite").parquet(str(out_dir / "messages.parquet"))
    by_reason = (dead_letters
                 .groupBy(F.coalesce("dead_letter_reason", F.lit("(none)"))
                          .alias("dead_letter_reason"))
                 .agg(F.count("*").alias("messages"))
                 .orderBy(F.desc("messages"), "dead_letter_reason"))
    by_reason.write.mode("overwrite").parquet(str(out_dir / "by_reason.parquet"))
    counts: list[Any] = by_reason.collect()
    _bar_chart(counts, out_dir / "by_reason.png", entity)
    return counts


def _bar_chart(counts: list[Any], path: Path, entity: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4))
    axes.barh([row.dead_letter_reason for row in counts], [row.messages for row in counts])
    axes.invert_yaxis()
    axes.set_xlabel("messages")
    axes.set_title(f"Dead-lettered messages of {entity} by reason")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("connection_string", help="the namespace's connection string")
    parser.add_argument("entity", help="a queue or subscription path; its dead letters are read")
    parser.add_argument("out_dir", type=Path, help="where the Parquet files and the chart go")
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("dead-letter-triage").getOrCreate()
    register(spark)
    for row in triage(spark, args.connection_string, args.entity, args.out_dir):
        print(f"{row.messages:8d}  {row.dead_letter_reason}")


if __name__ == "__main__":
    main()
