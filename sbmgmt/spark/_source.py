"""The ``servicebus`` data source: the object Spark instantiates from the options."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from ._options import MAX_SEQUENCE_NUMBER, read_options, write_options
from ._paging import EntityPager, entity_bounds
from ._reader import ServiceBusReader
from ._schema import READ_SCHEMA
from ._writer import ServiceBusWriter, check_write_schema

__all__ = ["ServiceBusDataSource"]


class ServiceBusDataSource(DataSource):
    """``spark.read.format("servicebus")`` and ``df.write.format("servicebus")``.

    Register it once per session with :func:`sbmgmt.spark.register`. Options are
    checked when the reader or writer is made, before any task runs.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``servicebus``."""
        return "servicebus"

    def __repr__(self) -> str:
        return "ServiceBusDataSource()"

    def schema(self) -> StructType:
        """The read schema (see ``docs/spark.md``)."""
        return READ_SCHEMA

    def reader(self, schema: StructType) -> ServiceBusReader:
        """A reader for the options (raises ``SparkOptionError`` on bad ones)."""
        return ServiceBusReader(read_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> ServiceBusWriter:
        """A writer for the options and DataFrame schema; only append mode is supported.

        Notes the entity's last sequence number (the writer's *mark*) on the way.
        """
        options = write_options(self.options)
        if overwrite:
            raise ValueError("servicebus supports only mode('append'): "
                             "scheduled messages cannot overwrite an entity")
        check_write_schema(schema)
        with options.connection.open() as client:
            bounds = entity_bounds(EntityPager(client.entity(options.entity)), 0,
                                   MAX_SEQUENCE_NUMBER)
        return ServiceBusWriter(options, mark=0 if bounds is None else bounds.last)
