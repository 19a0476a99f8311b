"""The writer's ``duplicateDetection=true`` mode against an entity with duplicate detection
(``RequiresDuplicateDetection`` in the fake): a retried task re-sends every row, and the
entity drops the copies of the rows the failed attempt scheduled, even of one consumed in
between (which no scan could find)."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient
from sbmgmt.spark import ScheduleWriteError
from sbmgmt.spark._options import write_options
from sbmgmt.spark._writer import ServiceBusWriter

from ._faults import FailOnce


def test_a_retry_relies_on_the_entitys_duplicate_detection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeNamespace() as fake:
        fake.add_queue("q", requires_duplicate_detection=True)
        writer = ServiceBusWriter(write_options({
            "connectionString": fake.connection_string, "entity": "q", "batchSize": "10",
            "duplicateDetection": "true"}), mark=0)
        FailOnce(monkeypatch, nth=2)
        rows = [Row(body=f"r{i}".encode(), message_id=f"id-{i}") for i in range(30)]
        with pytest.raises(ScheduleWriteError) as caught:
            writer.write_partition(iter(rows), 0, 0)
        first = len(caught.value.scheduled_rows)
        assert first >= 10 and 10 not in caught.value.scheduled_rows
        # a receiver takes one row the failed attempt scheduled before the retry runs
        consumed = fake.receive_and_lock("q", 1)[0]
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=10) as client:
            client.entity("q").update_disposition([consumed.lock_token], "completed")
        retry = writer.write_partition(iter(rows), 0, 1)
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=10) as client:
            left = [m.message_id for m in client.entity("q").peek_messages(1, 100)]
        counts = fake.accounting("q")
    assert retry.skipped_rows == 0   # no scan: every row was sent again
    assert sorted([*left, consumed.message_id]) == sorted(f"id-{i}" for i in range(30))
    assert (counts["duplicate"], counts["completed"]) == (first, 1)
