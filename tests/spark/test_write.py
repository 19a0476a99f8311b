"""Writing with Spark: every row scheduled once, also when a task fails and is retried."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pyspark.sql import functions as F

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient

from ._faults import FailOnce

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def _peek_all(fake: FakeNamespace, entity: str) -> list[Any]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=30) as client:
        return client.entity(entity).peek_messages(0, 5000)


def _frame(spark: Any, count: int) -> Any:
    return (spark.range(count, numPartitions=2)
            .select(F.concat(F.lit("row-"), F.col("id").cast("string")).cast("binary")
                    .alias("body"),
                    F.lit("replayed").alias("subject"),
                    F.create_map(F.lit("n"), F.col("id").cast("string"))
                    .alias("application_properties")))


def _save(df: Any, fake: FakeNamespace, entity: str, **options: Any) -> None:
    writer = (df.write.format("servicebus").mode("append")
              .option("connectionString", fake.connection_string).option("entity", entity))
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_every_row_scheduled_exactly_once(spark: Any, namespace: FakeNamespace) -> None:
    later = datetime.now(timezone.utc) + timedelta(days=1)
    df = _frame(spark, 500).withColumn(
        "scheduled_enqueue_time",
        F.when(F.col("application_properties")["n"].cast("int") < 10, F.lit(later)))
    _save(df, namespace, "target", batchSize=40)
    peeked = _peek_all(namespace, "target")
    assert sorted(m.body_bytes() for m in peeked) == sorted(
        f"row-{i}".encode() for i in range(500))
    assert len({m.message_id for m in peeked}) == 500
    assert sum(m.state.name == "SCHEDULED" for m in peeked) == 10
    assert {m.subject for m in peeked} == {"replayed"}


def test_a_task_failing_mid_way_is_retried_without_duplicates(
    spark: Any, namespace: FakeNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = FailOnce(monkeypatch, nth=4)
    _save(_frame(spark, 600), namespace, "target", batchSize=50)
    assert fault.failed  # one task attempt failed after scheduling some batches
    peeked = _peek_all(namespace, "target")
    bodies = [m.body_bytes() for m in peeked]
    assert sorted(bodies) == sorted(f"row-{i}".encode() for i in range(600))
    assert len(set(bodies)) == len(bodies)


def test_write_errors_are_clear(spark: Any, namespace: FakeNamespace) -> None:
    payload = spark.range(3).selectExpr("cast(cast(id as string) as binary) as payload")
    with pytest.raises(Exception, match="unknown column 'payload'"):
        _save(payload, namespace, "target")
    with pytest.raises(Exception, match="supports only mode"):
        (payload.withColumnRenamed("payload", "body").write.format("servicebus")
         .mode("overwrite").option("connectionString", namespace.connection_string)
         .option("entity", "target").save())
