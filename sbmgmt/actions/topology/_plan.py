"""What must change for a namespace to match a topology: created, updated and (with
``prune``) deleted, entity by entity and rule by rule.

:func:`diff` compares two topologies (no I/O); :func:`plan` reads the namespace
(:func:`~._export.export_topology`), compares, and counts the messages of every entity it
would delete, so that the person asked knows what a delete takes with it. What the service
cannot change in place (a queue's session or duplicate-detection or partitioning choice, a
queue that is a topic in the namespace) is not planned but refused, one sentence each: the
apply then changes nothing.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..entities import EntityKind, _translated
from ._export import IN_FLIGHT, export_topology
from ._fields import Json, field_of
from ._model import DEFAULT_RULE, TRUE_FILTER, EntitySpec, RuleSpec, Topology

__all__ = ["Change", "ChangeKind", "Plan", "count_messages", "diff", "plan"]


class ChangeKind(str, enum.Enum):
    """What a change does."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class Change:
    """One request's worth of change.

    Attributes:
        action: Create, update or delete.
        kind: ``queue``, ``topic``, ``subscription`` or ``rule``.
        path: The entity's path (``TOPIC/Subscriptions/SUB/Rules/RULE`` for a rule).
        entity: The entity as it must be (a create or update of an entity); for a rule's
            change, its subscription.
        rule: The rule as it must be (a rule's create or update) or as it is (its delete).
        differences: An update's properties: (key, now, then).
        messages: A deleted entity's messages (a topic's: its subscriptions'), once counted.
    """

    action: ChangeKind
    kind: str
    path: str
    entity: EntitySpec | None = None
    rule: RuleSpec | None = None
    differences: tuple[tuple[str, Json, Json], ...] = ()
    messages: int | None = None

    def describe(self) -> str:
        """The change in words: ``update queue orders: LockDuration PT1M -> PT2M``."""
        text = f"{self.action.value} {self.kind} {self.path}"
        if self.differences:
            text += ": " + "; ".join(f"{key} {_shown(now)} -> {_shown(then)}"
                                     for key, now, then in self.differences)
        if self.messages:
            text += f" (holds {self.messages} message{'s' if self.messages != 1 else ''})"
        return text

    def as_record(self) -> dict[str, Json]:
        """The change as a JSON object (every key, whatever the change: ``differences``
        empty but for an update, ``messages`` None but for a counted delete)."""
        return {"action": self.action.value, "kind": self.kind, "path": self.path,
                "differences": {key: {"now": now, "then": then}
                                for key, now, then in self.differences},
                "messages": self.messages}


def _shown(value: Json) -> str:
    if value is None:
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Plan:
    """The changes, in the order they are shown (creates and updates in the file's order,
    then deletes), and what the service cannot change (the apply refuses while any is)."""

    changes: tuple[Change, ...]
    refused: tuple[str, ...] = field(default=())

    @property
    def deletes(self) -> list[Change]:
        """The deletes of entities (not rules)."""
        return [c for c in self.changes if c.action is ChangeKind.DELETE and c.kind != "rule"]

    def count(self, action: ChangeKind) -> int:
        """How many changes of one action."""
        return sum(1 for change in self.changes if change.action is action)


def _differences(wanted: EntitySpec, now: EntitySpec) -> tuple[tuple[str, Json, Json], ...]:
    return tuple((key, now.properties.get(key), value)
                 for key, value in wanted.properties.items()
                 if now.properties.get(key) != value)


def _rule_changes(wanted: EntitySpec, now_rules: tuple[RuleSpec, ...],
                  prune: bool) -> Iterator[Change]:
    current = {rule.name.lower(): rule for rule in now_rules}
    wanted_names = set()
    for rule in wanted.rules or ():
        wanted_names.add(rule.name.lower())
        path = f"{wanted.path}/Rules/{rule.name}"
        there = current.get(rule.name.lower())
        if there is None:
            yield Change(ChangeKind.CREATE, "rule", path, entity=wanted, rule=rule)
        elif dict(there.properties) != dict(rule.properties):
            yield Change(ChangeKind.UPDATE, "rule", path, entity=wanted, rule=rule,
                         differences=(("Properties", dict(there.properties),
                                       dict(rule.properties)),))
    for key, rule in current.items():
        if key not in wanted_names and prune:
            yield Change(ChangeKind.DELETE, "rule", f"{wanted.path}/Rules/{rule.name}",
                         entity=wanted, rule=rule)


def diff(wanted: Topology, now: Topology, *, prune: bool = False) -> Plan:
    """The changes that make ``now`` into ``wanted`` (deletes only with ``prune``, but the
    true rule a new subscription is born with is deleted when the file has none of that
    name).

    Args:
        wanted: The topology file's.
        now: The namespace's.
        prune: Delete the entities and rules ``wanted`` lacks.

    Returns:
        The plan (message counts not filled in: see :func:`count_messages`).
    """
    changes: list[Change] = []
    refused: list[str] = []
    names = {(e.key if e.kind is EntityKind.SUBSCRIPTION else e.name.lower()): e
             for e in now.entities}
    for entity in wanted.entities:
        key = entity.key if entity.kind is EntityKind.SUBSCRIPTION else entity.name.lower()
        there = names.get(key)
        if there is None:
            changes.append(Change(ChangeKind.CREATE, entity.kind.value, entity.path,
                                  entity=entity))
            if entity.kind is EntityKind.SUBSCRIPTION:  # born with the true rule
                changes += _rule_changes(entity, (RuleSpec(DEFAULT_RULE, TRUE_FILTER),), True)
            continue
        if there.kind is not entity.kind:
            refused.append(f"{entity.path} is a {there.kind.value} in the namespace and a "
                           f"{entity.kind.value} in the file: delete one first")
            continue
        differences = _differences(entity, there)
        fixed = [key for key, _, _ in differences
                 if not getattr(field_of(entity.kind, key), "mutable", True)]
        if fixed:
            refused.append(f"{entity.kind.value} {entity.path}: {', '.join(fixed)} cannot "
                           "change on an existing entity (the service refuses it); delete "
                           "it first or change the file")
        elif differences:
            changes.append(Change(ChangeKind.UPDATE, entity.kind.value, entity.path,
                                  entity=entity, differences=differences))
        if entity.kind is EntityKind.SUBSCRIPTION:
            changes += _rule_changes(entity, there.rules or (), prune)
    if prune:
        wanted_keys = {e.key if e.kind is EntityKind.SUBSCRIPTION else e.name.lower()
                       for e in wanted.entities}
        gone_topics = {e.name.lower() for e in now.entities
                       if e.kind is EntityKind.TOPIC and e.name.lower() not in wanted_keys}
        for entity in now.entities:
            key = entity.key if entity.kind is EntityKind.SUBSCRIPTION else entity.name.lower()
            if key in wanted_keys or (entity.topic or "").lower() in gone_topics:
                continue
            changes.append(Change(ChangeKind.DELETE, entity.kind.value, entity.path,
                                  entity=entity))
    return Plan(tuple(changes), tuple(refused))


def count_messages(client: Any, plan: Plan, now: Topology, *,
                   in_flight: int = IN_FLIGHT) -> Plan:
    """The plan with every deleted entity's messages counted (runtime properties: a queue's
    or subscription's total; a topic's, its subscriptions')."""
    deletes = plan.deletes
    if not deletes:
        return plan
    subscriptions: dict[str, list[EntitySpec]] = {}
    for entity in now.entities:
        if entity.kind is EntityKind.SUBSCRIPTION:
            subscriptions.setdefault((entity.topic or "").lower(), []).append(entity)

    def total(entity: EntitySpec) -> int:
        if entity.kind is EntityKind.QUEUE:
            return int(client.get_queue_runtime_properties(entity.name).total_message_count)
        if entity.kind is EntityKind.SUBSCRIPTION:
            return int(client.get_subscription_runtime_properties(
                entity.topic, entity.name).total_message_count)
        return sum(total(sub) for sub in subscriptions.get(entity.name.lower(), []))

    with _translated(), ThreadPoolExecutor(in_flight,
                                           thread_name_prefix="sbmgmt-topology") as pool:
        totals = list(pool.map(lambda change: total(change.entity), deletes))
    counts = {id(change): count for change, count in zip(deletes, totals, strict=True)}
    return Plan(tuple(dataclasses.replace(change, messages=counts[id(change)])
                      if id(change) in counts else change for change in plan.changes),
                plan.refused)


def plan(client: Any, wanted: Topology, *, prune: bool = False,
         in_flight: int = IN_FLIGHT) -> Plan:
    """What must change for the namespace to match ``wanted``, deleted entities' messages
    counted.

    Args:
        client: A ``ServiceBusAdministrationClient``.
        wanted: The topology (:func:`~._model.read_topology`).
        prune: Also delete what ``wanted`` lacks.
        in_flight: The most requests on their way at once.

    Raises:
        UnauthorizedError: The credentials were refused.
        TransportError: The administration API did not answer.
    """
    now = export_topology(client, in_flight=in_flight)
    return count_messages(client, diff(wanted, now, prune=prune), now, in_flight=in_flight)
