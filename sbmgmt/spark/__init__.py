"""The ``servicebus`` Spark data source (PySpark >= 4.2 Python Data Source API).

Install with the ``spark`` extra, then::

    from sbmgmt.spark import register
    register(spark)
    df = (spark.read.format("servicebus")
          .option("connectionString", conn_str)
          .option("entity", "orders/$DeadLetterQueue")
          .option("partitions", 4)
          .load())

``spark.readStream`` and ``df.writeStream`` work the same way. See ``docs/spark.md``
for the options, the schema, the writer and streaming.
"""

from __future__ import annotations

try:
    import pyspark.sql.datasource
    import pyspark.sql.streaming.datasource  # noqa: F401  (the read-limit API, PySpark 4.2)
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "sbmgmt.spark needs PySpark >= 4.2 and pyarrow: pip install 'sbmgmt[spark]'") from exc

from typing import Any

from ._options import SparkOptionError
from ._python import WorkerPythonError, use_driver_python
from ._reader import RangePartition
from ._schema import READ_SCHEMA, render_property
from ._source import ServiceBusDataSource
from ._stream import ServiceBusStreamReader
from ._writer import WRITE_COLUMNS, ScheduledRows, ScheduleWriteError, ServiceBusStreamWriter

__all__ = [
    "READ_SCHEMA",
    "WRITE_COLUMNS",
    "RangePartition",
    "ScheduleWriteError",
    "ScheduledRows",
    "ServiceBusDataSource",
    "ServiceBusStreamReader",
    "ServiceBusStreamWriter",
    "SparkOptionError",
    "WorkerPythonError",
    "register",
    "render_property",
]


def register(spark: Any) -> None:
    """Register the ``servicebus`` format with a Spark session (once per session).

    Then ``spark.read.format("servicebus")``, ``spark.readStream``, ``df.write`` and
    ``df.writeStream`` take it (docs/spark.md). On a local master, Spark's Python workers are
    pointed at this interpreter unless ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` names one,
    which must then be able to import sbmgmt.

    Args:
        spark: The ``SparkSession`` (PySpark 4.2 or later).

    Raises:
        sbmgmt.spark.WorkerPythonError: The Python that ``PYSPARK_PYTHON`` or
            ``spark.pyspark.python`` names cannot import sbmgmt.
    """
    use_driver_python(spark)
    spark.dataSource.register(ServiceBusDataSource)
