"""Streaming with Spark: readStream in bounded micro-batches that resume from the
checkpoint, writeStream with every row scheduled once across a task retry, and option
errors at load()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient

from ._faults import FailOnce
from .conftest import fill

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def _stream(spark: Any, fake: FakeNamespace, entity: str, **options: Any) -> Any:
    reader = (spark.readStream.format("servicebus")
              .option("connectionString", fake.connection_string).option("entity", entity))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _to_parquet(df: Any, out: Path) -> list[int]:
    """Run the stream into Parquet until it has read what is there; rows per batch."""
    query = (df.writeStream.format("parquet").option("path", str(out / "table"))
             .option("checkpointLocation", str(out / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def _peeked(fake: FakeNamespace, entity: str) -> list[tuple[int, str | None]]:
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        return [(m.sequence_number, m.message_id)  # type: ignore[misc]
                for m in client.entity(entity).peek_messages(0, 1000)]


def test_read_stream_in_bounded_batches_and_resume(
    spark: Any, namespace: FakeNamespace, tmp_path: Path
) -> None:
    fill(namespace, "q", 45)
    df = _stream(spark, namespace, "q", startingSequenceNumber="earliest",
                 maxMessagesPerTrigger=20, partitions=2, pageSize=7)
    assert df.schema == spark.read.format("servicebus").option(
        "connectionString", namespace.connection_string).option("entity", "q").load().schema
    assert _to_parquet(df, tmp_path) == [20, 20, 5]
    fill(namespace, "q", 12)
    assert _to_parquet(df, tmp_path) == [12]  # the restarted query reads only the new ones
    table = spark.read.parquet(str(tmp_path / "table"))
    rows = sorted((r.sequence_number, r.message_id) for r in table.collect())
    assert rows == _peeked(namespace, "q")
    assert {r.state for r in table.select("state").collect()} == {"active"}


def test_foreach_batch_by_batch_id_resumes_after_a_failed_batch(
    spark: Any, namespace: FakeNamespace, tmp_path: Path
) -> None:
    fill(namespace, "q", 35)
    failed: list[int] = []

    def by_batch_id(batch: Any, batch_id: int) -> None:
        batch.write.mode("overwrite").parquet(str(tmp_path / "table" / f"batch={batch_id}"))
        if batch_id == 1 and not failed:  # dies after writing, before Spark commits
            failed.append(batch_id)
            raise RuntimeError("the driver died here")

    def run() -> Any:
        return (_stream(spark, namespace, "q", startingSequenceNumber="earliest",
                        maxMessagesPerTrigger=10)
                .writeStream.foreachBatch(by_batch_id)
                .option("checkpointLocation", str(tmp_path / "checkpoint"))
                .trigger(availableNow=True).start())

    with pytest.raises(Exception, match="the driver died here"):
        run().awaitTermination()
    run().awaitTermination()  # batch 1 runs again, with the same offsets
    table = spark.read.parquet(str(tmp_path / "table"))
    rows = sorted((r.sequence_number, r.message_id) for r in table.collect())
    assert rows == _peeked(namespace, "q")
    assert sorted({r.batch for r in table.select("batch").collect()}) == [0, 1, 2, 3]


def test_stream_from_latest_sees_only_new_messages(
    spark: Any, namespace: FakeNamespace, tmp_path: Path
) -> None:
    fill(namespace, "q", 10)
    df = _stream(spark, namespace, "q")
    assert _to_parquet(df, tmp_path) == []
    fill(namespace, "q", 4)
    assert _to_parquet(df, tmp_path) == [4]
    assert sorted(r.sequence_number for r in spark.read.parquet(
        str(tmp_path / "table")).collect()) == [11, 12, 13, 14]


def test_write_stream_schedules_each_row_once_across_a_task_retry(
    spark: Any, namespace: FakeNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(namespace, "q", 60)
    fault = FailOnce(monkeypatch, nth=3)
    query = (_stream(spark, namespace, "q", startingSequenceNumber="earliest",
                     maxMessagesPerTrigger=40, partitions=2)
             .selectExpr("body", "subject", "message_id as correlation_id")
             .writeStream.format("servicebus")
             .option("connectionString", namespace.connection_string)
             .option("entity", "target").option("batchSize", 5)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert fault.failed  # one task attempt failed after scheduling some batches
    with ManagementClient.from_connection_string(namespace.connection_string) as client:
        written = client.entity("target").peek_messages(0, 1000)
    assert sorted(m.correlation_id for m in written) == sorted(f"m-{i}" for i in range(60))
    assert len({m.message_id for m in written}) == 60


def test_option_errors(spark: Any, namespace: FakeNamespace, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="option maxMessagesPerTrigger must be a positive"):
        _stream(spark, namespace, "q", maxMessagesPerTrigger=0)  # at load(), no query
    with pytest.raises(Exception, match=r"maxMessagesPerTrigger applies to spark\.readStream"):
        (spark.read.format("servicebus").option("connectionString", namespace.connection_string)
         .option("entity", "q").option("maxMessagesPerTrigger", 5).load().collect())
    query = (_stream(spark, namespace, "q").selectExpr("body").writeStream.format("servicebus")
             .option("connectionString", namespace.connection_string).option("entity", "target")
             .option("batchSize", "many")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    with pytest.raises(Exception, match="option batchSize must be an integer"):
        query.processAllAvailable()
    query.stop()
