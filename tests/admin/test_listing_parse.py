"""``sbmgmt.actions.entities.list_entities`` reads the administration API's ATOM feeds
itself (the SDK's model parsing was 60% of a listing): its counts are held here to what
azure-servicebus's own runtime properties say, entity for entity and count for count, on a
namespace with traffic of every kind and listings of several pages."""

from __future__ import annotations

from typing import Any

from azure.servicebus import ServiceBusClient
from azure.servicebus.management import ServiceBusAdministrationClient

from fakes import FakeNamespace
from sbmgmt.actions.entities import EntityCounts, EntityKind, _counts, list_entities

from .test_runtime_counts import _traffic


def _the_sdks_listing(admin: Any) -> list[EntityCounts]:
    """The same listing through the administration client's runtime properties."""
    found = [_counts(EntityKind.QUEUE, q.name, q) for q in admin.list_queues_runtime_properties()]
    for topic in admin.list_topics_runtime_properties():
        found.append(_counts(EntityKind.TOPIC, topic.name, topic))
        found += [_counts(EntityKind.SUBSCRIPTION, f"{topic.name}/Subscriptions/{s.name}", s)
                  for s in admin.list_subscriptions_runtime_properties(topic.name)]
    return found


def test_the_listing_has_the_sdks_counts_for_every_kind(
        admin: ServiceBusAdministrationClient, messaging: ServiceBusClient) -> None:
    _traffic(admin, messaging)
    listed = list_entities(admin)
    assert listed == _the_sdks_listing(admin)
    by_name = {entity.name: entity for entity in listed}
    assert (by_name["counted"].active, by_name["counted"].dead_letter,
            by_name["counted"].scheduled, by_name["counted"].total) == (3, 2, 2, 7)
    assert by_name["counted"].size_in_bytes
    assert by_name["events"].active is None and by_name["events"].scheduled == 0
    assert (by_name["events/Subscriptions/all"].active,
            by_name["events/Subscriptions/all"].dead_letter) == (2, 1)


def test_a_listing_of_several_pages_is_read_whole_in_order(
        fake: FakeNamespace, admin: ServiceBusAdministrationClient) -> None:
    for n in range(230):
        fake.add_queue(f"q-{n:03d}")
    for t in range(3):
        fake.add_topic(f"t-{t}")
    for n in range(130):
        fake.add_subscription("t-1", f"s-{n:03d}")
    listed = list_entities(admin)
    assert listed == _the_sdks_listing(admin)
    assert [e.name for e in listed if e.kind is EntityKind.QUEUE] == [
        f"q-{n:03d}" for n in range(230)]
    assert sum(e.kind is EntityKind.SUBSCRIPTION for e in listed) == 130
    assert [e.name for e in listed][230:232] == ["t-0", "t-1"]
