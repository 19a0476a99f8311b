"""The stream reader without Spark: offsets, read limits, partitions and reads against
the fake, called as Spark's streaming engine calls them."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message
from sbmgmt.spark import READ_SCHEMA, ServiceBusStreamReader
from sbmgmt.spark._options import stream_options

from .conftest import fill

#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(queues=["q"])


def _reader(fake: FakeNamespace, **extra: str) -> ServiceBusStreamReader:
    return ServiceBusStreamReader(stream_options(
        {"connectionString": fake.connection_string, "entity": "q", "pageSize": "4", **extra}))


def _batch(reader: ServiceBusStreamReader, start: dict[str, int],
           end: dict[str, int]) -> list[int]:
    """What one micro-batch reads: every partition's rows, in order."""
    return [row[0] for partition in reader.partitions(start, end)
            for row in reader.read(partition)]


def _complete(fake: FakeNamespace, sequence_numbers: set[int]) -> None:
    """Receive and complete these messages; the others are abandoned (stay in the queue)."""
    locked = fake.receive_and_lock("q", 1000)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        for status, chosen in (("completed", True), ("abandoned", False)):
            client.entity("q").update_disposition(
                [m.lock_token for m in locked
                 if (m.sequence_number in sequence_numbers) == chosen], status)


def test_initial_offsets(fake: FakeNamespace) -> None:
    fill(fake, "q", 10)
    assert _reader(fake, startingSequenceNumber="earliest").initialOffset() == {"next": 0}
    latest = _reader(fake)
    assert latest.initialOffset() == {"next": 11}
    latest.stop()
    assert _reader(fake, startingSequenceNumber="7").initialOffset() == {"next": 7}
    with FakeNamespace() as empty:
        empty.add_queue("q")
        assert _reader(empty).initialOffset() == {"next": 0}


def test_micro_batches_follow_the_entity_within_the_read_limit(fake: FakeNamespace) -> None:
    fill(fake, "q", 30)
    _complete(fake, {5, 6, 7, 8, 9, 10})  # a hole in the sequence numbers
    reader = _reader(fake, startingSequenceNumber="earliest", partitions="3",
                     maxMessagesPerTrigger="10")
    limit = reader.getDefaultReadLimit()
    assert limit == ReadMaxRows(10)
    offset = reader.initialOffset()
    batches = []
    while (end := reader.latestOffset(offset, limit)) != offset:
        batches.append(_batch(reader, offset, end))
        reader.commit(end)
        offset = end
    assert reader.committed == 31
    assert all(0 < len(batch) <= 10 for batch in batches)
    assert [n for batch in batches for n in batch] == [
        n for n in range(1, 31) if not 5 <= n <= 10]
    fill(fake, "q", 3)  # new messages: the next batch holds exactly them
    end = reader.latestOffset(offset, ReadAllAvailable())
    assert _batch(reader, offset, end) == [31, 32, 33]
    assert reader.partitions(end, end) == []
    reader.stop()


def test_available_now_stops_at_the_end_seen_when_it_started(fake: FakeNamespace) -> None:
    fill(fake, "q", 5)
    reader = _reader(fake, startingSequenceNumber="earliest")
    reader.prepareForTriggerAvailableNow()
    fill(fake, "q", 5)
    end = reader.latestOffset({"next": 0}, ReadAllAvailable())
    assert end == {"next": 6}
    assert reader.latestOffset(end, ReadAllAvailable()) == end
    reader.stop()


def test_a_reader_ships_without_its_driver_client(fake: FakeNamespace) -> None:
    fill(fake, "q", 3)
    reader = _reader(fake, startingSequenceNumber="earliest")
    end = reader.latestOffset({"next": 0}, ReadAllAvailable())
    shipped = pickle.loads(pickle.dumps(reader))
    assert _batch(shipped, {"next": 0}, end) == [1, 2, 3]
    assert "Endpoint" not in repr(reader)
    reader.stop()


def test_scheduled_and_deferred_messages_appear_with_their_state(fake: FakeNamespace) -> None:
    fill(fake, "q", 2)
    reader = _reader(fake, startingSequenceNumber="earliest")
    later = datetime.now(timezone.utc) + timedelta(days=1)
    locked = fake.receive_and_lock("q", 1)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        client.entity("q").update_disposition([locked[0].lock_token], "defered")
        [scheduled] = client.entity("q").schedule_messages([Message(body=b"s")], later)
    end = reader.latestOffset({"next": 0}, ReadAllAvailable())
    rows = [row for partition in reader.partitions({"next": 0}, end)
            for row in reader.read(partition)]
    states = {row[0]: (row[READ_SCHEMA.names.index("state")],
                       row[READ_SCHEMA.names.index("scheduled_enqueue_time")]) for row in rows}
    assert states == {locked[0].sequence_number: ("deferred", None), 2: ("active", None),
                      scheduled: ("scheduled", later.replace(microsecond=later.microsecond
                                                             // 1000 * 1000))}
    reader.stop()
