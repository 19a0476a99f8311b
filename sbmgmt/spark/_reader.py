"""Reading: plan sequence ranges on the driver, peek each range in its own task."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from ._options import ReadOptions
from ._paging import EntityPager, entity_bounds, peek_range
from ._planning import SequenceRange, split_range
from ._schema import row_from_message

__all__ = ["RangePartition", "ServiceBusReader", "range_partitions", "read_partition"]


class RangePartition(InputPartition):
    """One read task's share of the entity: the sequence numbers ``first..last``.

    Made by [ServiceBusDataSource][sbmgmt.spark.ServiceBusDataSource]'s readers when Spark plans
    a read (``partitions`` contiguous, equal ranges).

    Attributes:
        index: The partition's index.
        first: The first sequence number of the range.
        last: The last one (inclusive).
    """

    def __init__(self, index: int, first: int, last: int) -> None:
        super().__init__((first, last))
        self.index = index
        self.first = first
        self.last = last

    def __repr__(self) -> str:
        return f"RangePartition(index={self.index}, first={self.first}, last={self.last})"


def range_partitions(ranges: Sequence[SequenceRange]) -> list[RangePartition]:
    """One :class:`RangePartition` per range, indexed in order."""
    return [RangePartition(i, r.first, r.last) for i, r in enumerate(ranges)]


def read_partition(options: ReadOptions, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
    """Every message of the partition's range, as rows of ``READ_SCHEMA`` (pipelined
    pages; a batch read's task and a stream's micro-batch task alike)."""
    assert isinstance(partition, RangePartition)
    bounds = SequenceRange(partition.first, partition.last)
    if bounds.size == 0:
        return
    with options.connection.open() as client:
        pager = EntityPager(client.entity(options.entity), options.session_id)
        for message in peek_range(pager, bounds, options.page_size, options.pages_in_flight):
            yield row_from_message(message)


class ServiceBusReader(DataSourceReader):
    """Peeks an entity: ``partitions()`` plans ranges, ``read()`` browses one range."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def __repr__(self) -> str:
        return f"ServiceBusReader(entity={self.options.entity!r})"

    def plan(self) -> list[SequenceRange]:
        """The sequence ranges of the read (empty for an empty entity or range)."""
        options = self.options
        with options.connection.open() as client:
            pager = EntityPager(client.entity(options.entity), options.session_id)
            bounds = entity_bounds(pager, options.from_sequence_number,
                                   options.to_sequence_number)
        return [] if bounds is None else split_range(bounds, options.partitions)

    def partitions(self) -> Sequence[InputPartition]:
        """One :class:`RangePartition` per planned range (one empty one when none)."""
        return range_partitions(self.plan() or [SequenceRange(1, 0)])

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """Every message of the partition's range, as rows of ``READ_SCHEMA``."""
        return read_partition(self.options, partition)
