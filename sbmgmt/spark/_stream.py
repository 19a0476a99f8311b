"""Streaming reads: ``spark.readStream.format("servicebus")``, one offset per entity.

Theory of operation. A sequence number is a monotonically increasing offset per entity,
and a peek reads any range of them without side effects, so the stream's offset is
``{"next": N}``: the next sequence number to read. Spark drives the reader from one
long-lived process on the driver:

- ``initialOffset`` (a new query only; a restarted one resumes from its checkpoint):
  ``earliest`` is 0, ``latest`` one past the entity's last sequence number, or the
  ``startingSequenceNumber`` given;
- ``latestOffset(start, limit)`` finds the entity's current end at or after ``start``
  with the batch reader's planning (one probe for the first message, galloping and a
  16-way search for the last); under ``ReadMaxRows`` (``maxMessagesPerTrigger``) the
  search stops ``max_rows`` sequence numbers after the first message, so a micro-batch
  holds at most that many messages (fewer where the range has holes);
- ``partitions(start, end)`` splits ``start..end-1`` like a batch read, and each task
  reads its range with the pipelined pages of a batch read;
- ``commit(end)`` records the end Spark has finished with.

Spark writes a micro-batch's ``start``/``end`` to the checkpoint before it runs the
batch and re-runs the same range after a restart, so with an idempotent sink (the
file sink, or ``foreachBatch`` keyed by batch id) a stopped or killed query resumes
without duplicates or gaps. What a range yields is what a peek of it sees when the
task runs: a message received and settled before then is not in the stream.

The driver-side reader keeps one client open between calls (opened on first use,
closed in ``stop``); the copies Spark ships to executors never open it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from ..client import ManagementClient
from ._options import MAX_SEQUENCE_NUMBER, StreamOptions
from ._paging import EntityPager, entity_bounds
from ._planning import SequenceRange, split_range
from ._reader import range_partitions, read_partition

__all__ = ["ServiceBusStreamReader"]

_log = logging.getLogger("sbmgmt.spark")


def _next(offset: dict[str, Any]) -> int:
    return int(offset["next"])


class ServiceBusStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("servicebus")``: follows an entity by sequence number.

    Made by [ServiceBusDataSource][sbmgmt.spark.ServiceBusDataSource] for Spark; its methods are
    Spark's streaming reader API, which Spark calls (docs/spark.md, Streaming).
    """

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self.committed: int | None = None
        self._target: int | None = None
        self._client: ManagementClient | None = None

    def __repr__(self) -> str:
        return f"ServiceBusStreamReader(entity={self.options.read.entity!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}

    def _pager(self) -> EntityPager:
        read = self.options.read
        if self._client is None:
            self._client = read.connection.open()
        return EntityPager(self._client.entity(read.entity), read.session_id)

    def _end(self, start: int, stop: int = MAX_SEQUENCE_NUMBER,
             span: int | None = None) -> int | None:
        """One past the last sequence number present in ``start..stop`` (None: none)."""
        bounds = entity_bounds(self._pager(), start, stop, span)
        return None if bounds is None else bounds.last + 1

    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts (``startingSequenceNumber``)."""
        starting = self.options.starting
        if starting == "earliest":
            return {"next": 0}
        if starting == "latest":
            return {"next": self._end(0) or 0}
        return {"next": starting}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxMessagesPerTrigger)`` when that option is set."""
        limit = self.options.max_messages_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The entity's end after ``start``, within ``limit`` (and the AvailableNow target)."""
        stop = MAX_SEQUENCE_NUMBER if self._target is None else self._target - 1
        span = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = self._end(_next(start), stop, span)
        return start if end is None else {"next": end}

    def prepareForTriggerAvailableNow(self) -> None:
        """``Trigger.AvailableNow``: read up to the entity's end as it is now, then stop."""
        self._target = self._end(0) or 0

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The micro-batch's range ``start..end-1``, split like a batch read."""
        span = SequenceRange(_next(start), _next(end) - 1)
        return range_partitions(split_range(span, self.options.read.partitions))

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """The messages of one task's range, as rows of ``READ_SCHEMA``."""
        return read_partition(self.options.read, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Record that Spark is done with everything before ``end``."""
        self.committed = _next(end)
        _log.debug("servicebus stream of %r committed up to sequence number %d",
                   self.options.read.entity, self.committed)

    def stop(self) -> None:
        """Close the driver-side client."""
        if self._client is not None:
            self._client.close()
            self._client = None
