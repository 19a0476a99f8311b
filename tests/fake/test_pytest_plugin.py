"""The package's pytest plugin (fakes/pytest_plugin.py): what a test declares is what its
fake namespace holds (a marker, an indirect parameter, the emulator's Config.json, a
folder's ``fake_entities``), and the suite's own ``fake`` is a use of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakes import FakeNamespace
from fakes._errors import EntityAlreadyExists
from fakes.pytest_plugin import PLUGIN_ENTITIES, FakeEntities, declared
from tests.conftest import SUITE_ENTITIES

CONFIG = Path(__file__).parent / "configs" / "every_form.json"


def holds(namespace: FakeNamespace, entities: FakeEntities) -> bool:
    """Whether every entity of ``entities`` exists (adding it again is refused)."""
    adds = [*(lambda n=n: namespace.add_queue(n) for n in entities.queues),
            *(lambda n=n: namespace.add_queue(n) for n in entities.session_queues)]
    for topic, subscriptions in entities.topics.items():
        adds.append(lambda t=topic: namespace.add_topic(t))
        adds.extend(lambda t=topic, s=s: namespace.add_subscription(t, s)
                    for s in subscriptions)
    refused = 0
    for add in adds:
        try:
            add()
        except EntityAlreadyExists:
            refused += 1
    return refused == len(adds)


def test_by_default_the_plugin_names_its_entities(fake_namespace: FakeNamespace) -> None:
    assert holds(fake_namespace, PLUGIN_ENTITIES)


@pytest.mark.fake_namespace(queues=["orders"], topics={"events": ["all", "audit"]})
def test_a_marker_declares_one_tests_entities(fake_namespace: FakeNamespace) -> None:
    assert holds(fake_namespace, FakeEntities(queues=["orders"],
                                              topics={"events": ["all", "audit"]}))
    assert not holds(fake_namespace, FakeEntities(queues=["queue"]))


@pytest.mark.fake_namespace(config=CONFIG)
def test_a_config_json_declares_them_and_nothing_else(fake_namespace: FakeNamespace) -> None:
    assert holds(fake_namespace, FakeEntities(queues=["queue.1", "orders-eu_2/incoming"]))
    assert not holds(fake_namespace, FakeEntities(queues=["queue"]))


@pytest.mark.parametrize("fake_namespace", [CONFIG, {"queues": ["a"], "tier": "premium"}],
                         indirect=True, ids=["config", "keywords"])
def test_an_indirect_parameter_declares_them_too(fake_namespace: FakeNamespace,
                                                request: pytest.FixtureRequest) -> None:
    if request.node.callspec.id == "config":
        assert holds(fake_namespace, FakeEntities(queues=["queue.1"]))
    else:
        assert holds(fake_namespace, FakeEntities(queues=["a"]))
        assert fake_namespace.tier.name == "Premium"
    assert not holds(fake_namespace, FakeEntities(queues=["queue"]))


def test_a_parameter_of_another_kind_is_refused() -> None:
    request = SimpleNamespace(node=SimpleNamespace(get_closest_marker=lambda _name: None),
                              param=42)
    with pytest.raises(TypeError, match=r"a dict of FakeNamespace keywords or the path of a "
                                        r"Config\.json, not 42"):
        declared(request, PLUGIN_ENTITIES)  # type: ignore[arg-type]


def test_the_factory_takes_the_entities(
        fake_namespace_factory: Callable[..., FakeNamespace]) -> None:
    one = fake_namespace_factory(entities=FakeEntities(session_queues=["s"]))
    other = fake_namespace_factory()
    assert holds(one, FakeEntities(queues=["s"]))
    assert not holds(other, FakeEntities(queues=["s"]))
    assert one.port != other.port


def test_the_suites_fake_holds_the_suites_entities(fake: FakeNamespace) -> None:
    assert holds(fake, SUITE_ENTITIES)


@pytest.mark.fake_namespace(queues=["orders"])
def test_the_marker_declares_the_suites_fake_too(fake: FakeNamespace) -> None:
    assert holds(fake, FakeEntities(queues=["orders"]))
    assert not holds(fake, FakeEntities(queues=["q"]))


class TestAFoldersOwnEntities:
    @pytest.fixture
    def fake_entities(self) -> FakeEntities:
        return FakeEntities(queues=["mine"])

    def test_a_fake_entities_fixture_overrides_the_default(
            self, fake_namespace: FakeNamespace) -> None:
        assert holds(fake_namespace, FakeEntities(queues=["mine"]))
        assert not holds(fake_namespace, FakeEntities(queues=["queue"]))
