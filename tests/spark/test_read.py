"""Reading with Spark: partitioned reads equal one sequential peek, options fail early."""

from __future__ import annotations

from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient

from .conftest import fill

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def _sequential_peek(fake: FakeNamespace, entity: str) -> list[tuple[int, str | None, bytes]]:
    rows = []
    with ManagementClient.from_connection_string(fake.connection_string, timeout=30) as client:
        cursor = 0
        while True:
            page = client.entity(entity).peek_messages(cursor, 500)
            if not page:
                return rows
            rows.extend((m.sequence_number, m.message_id, m.body_bytes()) for m in page)
            cursor = page[-1].sequence_number + 1  # type: ignore[operator]


def _read(spark: Any, fake: FakeNamespace, entity: str, **options: Any) -> Any:
    reader = (spark.read.format("servicebus")
              .option("connectionString", fake.connection_string)
              .option("entity", entity))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _punch_holes(fake: FakeNamespace, entity: str, every: int) -> None:
    """Complete every ``every``-th message so the entity's sequence numbers have holes."""
    locked = fake.receive_and_lock(entity, 10_000)
    tokens = [m.lock_token for i, m in enumerate(locked) if i % every == 0]
    with ManagementClient.from_connection_string(fake.connection_string, timeout=30) as client:
        for start in range(0, len(tokens), 500):
            client.entity(entity).update_disposition(tokens[start:start + 500], "completed")


def test_partitioned_reads_equal_a_sequential_peek(spark: Any, namespace: FakeNamespace) -> None:
    fill(namespace, "q", 10_000)
    _punch_holes(namespace, "q", every=7)
    expected = _sequential_peek(namespace, "q")
    assert len(expected) == 10_000 - len(range(0, 10_000, 7))
    for partitions in (1, 4):
        df = _read(spark, namespace, "q", partitions=partitions, pageSize=300)
        assert df.rdd.getNumPartitions() == partitions
        rows = [(r.sequence_number, r.message_id, bytes(r.body))
                for r in df.select("sequence_number", "message_id", "body").collect()]
        assert sorted(rows) == expected  # same rows, no duplicates, no gaps


def test_empty_entity_and_sequence_bounds(spark: Any, namespace: FakeNamespace) -> None:
    assert _read(spark, namespace, "empty", partitions=4).count() == 0
    fill(namespace, "q", 50)
    bounded = _read(spark, namespace, "q", partitions=3, fromSequenceNumber=10,
                    toSequenceNumber=19).collect()
    assert sorted(r.sequence_number for r in bounded) == list(range(10, 20))
    row = next(r for r in bounded if r.sequence_number == 10)
    assert (row.state, row.subject, row.application_properties) == ("active", "s0", {"i": "9"})


def test_bad_options_fail_before_any_task(spark: Any, namespace: FakeNamespace) -> None:
    with pytest.raises(Exception, match="option partitions must be an integer"):
        _read(spark, namespace, "q", partitions=0).collect()
    with pytest.raises(Exception, match="unknown servicebus option"):
        _read(spark, namespace, "q", partitons=2).collect()


def test_secret_absent_from_plan_and_errors(
    spark: Any, namespace: FakeNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    key = namespace.connection_string.split("SharedAccessKey=")[1].split(";")[0]
    df = _read(spark, namespace, "q", partitions=2)
    df.explain(mode="extended")
    df.explain(mode="formatted")
    plan = capsys.readouterr().out
    assert "servicebus" in plan
    assert key not in plan and "SharedAccessKey" not in plan
    with pytest.raises(Exception) as caught:
        _read(spark, namespace, "missing", partitions=2).collect()
    assert "missing" in str(caught.value)
    assert key not in str(caught.value)
