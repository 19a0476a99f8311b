"""One entity or rule created, changed or deleted: a plan of one change (with its rules'),
made by the same diff and carried out by the same apply as a whole file's.

``sbmgmt entities create | update | delete`` and the explorer's forms call these: each
reads what the namespace has of that one entity, builds the entity as it must be, and
returns the :class:`~._plan.Plan` to show, confirm and apply (:func:`~._apply.apply_plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ConflictError, NotFoundError
from ..entities import EntityKind, _translated, entity_model
from ._export import IN_FLIGHT, properties_of, rules_of
from ._fields import Json
from ._model import (
    DEFAULT_RULE,
    TRUE_FILTER,
    EntitySpec,
    RuleSpec,
    Topology,
    TopologyFileError,
    checked_properties,
)
from ._plan import Plan, count_messages, diff

__all__ = ["create_plan", "current_entity", "delete_plan", "rule_plan", "split_path",
           "update_plan"]


def split_path(kind: EntityKind, path: str) -> tuple[str | None, str]:
    """A new entity's topic (a subscription's) and name, from ``QUEUE``, ``TOPIC``,
    ``TOPIC/Subscriptions/SUB`` or ``TOPIC/SUB``.

    Raises:
        TopologyFileError: A subscription's path without its topic.
    """
    if kind is not EntityKind.SUBSCRIPTION:
        return None, path
    parts = [part for part in path.split("/") if part]
    if len(parts) == 3 and parts[1].lower() == "subscriptions":
        parts = [parts[0], parts[2]]
    if len(parts) != 2:
        raise TopologyFileError(f"{path!r}: a subscription is named TOPIC/Subscriptions/SUB "
                                "or TOPIC/SUB")
    return parts[0], parts[1]


def current_entity(client: Any, path: str) -> EntitySpec:
    """The entity at ``path`` as the namespace has it (a subscription with its rules).

    Raises:
        NotFoundError: There is no such entity.
    """
    kind, parts, model = entity_model(client, path)
    properties = properties_of(kind, model)
    if kind is not EntityKind.SUBSCRIPTION:
        return EntitySpec(kind, parts[0], properties)
    with _translated():
        rules = rules_of(client, parts[0], parts[1], [])
    return EntitySpec(kind, parts[1], properties, topic=parts[0], rules=rules)


def _exists(client: Any, topic: str | None, name: str) -> bool:
    try:
        current_entity(client, name if topic is None else f"{topic}/Subscriptions/{name}")
    except NotFoundError:
        return False
    return True


def create_plan(client: Any, kind: EntityKind, path: str,
                values: Mapping[str, Json]) -> Plan:
    """Create one queue, topic or subscription (a subscription gets the true rule
    ``$Default``, as the service gives it).

    Args:
        client: A ``ServiceBusAdministrationClient``.
        kind: What to create.
        path: Its name; a subscription's ``TOPIC/Subscriptions/SUB`` or ``TOPIC/SUB``.
        values: Properties by the file's key (``LockDuration``: ``PT1M``...); the rest are
            the service's defaults.

    Raises:
        TopologyFileError: A property the kind lacks, or a value of the wrong kind.
        ConflictError: An entity of that name exists.
    """
    topic, name = split_path(kind, path)
    properties = checked_properties(kind, values, "")
    if _exists(client, topic, name):
        raise ConflictError(f"{path} exists already: update it instead", status_code=409)
    rules = (RuleSpec(DEFAULT_RULE, TRUE_FILTER),) if kind is EntityKind.SUBSCRIPTION else None
    entity = EntitySpec(kind, name, properties, topic=topic, rules=rules)
    return diff(Topology((entity,)), Topology(()))


def update_plan(client: Any, path: str, values: Mapping[str, Json]) -> Plan:
    """Change some properties of one entity (the others stay as they are).

    Raises:
        NotFoundError: There is no such entity.
        TopologyFileError: A property the kind lacks, or a value of the wrong kind.
    """
    now = current_entity(client, path)
    wanted = EntitySpec(now.kind, now.name, checked_properties(now.kind, values, "",
                                                               now.properties),
                        topic=now.topic, rules=now.rules)
    return diff(Topology((wanted,)), Topology((now,)))


def delete_plan(client: Any, path: str, *, in_flight: int = IN_FLIGHT) -> Plan:
    """Delete one entity (a topic with its subscriptions), its messages counted.

    Raises:
        NotFoundError: There is no such entity.
    """
    now = current_entity(client, path)
    entities = [now]
    if now.kind is EntityKind.TOPIC:
        with _translated():
            entities += [EntitySpec(EntityKind.SUBSCRIPTION, sub.name, {}, topic=now.name)
                         for sub in client.list_subscriptions(now.name)]
    current = Topology(tuple(entities))
    return count_messages(client, diff(Topology(()), current, prune=True), current,
                          in_flight=in_flight)


def rule_plan(client: Any, subscription: str, name: str,
              rule: RuleSpec | None) -> Plan:
    """Create or change a subscription's rule ``name`` (``rule``), or delete it (None).

    Raises:
        NotFoundError: There is no such subscription, or (a delete) no such rule.
    """
    now = current_entity(client, subscription)
    if now.kind is not EntityKind.SUBSCRIPTION:
        raise NotFoundError(f"{subscription} is a {now.kind.value}: rules belong to "
                            "subscriptions", status_code=404)
    others = tuple(r for r in now.rules or () if r.name.lower() != name.lower())
    if rule is None and len(others) == len(now.rules or ()):
        raise NotFoundError(f"{now.path} has no rule {name!r}", status_code=404)
    wanted = EntitySpec(now.kind, now.name, now.properties, topic=now.topic,
                        rules=others if rule is None else (*others, rule))
    return diff(Topology((wanted,)), Topology((now,)), prune=True)
