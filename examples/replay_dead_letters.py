"""Replay: schedule selected dead-lettered messages back onto their source entity.

Usage::

    python examples/replay_dead_letters.py CONNECTION_STRING ENTITY "SQL PREDICATE"

For example ``"dead_letter_reason = 'MaxDeliveryCountExceeded'"``. The replayed
copies get new message-ids (so duplicate detection does not drop them) and keep the
original's id and sequence number in application properties. The dead-lettered
originals stay where they are; complete them once the replay is verified.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sbmgmt.spark import register


def replay(spark: Any, connection_string: str, entity: str, predicate: str) -> int:
    """Schedule the dead letters of ``entity`` matching ``predicate``; return how many."""
    selected = (spark.read.format("servicebus")
                .option("connectionString", connection_string)
                .option("entity", f"{entity}/$DeadLetterQueue")
                .load()
                .where(predicate)
                .cache())
    properties = F.map_concat(
        F.coalesce("application_properties", F.create_map().cast("map<string,string>")),
        F.create_map(
            F.lit("replayed-from-message-id"), F.coalesce("message_id", F.lit("")),
            F.lit("replayed-from-sequence-number"), F.col("sequence_number").cast("string")))
    (selected.select("body", "session_id", "subject", "content_type", "correlation_id",
                     properties.alias("application_properties"))
     .write.format("servicebus").mode("append")
     .option("connectionString", connection_string)
     .option("entity", entity)
     .save())
    count: int = selected.count()
    selected.unpersist()
    return count


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("connection_string", help="the namespace's connection string")
    parser.add_argument("entity", help="a queue or subscription path; its dead letters are read")
    parser.add_argument("predicate", help="a Spark SQL predicate on the read schema, e.g. "
                        "\"dead_letter_reason = 'MaxDeliveryCountExceeded'\"")
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("replay-dead-letters").getOrCreate()
    register(spark)
    count = replay(spark, args.connection_string, args.entity, args.predicate)
    print(f"replayed {count} messages")


if __name__ == "__main__":
    main()
