"""One local[2] SparkSession for the Spark tests, and helpers to fill the fake namespace.

The session allows one task retry (``local[2,2]``) so the writer's retry path runs.
Python workers use this interpreter and see the repository on PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt.message import Message

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: starts a local Spark session (JVM, ~10 s)")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from sbmgmt.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    # The JVM starts in a directory of its own (when this starts it): Spark resolves a
    # relative path against the JVM's working directory, which is then never the
    # repository's root (a guide's examples run later in this process use it: tests/docs).
    with contextlib.chdir(tmp_path_factory.mktemp("spark-jvm")):
        session = (
            SparkSession.builder.master("local[2,2]")
            .appName("sbmgmt-spark-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
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


@pytest.fixture
def namespace() -> Iterator[FakeNamespace]:
    with FakeNamespace() as fake:
        fake.add_queue("q")
        fake.add_queue("empty")
        fake.add_queue("target")
        yield fake


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` (the examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fill(fake: FakeNamespace, entity: str, count: int) -> None:
    """Enqueue ``count`` small messages directly into the fake."""
    fake.send(entity, *(
        Message(body=f"body-{i}".encode(), message_id=f"m-{i}", subject=f"s{i % 3}",
                application_properties={"i": i})
        for i in range(count)))
