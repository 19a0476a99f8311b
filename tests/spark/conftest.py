"""The Spark tests' namespace, and helpers to load the examples and fill the fake.

The ``spark`` fixture, one session per worker shared with docs/spark.md's examples, is
the suite's (tests/_spark.py, made the suite's by tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from fakes import FakeNamespace
from sbmgmt.message import Message

ROOT = Path(__file__).resolve().parents[2]


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
