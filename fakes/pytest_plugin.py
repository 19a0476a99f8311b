"""pytest fixtures for the fake namespace (registered as the ``sbmgmt_fake`` plugin).

``fake_namespace``: a started namespace with a queue ``queue``, a session queue
``session-queue``, a topic ``topic`` with the subscription ``sub``, and a movable clock.
``fake_namespace_factory``: call it (with :class:`~fakes.FakeNamespace` arguments) to get
more started namespaces; all are stopped at the end of the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ._clock import FakeClock
from ._namespace import FakeNamespace

__all__ = ["fake_namespace", "fake_namespace_factory"]


@pytest.fixture
def fake_namespace_factory() -> Iterator[Callable[..., FakeNamespace]]:
    """A factory of started namespaces, stopped when the test ends."""
    started: list[FakeNamespace] = []

    def make(*args: Any, **kwargs: Any) -> FakeNamespace:
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
    namespace.add_queue("queue")
    namespace.add_queue("session-queue", requires_session=True)
    namespace.add_topic("topic")
    namespace.add_subscription("topic", "sub")
    return namespace
