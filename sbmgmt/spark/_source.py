"""The ``servicebus`` data source: the object Spark instantiates from the options."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from ._options import (
    MAX_SEQUENCE_NUMBER,
    SparkOptionError,
    WriteOptions,
    check_read_options,
    read_options,
    stream_options,
    write_options,
)
from ._paging import EntityPager, entity_bounds
from ._reader import ServiceBusReader
from ._schema import READ_SCHEMA
from ._stream import ServiceBusStreamReader
from ._writer import ServiceBusStreamWriter, ServiceBusWriter, check_write_schema

__all__ = ["ServiceBusDataSource"]


class ServiceBusDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` / ``df.write`` / ``df.writeStream`` with
    ``format("servicebus")``.

    Register it once per session with :func:`sbmgmt.spark.register`. A read's options
    are checked at ``load()`` (Spark asks for the schema there); a write's when its
    writer is made, before any task runs.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``servicebus``."""
        return "servicebus"

    def __repr__(self) -> str:
        return "ServiceBusDataSource()"

    def schema(self) -> StructType:
        """The read schema (see ``docs/spark.md``); checks a read's options on the way,
        so a bad one fails ``load()`` with a ``SparkOptionError``."""
        check_read_options(self.options)
        return READ_SCHEMA

    def reader(self, schema: StructType) -> ServiceBusReader:
        """A reader for the options (raises ``SparkOptionError`` on bad ones)."""
        return ServiceBusReader(read_options(self.options))

    def streamReader(self, schema: StructType) -> ServiceBusStreamReader:
        """A stream reader for the options (raises ``SparkOptionError`` on bad ones)."""
        return ServiceBusStreamReader(stream_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> ServiceBusWriter:
        """A writer for the options and DataFrame schema; only append mode is supported.

        Notes the entity's last sequence number (the writer's *mark*) on the way.
        """
        options = self._write_options(schema, overwrite, streaming=False)
        return ServiceBusWriter(options, mark=_mark(options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> ServiceBusStreamWriter:
        """A micro-batch's writer (Spark makes one per micro-batch): as :meth:`writer`."""
        options = self._write_options(schema, overwrite, streaming=True)
        return ServiceBusStreamWriter(options, mark=_mark(options))

    def _write_options(self, schema: StructType, overwrite: bool,
                       streaming: bool) -> WriteOptions:
        options = write_options(self.options, streaming)
        if overwrite:
            raise SparkOptionError(
                "servicebus supports only mode('append') (outputMode('append') for a "
                "stream): scheduled messages cannot overwrite an entity")
        check_write_schema(schema)
        return options


def _mark(options: WriteOptions) -> int:
    """The entity's last sequence number (0 when empty): a write's *mark*."""
    with options.connection.open() as client:
        bounds = entity_bounds(EntityPager(client.entity(options.entity)), 0,
                               MAX_SEQUENCE_NUMBER)
    return 0 if bounds is None else bounds.last
