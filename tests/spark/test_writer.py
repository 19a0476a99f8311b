"""The writer without Spark: rows to messages, schema checks, and a failing task."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from fakes import FakeNamespace
from sbmgmt import ops
from sbmgmt.client import ManagementClient
from sbmgmt.errors import BadRequestError
from sbmgmt.spark import ScheduledRows, ScheduleWriteError, SparkOptionError
from sbmgmt.spark._options import write_options
from sbmgmt.spark._writer import (
    ServiceBusWriter,
    check_write_schema,
    message_from_row,
    row_message_id,
    stream_write_id,
)
from sbmgmt.testing import Call, MockManagementNode

from ._faults import FailOnce
from .conftest import fill


def test_schema_check_names_every_problem() -> None:
    check_write_schema(StructType([StructField("body", StringType())]))
    schema = StructType([
        StructField("payload", BinaryType()),
        StructField("subject", IntegerType()),
        StructField("application_properties", MapType(StringType(), IntegerType())),
    ])
    with pytest.raises(SparkOptionError) as caught:
        check_write_schema(schema)
    text = str(caught.value)
    assert "unknown column 'payload'" in text
    assert "column 'subject' is int, expected string" in text
    assert "expected map<string,string>" in text
    assert "column 'body' (binary or string) is required" in text


def test_message_from_row() -> None:
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    message = message_from_row(
        Row(body="text", message_id=None, subject="s", application_properties={"k": "v"}),
        "generated", now)
    assert (message.body, message.message_id, message.subject, message.scheduled_enqueue_time,
            message.application_properties) == (b"text", "generated", "s", now, {"k": "v"})
    later = datetime(2031, 1, 1, tzinfo=timezone.utc)
    own = message_from_row({"body": b"x", "message_id": "mine",
                            "scheduled_enqueue_time": later}, "generated", now)
    assert (own.message_id, own.scheduled_enqueue_time) == ("mine", later)


def test_row_message_ids_are_stable_per_write_and_distinct_per_row() -> None:
    write_id = uuid.uuid4()
    assert row_message_id(write_id, 1, 5) == row_message_id(write_id, 1, 5)
    assert len({row_message_id(write_id, p, i) for p in range(3) for i in range(100)}) == 300
    assert row_message_id(uuid.uuid4(), 1, 5) != row_message_id(write_id, 1, 5)


def _writer(fake: FakeNamespace, mark: int = 0, **extra: str) -> ServiceBusWriter:
    return ServiceBusWriter(write_options({
        "connectionString": fake.connection_string, "entity": "q", "batchSize": "10", **extra}),
        mark=mark)


def _peeked_bodies(fake: FakeNamespace) -> list[bytes]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=30) as client:
        return [m.body_bytes() for m in client.entity("q").peek_messages(0, 1000)]


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(queues=["q"])


def test_write_schedules_every_row_and_reports_sequence_numbers(fake: FakeNamespace) -> None:
    rows = [Row(body=f"r{i}".encode()) for i in range(35)]
    commit = _writer(fake).write(iter(rows))
    assert isinstance(commit, ScheduledRows)
    assert (commit.sequence_numbers, commit.skipped_rows) == (list(range(1, 36)), 0)
    assert _peeked_bodies(fake) == [f"r{i}".encode() for i in range(35)]


def test_failed_attempt_reports_rows_and_its_retry_skips_them(
    fake: FakeNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(fake, "q", 5)  # older messages before the write's mark
    writer = _writer(fake, mark=5)
    fault = FailOnce(monkeypatch, nth=3)
    rows = [Row(body=f"r{i}".encode()) for i in range(100)]
    with pytest.raises(ScheduleWriteError) as caught:
        writer.write_partition(iter(rows), 2, 0)
    error = caught.value
    assert fault.failed and error.unknown_rows == ()
    assert (error.partition, error.attempt) == (2, 0)
    assert set(error.scheduled_rows) >= set(range(20))  # batches 1 and 2 at least
    assert 20 not in error.scheduled_rows  # the refused batch 3
    text = str(error)
    assert "BadRequestError" in text and "injected schedule failure" in text
    assert "rows 0-19" in text and "of partition 2 were scheduled as sequence numbers 6-" in text
    assert "a retry of this task finds their message-ids on the entity and skips them" in text
    commit = writer.write_partition(iter(rows), 2, 1)
    assert commit.skipped_rows == len(error.scheduled_rows)
    assert sorted(_peeked_bodies(fake)[5:]) == sorted(f"r{i}".encode() for i in range(100))


def test_with_duplicate_detection_the_retry_does_not_scan(
        sbmgmt_mock: MockManagementNode) -> None:
    numbers = itertools.count(1)

    def schedule(call: Call) -> ops.schedule_message.Response:
        assert isinstance(call.request, ops.schedule_message.Request)
        return ops.schedule_message.Response(
            sequence_numbers=tuple(next(numbers) for _ in call.request.messages))

    sbmgmt_mock.add(ops.schedule_message, entity="q", callback=schedule, times=1)
    sbmgmt_mock.add(ops.schedule_message, entity="q", times=1,
                    error=BadRequestError("refused", description="injected schedule failure"))
    sbmgmt_mock.add(ops.schedule_message, entity="q", callback=schedule)
    writer = ServiceBusWriter(write_options({
        "connectionString": sbmgmt_mock.connection_string, "entity": "q", "batchSize": "10",
        "duplicateDetection": "true"}), mark=0)
    rows = [Row(body=b"x", message_id=f"id-{i}") for i in range(30)]
    with pytest.raises(ScheduleWriteError) as caught:
        writer.write_partition(iter(rows), 0, 0)
    assert "the entity's duplicate detection drops" in str(caught.value)
    failed_attempt = len(sbmgmt_mock.requests(ops.schedule_message.Request))
    assert writer.write_partition(iter(rows), 0, 1).skipped_rows == 0
    # no scan (only schedule-message requests): the retry re-sends every row, same ids
    assert {call.operation for call in sbmgmt_mock.calls} == {ops.schedule_message.OPERATION}
    retried = sbmgmt_mock.requests(ops.schedule_message.Request)[failed_attempt:]
    resent = [message.message_id for request in retried for message in request.messages]
    assert resent == [f"id-{i}" for i in range(30)]


def test_an_upstream_failure_mid_way_is_reported_with_the_rows(fake: FakeNamespace) -> None:
    def rows() -> Iterator[Row]:
        for _ in range(25):
            yield Row(body=b"x")
        raise RuntimeError("upstream broke")

    with pytest.raises(ScheduleWriteError) as caught:
        _writer(fake).write(rows())
    assert "RuntimeError: upstream broke" in str(caught.value)
    assert caught.value.scheduled_rows == tuple(range(20))
    assert len(_peeked_bodies(fake)) == 20


def test_stream_write_ids_repeat_in_a_rerun_of_the_same_micro_batch() -> None:
    query = str(uuid.uuid4())
    assert stream_write_id(query, 7) == stream_write_id(query, 7)
    assert len({stream_write_id(query, b) for b in range(100)}) == 100
    assert stream_write_id(str(uuid.uuid4()), 7) != stream_write_id(query, 7)
