"""The suite's one Spark session per worker (the ``spark`` fixture, in tests/conftest.py).

Every test that needs Spark shares it: the tests in ``spark/`` and the docs/spark.md guide
in ``docs/test_guide_examples.py`` (the guide's ``getOrCreate()`` returns this session).
A JVM start is the dearest thing a Spark test does (on two cores, about ten CPU seconds
with the JVM's defaults), so a worker pays it once, with options that cut its CPU and
change nothing a test checks:

- ``-XX:TieredStopAtLevel=1``: the JIT's quick tier only (its optimising tier spends
  seconds compiling code a short test runs a few times); ``-XX:+UseSerialGC``: no
  parallel garbage collector threads on a two-core machine running several workers.
  Measured (tests/spark + the guide, one process): about a third less CPU per start.
- ``spark.sql.shuffle.partitions=1``: an aggregation's shuffle is one task, not two
  (no test reads the shuffle's partitioning; a source's ``partitions`` option is its own).
- ``local[2,2]``: two task slots, and one task retry so the writer's retry path runs.

Python workers use this interpreter and see the repository on PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: JVM options for a test's Spark driver (see above); tests/spark/test_stream_restart.py
#: gives them to the example's own JVMs too.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A ``local[2,2]`` SparkSession with the ``servicebus`` format registered."""
    from pyspark.sql import SparkSession

    from sbmgmt.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    # The JVM starts in a directory of its own (when this starts it): Spark resolves a
    # relative path against the JVM's working directory, which is then never the
    # repository's root (docs/spark.md's examples run there: tests/docs).
    with contextlib.chdir(tmp_path_factory.mktemp("spark-jvm")):
        session = (
            SparkSession.builder.master("local[2,2]")
            .appName("sbmgmt-spark-tests")
            .config("spark.driver.extraJavaOptions", JVM_OPTIONS)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.default.parallelism", "2")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
