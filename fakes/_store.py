"""The namespace's entities: queues, topics, subscriptions and their dead-letter queues.

Not thread-safe: :class:`~fakes.FakeNamespace` calls it under one lock. Topics hold
no messages; a message sent to a topic is copied into every subscription whose rules
match it, and the topic counts it as ``fanned_out`` or ``unmatched``. A message scheduled
on a topic (its ``$management`` node's schedule-message, as the service allows) waits in
the topic, under a sequence number of the topic's own, until it is due or cancelled; when
due it is sent to the topic as any message is, so it fans out through the subscriptions'
rules as they are then.

The store holds the namespace's :class:`~fakes._tiers.Tier` and refuses what that tier
refuses: a queue or topic past its entity quota, a subscription past a topic's, SQL or
correlation filters past a topic's, and the features the tier lacks (Basic: topics,
sessions, duplicate detection, forwarding, auto-delete-on-idle). It also holds the
namespace's :class:`~fakes._throttle.Throttle` (what a sender's or a management node's
request is charged), and acts on auto-delete-on-idle: a queue, topic or subscription given
an idle time (:meth:`Store.set_auto_delete`) is deleted once that long passes without a send,
receive or change (the fake's clock, as every deadline of the store); the paths it deleted
wait in :meth:`Store.take_deleted` for their links to be detached.
"""

from __future__ import annotations

import functools
import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from sbmgmt.message import Message
from sbmgmt.rules import CorrelationFilter

from ._addresses import DEAD_LETTER_SUFFIX, entity_key
from ._duplicates import DuplicateDetector, update_window
from ._entity import Entity
from ._entity_rules import StoredRule
from ._entity_state import EntitySettings, MessageCounts
from ._errors import ArgumentError, EntityAlreadyExists, EntityNotFound, MessageNotFound
from ._rules import subscription_copies
from ._throttle import Throttle
from ._tiers import STANDARD, Tier
from ._validation import check_entity_name, check_rule_name, check_subscription_name

__all__ = ["Store", "Topic"]

_MAX_FORWARD_HOPS = 4


@dataclass
class Topic:
    """A topic: its subscriptions and what happened to what was sent to it."""

    name: str
    subscriptions: dict[str, Entity] = field(default_factory=dict)
    #: ``RequiresDuplicateDetection`` on the topic: a repeated message-id reaches no subscription.
    duplicates: DuplicateDetector | None = None
    #: ``DefaultMessageTimeToLive`` of the topic (seconds): no copy lives longer.
    default_ttl: float | None = None
    accepted: int = 0
    fanned_out: int = 0
    unmatched: int = 0
    duplicate: int = 0
    #: CreatedAt, UpdatedAt and AccessedAt of the administration API (epoch seconds).
    created_at: float = 0.0
    updated_at: float = 0.0
    accessed_at: float = 0.0
    #: Properties kept and reported but not acted on (see :attr:`Entity.described`).
    described: dict[str, str] = field(default_factory=dict)
    #: Messages scheduled on the topic and not yet due: sequence number -> message.
    scheduled: dict[int, Message] = field(default_factory=dict)
    #: (due, sequence number) of the scheduled messages; cancelled ones stay until popped.
    scheduled_due: list[tuple[float, int]] = field(default_factory=list)
    last_sequence: int = 0

    def counts(self) -> MessageCounts:
        """What the administration API reports: a message sent to the topic is copied into
        its subscriptions at once (and counted there), so the topic's own counts are its
        scheduled messages not yet due; its size, what its subscriptions hold."""
        size = sum(s.counts().size_in_bytes for s in self.subscriptions.values())
        return MessageCounts(scheduled=len(self.scheduled), size_in_bytes=size)

    def schedule(self, message: Message, due: float) -> int:
        """Keep ``message`` until ``due``; its sequence number (the topic's own)."""
        self.last_sequence += 1
        self.scheduled[self.last_sequence] = message
        heapq.heappush(self.scheduled_due, (due, self.last_sequence))
        return self.last_sequence

    def cancel(self, sequence_numbers: list[int]) -> None:
        """Drop scheduled messages, all or none: a number that is not scheduled refuses the
        request (``MessageNotFound`` naming those numbers, as the service)."""
        missing = [sequence for sequence in sequence_numbers if sequence not in self.scheduled]
        if missing:
            raise MessageNotFound.not_scheduled(missing)
        for sequence in sequence_numbers:
            self.scheduled.pop(sequence, None)

    def take_due(self, now: float) -> list[Message]:
        """The scheduled messages due by ``now``, in the order they fall due."""
        due: list[Message] = []
        while self.scheduled_due and self.scheduled_due[0][0] <= now:
            _, sequence = heapq.heappop(self.scheduled_due)
            message = self.scheduled.pop(sequence, None)
            if message is not None:
                due.append(message)
        return due

    @property
    def next_due(self) -> float:
        """When the next scheduled message falls due (``inf``: none)."""
        while self.scheduled_due and self.scheduled_due[0][1] not in self.scheduled:
            heapq.heappop(self.scheduled_due)  # cancelled
        return self.scheduled_due[0][0] if self.scheduled_due else math.inf


class Store:
    """Every entity of the namespace, by case-insensitive path; ``clock`` dates their creation
    and changes (epoch seconds); ``tier`` is the namespace's (its quotas and features),
    ``throttle`` its credits (none by default)."""

    def __init__(self, clock: Callable[[], float] = time.time, tier: Tier = STANDARD,
                 throttle: Throttle | None = None) -> None:
        self._clock = clock
        self.tier = tier
        self.throttle = throttle if throttle is not None else Throttle(None)
        self._entities: dict[str, Entity] = {}
        self._topics: dict[str, Topic] = {}
        self._queues: dict[str, Entity] = {}
        #: Auto-delete-on-idle: entity key -> (its path, the idle seconds).
        self._idle: dict[str, tuple[str, float]] = {}
        #: Paths deleted for being idle, not yet taken by :meth:`take_deleted`.
        self._deleted: list[str] = []

    def _check_free(self, path: str) -> None:
        key = entity_key(path)
        if key in self._entities or key in self._topics:
            raise EntityAlreadyExists(f"the entity {path!r} already exists")

    def _add_entity(self, path: str, settings: EntitySettings,
                    rules: list[StoredRule] | None = None) -> Entity:
        self._check_free(path)
        dead_letter_path = path + DEAD_LETTER_SUFFIX
        dead_letter = Entity(dead_letter_path, EntitySettings(lock_duration=settings.lock_duration))
        entity = Entity(path, settings, dead_letter_queue=dead_letter, rules=rules)
        self._forward_dead_letters(entity)
        entity.created_at = entity.updated_at = entity.accessed_at = self._clock()
        self._entities[entity_key(path)] = entity
        self._entities[entity_key(dead_letter_path)] = dead_letter
        return entity

    def _forward_dead_letters(self, entity: Entity) -> None:
        target = entity.settings.forward_dead_lettered_messages_to
        entity.forward_dead_letters = (
            functools.partial(self.send, target, hops=1) if target else None)

    def add_queue(self, name: str, settings: EntitySettings) -> Entity:
        """Create a queue (and its dead-letter queue); ValueError for a name the service
        refuses (:mod:`fakes._validation`, as for topics and subscriptions), the service's
        error for what the tier refuses."""
        check_entity_name(name)
        self._check_features(settings, "Queue")
        self.tier.check_entity_count(len(self._queues) + len(self._topics))
        queue = self._add_entity(name, settings)
        self._queues[entity_key(name)] = queue
        return queue

    def add_topic(self, name: str, duplicate_detection_window: float | None = None,
                  default_ttl: float | None = None) -> Topic:
        """Create a topic (with duplicate detection over that many seconds, if given, and a
        default time to live that caps every message's)."""
        self._check_free(check_entity_name(name))
        self.tier.check_topics()
        if duplicate_detection_window is not None and not self.tier.duplicate_detection:
            self.tier.refuse_feature("RequiresDuplicateDetection", "Topic")
        self.tier.check_entity_count(len(self._queues) + len(self._topics))
        duplicates = (None if duplicate_detection_window is None
                      else DuplicateDetector(duplicate_detection_window))
        now = self._clock()
        topic = self._topics[entity_key(name)] = Topic(
            name, duplicates=duplicates, default_ttl=default_ttl, created_at=now,
            updated_at=now, accessed_at=now)
        return topic

    def add_subscription(self, topic: str, name: str, settings: EntitySettings,
                         rules: list[StoredRule] | None = None) -> Entity:
        """Create a subscription of ``topic``; without ``rules`` it gets the ``$Default`` rule."""
        owner = self.topic(topic)
        check_subscription_name(name)
        for rule in rules or ():
            check_rule_name(rule.name)
        self._check_features(settings, "Subscription")
        if name.lower() not in owner.subscriptions:
            self.tier.check_subscription_count(owner.name, len(owner.subscriptions))
        self.check_filters(owner.name, [stored.rule.filter for stored in rules or ()])
        entity = self._add_entity(f"{owner.name}/Subscriptions/{name}", settings, rules)
        owner.subscriptions[name.lower()] = entity
        return entity

    def topic(self, name: str) -> Topic:
        """The topic called ``name``."""
        found = self._topics.get(entity_key(name))
        if found is None:
            raise EntityNotFound.of(name)
        return found

    def entity(self, path: str) -> Entity:
        """The queue, subscription or dead-letter queue at ``path``."""
        found = self._entities.get(entity_key(path))
        if found is None:
            raise EntityNotFound.of(path)
        return found

    def exists(self, path: str) -> bool:
        """Whether ``path`` names any entity, topics included."""
        key = entity_key(path)
        return key in self._entities or key in self._topics

    def entities(self) -> list[Entity]:
        """Every queue, subscription and dead-letter queue."""
        return list(self._entities.values())

    # --- administration ----------------------------------------------------------------

    def queues(self) -> list[Entity]:
        """Every queue, in the order of creation."""
        return list(self._queues.values())

    def topics(self) -> list[Topic]:
        """Every topic, in the order of creation."""
        return list(self._topics.values())

    def queue(self, name: str) -> Entity:
        """The queue called ``name`` (not a subscription, nor a dead-letter queue)."""
        found = self._queues.get(entity_key(name))
        if found is None:
            raise EntityNotFound.of(name)
        return found

    def subscription(self, topic: str, name: str) -> Entity:
        """The subscription ``name`` of ``topic``."""
        found = self.topic(topic).subscriptions.get(name.lower())
        if found is None:
            raise EntityNotFound.of(f"{topic}/Subscriptions/{name}")
        return found

    def _check_features(self, settings: EntitySettings, kind: str) -> None:
        """The settings use only features of the tier (Basic: no sessions, duplicate
        detection or forwarding), else the service's refusal."""
        tier = self.tier
        for used, allowed, prop in (
                (settings.requires_session, tier.sessions, "RequiresSession"),
                (settings.duplicate_detection_window is not None, tier.duplicate_detection,
                 "RequiresDuplicateDetection"),
                (bool(settings.forward_to), tier.forwarding, "ForwardTo"),
                (bool(settings.forward_dead_lettered_messages_to), tier.forwarding,
                 "ForwardDeadLetteredMessagesTo")):
            if used and not allowed:
                tier.refuse_feature(prop, kind)

    def check_filters(self, topic: str, adding: list[object],
                      removing: StoredRule | None = None) -> None:
        """``topic``'s subscriptions may hold their rules' filters and ``adding`` (filters;
        less ``removing``, a rule replaced): the tier's SQL and correlation filter quotas,
        per topic (a true or false filter is a SQL filter, as on the service)."""
        owner = self.topic(topic)
        filters: list[object] = [
            stored.rule.filter for subscription in owner.subscriptions.values()
            for stored in subscription.stored_rules() if stored is not removing]
        filters += adding
        correlation = sum(isinstance(found, CorrelationFilter) for found in filters)
        self.tier.check_filter_counts(owner.name, len(filters) - correlation, correlation)

    def set_auto_delete(self, path: str, seconds: float | None) -> None:
        """Delete the queue, topic or subscription at ``path`` once it is idle for
        ``seconds`` (None: never): no send, receive or change for that long."""
        key = entity_key(path)
        if seconds is None:
            self._idle.pop(key, None)
            return
        if not self.tier.auto_delete_on_idle:
            self.tier.refuse_feature("AutoDeleteOnIdle", "Topic" if self.is_topic(path)
                                     else "Queue")
        self._idle[key] = (path, seconds)

    def check_message_size(self, path: str, size: int, batch: bool) -> None:
        """A transfer of ``size`` bytes to the queue or topic at ``path`` within its own
        ``MaxMessageSizeInKilobytes`` (Premium: :meth:`Tier.check_entity_message`)."""
        if self.tier.message_size_kilobytes is None:
            return
        key = entity_key(path)
        found: Entity | Topic | None = self._queues.get(key) or self._topics.get(key)
        kept = None if found is None else found.described.get("MaxMessageSizeInKilobytes")
        self.tier.check_entity_message(path, size, batch, None if kept is None else int(kept))

    def take_deleted(self) -> list[str]:
        """The paths deleted for being idle since the last call (dead-letter queues too)."""
        deleted, self._deleted = self._deleted, []
        return deleted

    def _idle_deadline(self, key: str, seconds: float) -> float | None:
        """When the entity at ``key`` is deleted if nothing happens (None: it is gone)."""
        found: Entity | Topic | None = self._entities.get(key) or self._topics.get(key)
        if found is None:
            return None
        return max(found.accessed_at, found.updated_at) + seconds

    def _delete_idle(self, now: float) -> None:
        """Delete the entities idle for their auto-delete time."""
        for key, (path, seconds) in list(self._idle.items()):
            due = self._idle_deadline(key, seconds)
            if due is None:
                del self._idle[key]
            elif due <= now:
                del self._idle[key]
                if key in self._topics or key in self._queues:
                    removed = self.remove(path)
                else:
                    topic, _, name = path.partition("/Subscriptions/")
                    removed = self.remove_subscription(topic, name)
                self._deleted += removed

    def _next_idle(self) -> float:
        """The earliest auto-delete deadline (``inf``: none)."""
        deadlines = [self._idle_deadline(key, seconds)
                     for key, (_, seconds) in self._idle.items()]
        return min((d for d in deadlines if d is not None), default=math.inf)

    def reconfigure(self, entity: Entity, settings: EntitySettings) -> None:
        """Give a queue or subscription new settings (see :meth:`Entity.reconfigure`)."""
        self._check_features(settings, "Subscription" if "/Subscriptions/" in entity.path
                             else "Queue")
        entity.reconfigure(settings, self._clock())
        self._forward_dead_letters(entity)
        if entity.dead_letter_queue is not None:
            entity.dead_letter_queue.settings = EntitySettings(
                lock_duration=settings.lock_duration)

    def reconfigure_topic(self, topic: Topic, duplicate_detection_window: float | None,
                          default_ttl: float | None) -> None:
        """Give a topic a new default time to live and duplicate detection window (whether
        it detects duplicates cannot change, as on the service)."""
        update_window(topic.duplicates, duplicate_detection_window, topic.name)
        topic.default_ttl = default_ttl
        topic.updated_at = self._clock()

    def remove(self, name: str) -> list[str]:
        """Delete the queue or topic ``name`` (a topic with its subscriptions); returns the
        paths removed (dead-letter queues included), for the links to them to be detached."""
        key = entity_key(name)
        queue = self._queues.pop(key, None)
        if queue is not None:
            return self._drop(queue)
        topic = self._topics.pop(key, None)
        if topic is None:
            raise EntityNotFound.of(name)
        removed = [topic.name]
        for subscription in topic.subscriptions.values():
            removed += self._drop(subscription)
        return removed

    def remove_subscription(self, topic: str, name: str) -> list[str]:
        """Delete a subscription; returns the paths removed (its dead-letter queue too)."""
        owner = self.topic(topic)
        found = owner.subscriptions.pop(name.lower(), None)
        if found is None:
            raise EntityNotFound.of(f"{owner.name}/Subscriptions/{name}")
        return self._drop(found)

    def _drop(self, entity: Entity) -> list[str]:
        removed = [entity.path]
        del self._entities[entity_key(entity.path)]
        if entity.dead_letter_queue is not None:
            del self._entities[entity_key(entity.dead_letter_queue.path)]
            removed.append(entity.dead_letter_queue.path)
        return removed

    def send(self, path: str, message: Message, now: float, *, hops: int = 0) -> int:
        """Accept ``message`` at ``path``; returns how many entities stored a copy."""
        if hops > _MAX_FORWARD_HOPS:
            raise ArgumentError(f"auto-forwarding from {path!r} is nested too deep")
        topic = self._topics.get(entity_key(path))
        if topic is not None:
            topic.accepted += 1
            topic.accessed_at = now
            if topic.duplicates is not None:
                if topic.duplicates.original(message.message_id, now) is not None:
                    topic.duplicate += 1
                    return 0
                topic.duplicates.note(message.message_id, now, 0)
            message = _capped(message, topic.default_ttl)
            stored = 0
            for subscription in topic.subscriptions.values():
                for copy in subscription_copies(subscription.rules(), message):
                    stored += self._deliver(subscription, copy, now, hops)
            if stored:
                topic.fanned_out += 1
            else:
                topic.unmatched += 1
            return stored
        self.check_send(path)
        return self._deliver(self.entity(path), message, now, hops)

    def check_send(self, path: str) -> None:
        """Raise what :meth:`send` to ``path`` would refuse (a missing entity, a
        dead-letter queue), without sending."""
        if entity_key(path) in self._topics:
            return
        if self.entity(path).path.endswith(DEAD_LETTER_SUFFIX):
            raise ArgumentError("messages cannot be sent to a dead-letter queue")

    def _deliver(self, entity: Entity, message: Message, now: float, hops: int) -> int:
        if entity.settings.forward_to:
            return self.send(entity.settings.forward_to, message, now, hops=hops + 1)
        entity.accept(message, now)
        return 1

    def process_due(self, now: float) -> float | None:
        """Apply everything due in every entity (topics' scheduled messages fan out first);
        return the next deadline, if any."""
        for topic in self._topics.values():
            if topic.scheduled:
                for message in topic.take_due(now):
                    self.send(topic.name, message, now)
        if self._idle:
            self._delete_idle(now)
        deadlines = [d for d in (e.process_due(now) for e in self._entities.values())
                     if d is not None]
        deadlines += [t.next_due for t in self._topics.values() if t.scheduled]
        if self._idle:
            deadlines.append(self._next_idle())
        return min(deadlines) if deadlines else None

    def next_due(self) -> float:
        """The earliest deadline of any entity (``inf`` when nothing is due)."""
        due = min((e.next_due for e in self._entities.values()), default=math.inf)
        if self._idle:
            due = min(due, self._next_idle())
        return min((t.next_due for t in self._topics.values() if t.scheduled), default=due)

    def is_topic(self, path: str) -> bool:
        """Whether ``path`` names a topic."""
        return entity_key(path) in self._topics

    def accounting(self, path: str) -> dict[str, int]:
        """Per-state message counts of an entity (topics: accepted / fanned_out / unmatched)."""
        topic = self._topics.get(entity_key(path))
        if topic is not None:
            return {"accepted": topic.accepted, "fanned_out": topic.fanned_out,
                    "unmatched": topic.unmatched, "duplicate": topic.duplicate}
        return self.entity(path).accounting()


def _capped(message: Message, ttl: float | None) -> Message:
    """``message`` with a time to live of at most ``ttl`` seconds (the topic's default)."""
    if ttl is None or (message.time_to_live is not None
                       and message.time_to_live.total_seconds() <= ttl):
        return message
    return message.model_copy(update={"time_to_live": timedelta(seconds=ttl)})
