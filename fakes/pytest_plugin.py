"""pytest fixtures for the fake namespace (registered as the ``sbmgmt_fake`` plugin).

``fake_namespace``: a started namespace with a queue ``queue``, a session queue
``session-queue``, a topic ``topic`` with the subscription ``sub``, and a movable clock.
``fake_namespace_factory``: call it (with :class:`~fakes.FakeNamespace` arguments) to get
more started namespaces; all are stopped at the end of the test.

``--fake-data-dir DIR`` keeps each namespace they start in a directory of its own under
``DIR`` (``<test name>-<n>``; docs/fake.md, "A data directory"), read back when a later run
with the same option starts the same test: to look at what a test left, or to start where
it stopped. A ``data_dir`` given to the factory wins.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._clock import FakeClock
from ._errors import EntityAlreadyExists
from ._namespace import FakeNamespace

__all__ = ["fake_namespace", "fake_namespace_factory", "pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--fake-data-dir``: where the fixtures' namespaces are kept (default: in memory)."""
    parser.addoption("--fake-data-dir", metavar="DIR", default=None,
                     help="keep each fake namespace the fixtures start in DIR/<test>-<n> "
                     "(default: in memory)")


@pytest.fixture
def fake_namespace_factory(request: pytest.FixtureRequest,
                           ) -> Iterator[Callable[..., FakeNamespace]]:
    """A factory of started namespaces, stopped when the test ends."""
    started: list[FakeNamespace] = []
    kept = request.config.getoption("--fake-data-dir", default=None)

    def make(*args: Any, **kwargs: Any) -> FakeNamespace:
        if kept is not None and "data_dir" not in kwargs:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
            kwargs["data_dir"] = Path(kept) / f"{name}-{len(started) + 1}"
        namespace = FakeNamespace(*args, **kwargs).start()
        started.append(namespace)
        return namespace

    yield make
    for namespace in started:
        namespace.stop()


@pytest.fixture
def fake_namespace(
    fake_namespace_factory: Callable[..., FakeNamespace],
) -> FakeNamespace:
    """A started namespace with ``queue``, ``session-queue`` and ``topic``/``sub``."""
    namespace = fake_namespace_factory(clock=FakeClock())
    adds: tuple[Callable[[], object], ...] = (
        lambda: namespace.add_queue("queue"),
        lambda: namespace.add_queue("session-queue", requires_session=True),
        lambda: namespace.add_topic("topic"),
        lambda: namespace.add_subscription("topic", "sub"))
    for add in adds:
        # Read back from --fake-data-dir, they may be there already (and hold messages).
        with contextlib.suppress(EntityAlreadyExists):
            add()
    return namespace
