"""pytest fixtures for the fake namespace (registered as the ``sbmgmt_fake`` plugin).

``fake_namespace``: a started namespace holding the entities of ``fake_entities`` (by
default a queue ``queue``, a session queue ``session-queue``, a topic ``topic`` with the
subscription ``sub``), on a movable clock (``fake_namespace.clock.advance(seconds)``).
``fake_namespace_factory``: call it (with :class:`~fakes.FakeNamespace` arguments, and
``entities=`` a :class:`FakeEntities`) to get more started namespaces; all are stopped
at the end of the test.

What a test's namespace holds is declared where the test is (docs/pytest-plugin.md):

- for one test, a marker: ``@pytest.mark.fake_namespace(queues=["orders"])``, or
  ``config=`` the emulator's Config.json (its entities, and nothing else), or any other
  :class:`~fakes.FakeNamespace` keyword (``tier=``, ``accept_any_token=``...);
- for a test run with several namespaces, the same keywords as an indirect parameter:
  ``@pytest.mark.parametrize("fake_namespace", [{"config": path}], indirect=True)``;
- for a module or a folder, a ``fake_entities`` fixture of its own (in its conftest.py)
  returning a :class:`FakeEntities`: pytest's overriding of a fixture by name.

``--fake-data-dir DIR`` keeps each namespace they start in a directory of its own under
``DIR`` (``<test name>-<n>``; docs/fake.md, "A data directory"), read back when a later run
with the same option starts the same test: to look at what a test left, or to start where
it stopped. A ``data_dir`` given to the factory wins.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ._errors import EntityAlreadyExists
from ._namespace import FakeNamespace

__all__ = ["PLUGIN_ENTITIES", "FakeEntities", "declared", "fake_entities", "fake_namespace",
           "fake_namespace_factory", "pytest_addoption", "pytest_configure"]

#: The marker that declares one test's namespace (its keywords: see :func:`declared`).
MARKER = "fake_namespace"
_ENTITY_KEYWORDS = ("queues", "session_queues", "topics")


@dataclass(frozen=True)
class FakeEntities:
    """The entities a fixture's namespace holds when the test starts."""

    queues: Sequence[str] = ()
    session_queues: Sequence[str] = ()
    #: Each topic's subscriptions.
    topics: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def add_to(self, namespace: FakeNamespace) -> None:
        """Create them; one read back from ``--fake-data-dir`` is kept as it is (messages
        and all)."""
        for name in self.queues:
            _create(namespace.add_queue, name)
        for name in self.session_queues:
            _create(namespace.add_queue, name, requires_session=True)
        for topic, subscriptions in self.topics.items():
            _create(namespace.add_topic, topic)
            for name in subscriptions:
                _create(namespace.add_subscription, topic, name)


def _create(add: Callable[..., object], *args: str, **kwargs: bool) -> None:
    with contextlib.suppress(EntityAlreadyExists):
        add(*args, **kwargs)


#: What ``fake_namespace`` holds unless the test says otherwise.
PLUGIN_ENTITIES = FakeEntities(queues=("queue",), session_queues=("session-queue",),
                               topics={"topic": ("sub",)})


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--fake-data-dir``: where the fixtures' namespaces are kept (default: in memory)."""
    parser.addoption("--fake-data-dir", metavar="DIR", default=None,
                     help="keep each fake namespace the fixtures start in DIR/<test>-<n> "
                     "(default: in memory)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``fake_namespace`` marker (``--strict-markers`` knows it)."""
    config.addinivalue_line(
        "markers", f"{MARKER}(queues=, session_queues=, topics=, config=, **FakeNamespace "
        "keywords): what this test's fake namespace holds and how it is made")


def declared(request: pytest.FixtureRequest, default: FakeEntities) -> dict[str, Any]:
    """The keywords for :class:`~fakes.FakeNamespace` that the test declares: its closest
    ``fake_namespace`` marker's, then an indirect parameter's (a dict, or the path of a
    Config.json), the latter winning; ``entities`` among them: the :class:`FakeEntities`
    to create (from ``queues`` / ``session_queues`` / ``topics``; none when a ``config`` is
    given without them; else ``default``).

    Raises:
        TypeError: an indirect parameter that is neither a dict nor a path.
    """
    options: dict[str, Any] = {}
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        options.update(marker.kwargs)
    param = getattr(request, "param", None)
    if isinstance(param, str | Path):
        options["config"] = param
    elif isinstance(param, Mapping):
        options.update(param)
    elif param is not None:
        raise TypeError(f"an indirect fake_namespace parameter is a dict of FakeNamespace "
                        f"keywords or the path of a Config.json, not {param!r}")
    named = {key: options.pop(key) for key in _ENTITY_KEYWORDS if key in options}
    if named:
        options["entities"] = FakeEntities(**named)
    elif "config" in options:
        options.setdefault("entities", FakeEntities())
    else:
        options.setdefault("entities", default)
    return options


@pytest.fixture
def fake_entities() -> FakeEntities:
    """What ``fake_namespace`` holds: override this fixture in a conftest.py to change it
    for a folder."""
    return PLUGIN_ENTITIES


@pytest.fixture
def fake_namespace_factory(request: pytest.FixtureRequest,
                           ) -> Iterator[Callable[..., FakeNamespace]]:
    """A factory of started namespaces, stopped when the test ends: it takes
    :class:`~fakes.FakeNamespace`'s arguments and ``entities=`` (a :class:`FakeEntities`)."""
    started: list[FakeNamespace] = []
    kept = request.config.getoption("--fake-data-dir", default=None)

    def make(*args: Any, entities: FakeEntities | None = None,
             **kwargs: Any) -> FakeNamespace:
        if kept is not None and "data_dir" not in kwargs:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
            kwargs["data_dir"] = Path(kept) / f"{name}-{len(started) + 1}"
        namespace = FakeNamespace(*args, **kwargs).start()
        started.append(namespace)
        if entities is not None:
            entities.add_to(namespace)
        return namespace

    yield make
    for namespace in started:
        namespace.stop()


@pytest.fixture
def fake_namespace(request: pytest.FixtureRequest, fake_entities: FakeEntities,
                   fake_namespace_factory: Callable[..., FakeNamespace]) -> FakeNamespace:
    """A started namespace with what the test declares (:func:`declared`), by default
    ``fake_entities``'s."""
    return fake_namespace_factory(**declared(request, fake_entities))
