"""What executors log while reading and writing never holds the key (run in-process)."""

from __future__ import annotations

import logging

import pytest
from pyspark.sql import Row

from fakes import FakeNamespace
from sbmgmt.spark._options import read_options, write_options
from sbmgmt.spark._reader import ServiceBusReader
from sbmgmt.spark._writer import ServiceBusWriter

from ._faults import FailOnce
from .conftest import fill

KEY = "dGhpcy1pcy10aGUtc2VjcmV0LWtleS1zZW50aW5lbA=="


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(key=KEY, queues=["q"])


def test_no_secret_in_logs_reprs_or_errors(
    fake: FakeNamespace, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert KEY in fake.connection_string
    caplog.set_level(logging.DEBUG)
    fill(fake, "q", 30)
    options = {"connectionString": fake.connection_string, "entity": "q"}
    reader = ServiceBusReader(read_options({**options, "partitions": "3", "pageSize": "4"}))
    partitions = reader.partitions()
    rows = [row for p in partitions for row in reader.read(p)]
    assert len(rows) == 30
    writer = ServiceBusWriter(write_options({**options, "batchSize": "5"}), mark=30)
    FailOnce(monkeypatch, nth=2)
    with pytest.raises(Exception) as caught:
        writer.write_partition(iter([Row(body=b"x")] * 20), 0, 0)
    writer.write_partition(iter([Row(body=b"x")] * 20), 0, 1)
    shown = [caught.exconly(), repr(reader), repr(writer), repr(reader.options),
             repr(writer.options), *map(repr, partitions), caplog.text]
    assert caplog.records  # the client and the writer did log
    for text in shown:
        assert KEY not in text
