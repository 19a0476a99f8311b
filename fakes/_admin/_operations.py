"""The administration operations on the store: get, create, update, delete and list queues,
topics, subscriptions and rules, and the namespace's properties.

Theory of operation: every operation runs on one of the HTTP port's worker threads, and one
rule holds for every handler, applied by :meth:`Operations.handle` where the handlers are
looked up, so that no handler can forget it: the handler runs under the namespace lock, as
the namespace's own test-facing methods do, after the store's due work (so a scheduled
message that came due is counted active); after any method but GET the AMQP server is woken
(``changed``); the paths a delete removed (its reply's ``removed``) have their AMQP links
detached after the lock is released (the server thread takes the lock to do it). A PUT's
names are checked first (:mod:`fakes._validation`: 400 for a name the service refuses).
Every request is a management operation to the namespace's throttle (10 credits,
``fakes._throttle``: 503 server-busy when it is throttled), and a PUT is held to the tier
(:mod:`fakes._tiers`: entity sizes, ``MaxMessageSizeInKilobytes``, the quotas and features
the store keeps); a PUT's ``AutoDeleteOnIdle`` is acted on (``Store.set_auto_delete``).

What the service answers and the fake follows: a create of something that exists is 409, an
update (``If-Match: *``), a delete or a get of a subscription or rule that does not exist is
404; a get of a queue or topic that does not exist is 200 with an empty feed, which both SDKs
turn into their not-found error. Listings are in name order (rules in creation order, as
enumerate-rules over AMQP), ``$skip`` / ``$top`` page them (100 by default).
"""

from __future__ import annotations

import contextlib
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from .._entity import Entity
from .._entity_rules import StoredRule
from .._errors import ArgumentError, EntityAlreadyExists, EntityNotFound, FakeServiceError
from .._rules import DEFAULT_RULE_NAME, default_rule
from .._store import Topic
from .._throttle import MANAGEMENT_COST
from .._validation import check_entity_name, check_rule_name, check_subscription_name
from ._atom import ENTRY_CONTENT_TYPE, FEED_CONTENT_TYPE, Entry, entry, feed
from ._authorization import KEY as AUTHORIZATION_RULES
from ._authorization import rules_node, rules_xml
from ._context import AdminNamespace
from ._descriptions import (
    QUEUE_DESCRIBED,
    SUBSCRIPTION_DESCRIBED,
    TOPIC_DESCRIBED,
    check_tier,
    default_rule_node,
    described,
    description_fields,
    entity_settings,
    namespace_xml,
    queue_xml,
    subscription_xml,
    topic_settings,
    topic_xml,
)
from ._routes import Kind, Target
from ._rule_xml import parse_rule, rule_xml
from ._xml import ATOM_NS, local_name, timestamp

__all__ = ["Call", "Reply", "Operations"]

_DEFAULT_TOP = 100


@dataclass(frozen=True)
class Call:
    """One request, as the operations need it."""

    method: str
    target: Target
    #: ``http://host:port/`` of the request, for the URLs of entries.
    base_url: str
    #: The request's host and port, for forwarding URLs (``sb://<host>/<entity>``).
    host: str
    api_version: str
    skip: int
    top: int
    update: bool
    #: The description inside the request's ATOM entry (PUT only).
    description: ET.Element | None


@dataclass(frozen=True)
class Reply:
    """An answer: status, body and its content type."""

    status: int
    body: bytes = b""
    content_type: str = ENTRY_CONTENT_TYPE
    #: The entity paths a delete removed, for their AMQP links to be detached.
    removed: tuple[str, ...] = ()


def description_of(document: ET.Element) -> ET.Element:
    """The description inside a PUT's ``<entry><content>`` (400 without one)."""
    content = document.find(f"{{{ATOM_NS}}}content")
    if local_name(document) != "entry" or content is None or len(content) != 1:
        raise ArgumentError("The request body must be an ATOM entry with one description in "
                            "its content.")
    return content[0]


class Operations:
    """The handlers, by method and kind of resource."""

    def __init__(self, namespace: AdminNamespace) -> None:
        self._ns = namespace
        self._created = namespace.now()
        self._handlers: dict[tuple[str, Kind], Callable[[Call], Reply]] = {
            ("GET", Kind.NAMESPACE): self._namespace,
            ("GET", Kind.QUEUES): self._list_queues,
            ("GET", Kind.TOPICS): self._list_topics,
            ("GET", Kind.ENTITY): self._get_entity,
            ("PUT", Kind.ENTITY): self._put_entity,
            ("DELETE", Kind.ENTITY): self._delete_entity,
            ("GET", Kind.SUBSCRIPTIONS): self._list_subscriptions,
            ("GET", Kind.SUBSCRIPTION): self._get_subscription,
            ("PUT", Kind.SUBSCRIPTION): self._put_subscription,
            ("DELETE", Kind.SUBSCRIPTION): self._delete_subscription,
            ("GET", Kind.RULES): self._list_rules,
            ("GET", Kind.RULE): self._get_rule,
            ("PUT", Kind.RULE): self._put_rule,
            ("DELETE", Kind.RULE): self._delete_rule,
        }

    def handle(self, call: Call) -> Reply:
        """Answer ``call`` (a :class:`FakeServiceError` for what the service refuses)."""
        handler = self._handlers.get((call.method, call.target.kind))
        if handler is None:
            raise _MethodNotAllowed(f"{call.method} is not allowed on {call.target.path!r}.")
        if call.method == "PUT":
            _check_names(call.target)
        with self._ns.lock:
            self._ns.store.throttle.charge(MANAGEMENT_COST)
            self._ns.store.process_due(self._ns.now())
            reply = handler(call)
        if call.method != "GET":
            self._ns.changed()
        if reply.removed:
            self._ns.detach(list(reply.removed))
        return reply

    # --- entries ------------------------------------------------------------------------

    def _url(self, call: Call, path: str) -> str:
        return f"{call.base_url}{path}?api-version={call.api_version}"

    def _entry(self, call: Call, path: str, title: str, created: float, updated: float,
               content: str, author: bool = True) -> Entry:
        return Entry(self._url(call, path), title, timestamp(created), timestamp(updated),
                     self._ns.name if author else None, content)

    def _queue_entry(self, call: Call, queue: Entity) -> Entry:
        return self._entry(call, queue.path, queue.path, queue.created_at, queue.updated_at,
                           queue_xml(queue, call.host))

    def _topic_entry(self, call: Call, topic: Topic) -> Entry:
        return self._entry(call, topic.name, topic.name, topic.created_at, topic.updated_at,
                           topic_xml(topic))

    def _subscription_entry(self, call: Call, subscription: Entity) -> Entry:
        name = subscription.path.rsplit("/", 1)[1]
        return self._entry(call, subscription.path, name, subscription.created_at,
                           subscription.updated_at, subscription_xml(subscription, call.host),
                           author=False)

    def _rule_entry(self, call: Call, subscription: Entity, stored: StoredRule) -> Entry:
        rule = stored.rule
        created = subscription.created_at if rule.created_at is None else (
            rule.created_at.timestamp())
        return self._entry(call, f"{subscription.path}/Rules/{rule.name}", rule.name, created,
                           created, rule_xml(stored, created), author=False)

    def _feed(self, call: Call, title: str, entries: list[Entry]) -> Reply:
        page = entries[call.skip:call.skip + call.top]
        url = self._url(call, call.target.path) + f"&$skip={call.skip}&$top={call.top}"
        following = call.skip + call.top
        next_url = (self._url(call, call.target.path) + f"&$skip={following}&$top={call.top}"
                    if following < len(entries) else None)
        body = feed(title, url, timestamp(self._ns.now()), page, next_url)
        return Reply(200, body, FEED_CONTENT_TYPE)

    # --- the namespace and the listings -------------------------------------------------------

    def _namespace(self, call: Call) -> Reply:
        item = self._entry(call, "$namespaceinfo", self._ns.name, self._created, self._created,
                           namespace_xml(self._ns.name, self._created))
        return Reply(200, entry(item))

    def _list_queues(self, call: Call) -> Reply:
        queues = sorted(self._ns.store.queues(), key=lambda q: q.path.lower())
        return self._feed(call, "Queues", [self._queue_entry(call, q) for q in queues])

    def _list_topics(self, call: Call) -> Reply:
        topics = sorted(self._ns.store.topics(), key=lambda t: t.name.lower())
        return self._feed(call, "Topics", [self._topic_entry(call, t) for t in topics])

    def _list_subscriptions(self, call: Call) -> Reply:
        topic = self._ns.store.topic(call.target.entity)
        subscriptions = sorted(topic.subscriptions.values(), key=lambda s: s.path.lower())
        return self._feed(call, "Subscriptions",
                          [self._subscription_entry(call, s) for s in subscriptions])

    def _list_rules(self, call: Call) -> Reply:
        subscription = self._ns.store.subscription(call.target.entity, call.target.subscription)
        return self._feed(call, "Rules", [self._rule_entry(call, subscription, stored)
                                          for stored in subscription.stored_rules()])

    # --- queues and topics --------------------------------------------------------------------

    def _get_entity(self, call: Call) -> Reply:
        store, name = self._ns.store, call.target.entity
        with contextlib.suppress(EntityNotFound):
            return Reply(200, entry(self._queue_entry(call, store.queue(name))))
        with contextlib.suppress(EntityNotFound):
            return Reply(200, entry(self._topic_entry(call, store.topic(name))))
        body = feed("Publicly Listed Services", self._url(call, name),
                    timestamp(self._ns.now()), [], None)
        return Reply(200, body, FEED_CONTENT_TYPE)

    def _put_entity(self, call: Call) -> Reply:
        description = _required(call.description)
        kind = local_name(description)
        if kind == "QueueDescription":
            return self._put_queue(call, description)
        if kind == "TopicDescription":
            return self._put_topic(call, description)
        raise ArgumentError(f"A {kind} cannot be put at {call.target.path!r}: expected a "
                            "QueueDescription or a TopicDescription.")

    def _put_queue(self, call: Call, description: ET.Element) -> Reply:
        store, name = self._ns.store, call.target.entity
        fields = description_fields(description)
        settings = entity_settings(fields)
        kept = self._with_rules(described(fields, QUEUE_DESCRIBED), description)
        idle = check_tier(store.tier, kept, "Queue")
        self._check_forwarding(name, settings.forward_to,
                               settings.forward_dead_lettered_messages_to)
        if call.update:
            queue = store.queue(name)
            store.reconfigure(queue, settings)
        else:
            _absent(store.exists(name), call.target)
            queue = store.add_queue(name, settings)
        store.set_auto_delete(queue.path, idle)
        queue.described = kept
        return Reply(200 if call.update else 201, entry(self._queue_entry(call, queue)))

    def _put_topic(self, call: Call, description: ET.Element) -> Reply:
        store, name = self._ns.store, call.target.entity
        fields = description_fields(description)
        window, ttl = topic_settings(fields)
        kept = self._with_rules(described(fields, TOPIC_DESCRIBED), description)
        idle = check_tier(store.tier, kept, "Topic")
        if call.update:
            topic = store.topic(name)
            store.reconfigure_topic(topic, window, ttl)
        else:
            _absent(store.exists(name), call.target)
            topic = store.add_topic(name, window, ttl)
        store.set_auto_delete(topic.name, idle)
        topic.described = kept
        return Reply(200 if call.update else 201, entry(self._topic_entry(call, topic)))

    def _with_rules(self, kept: dict[str, str], description: ET.Element) -> dict[str, str]:
        """The kept properties with the description's authorization rules, if it has any."""
        rules = rules_xml(rules_node(description), self._ns.now())
        return kept if rules is None else {**kept, AUTHORIZATION_RULES: rules}

    def _delete_entity(self, call: Call) -> Reply:
        return Reply(200, removed=tuple(self._ns.store.remove(call.target.entity)))

    # --- subscriptions ------------------------------------------------------------------

    def _get_subscription(self, call: Call) -> Reply:
        subscription = self._ns.store.subscription(call.target.entity, call.target.subscription)
        return Reply(200, entry(self._subscription_entry(call, subscription)))

    def _put_subscription(self, call: Call) -> Reply:
        description = _required(call.description)
        if local_name(description) != "SubscriptionDescription":
            raise ArgumentError(f"A {local_name(description)} cannot be put at "
                                f"{call.target.path!r}: expected a SubscriptionDescription.")
        store, target = self._ns.store, call.target
        fields = description_fields(description)
        settings = entity_settings(fields)
        kept = described(fields, SUBSCRIPTION_DESCRIBED)
        idle = check_tier(store.tier, kept, "Subscription")
        self._check_forwarding(target.path, settings.forward_to,
                               settings.forward_dead_lettered_messages_to)
        if call.update:
            subscription = store.subscription(target.entity, target.subscription)
            store.reconfigure(subscription, settings)
        else:
            _absent(target.subscription.lower() in store.topic(target.entity).subscriptions,
                    target)
            rule_node = default_rule_node(description)
            rule = (StoredRule(default_rule()) if rule_node is None
                    else parse_rule(rule_node, DEFAULT_RULE_NAME))
            subscription = store.add_subscription(target.entity, target.subscription, settings,
                                                  [rule.checked().dated(self._ns.now())])
        store.set_auto_delete(subscription.path, idle)
        subscription.described = kept
        return Reply(200 if call.update else 201,
                     entry(self._subscription_entry(call, subscription)))

    def _delete_subscription(self, call: Call) -> Reply:
        removed = self._ns.store.remove_subscription(call.target.entity,
                                                     call.target.subscription)
        return Reply(200, removed=tuple(removed))

    # --- rules ---------------------------------------------------------------------------

    def _rule(self, call: Call) -> tuple[Entity, StoredRule]:
        target = call.target
        subscription = self._ns.store.subscription(target.entity, target.subscription)
        return subscription, subscription.stored_rule(target.rule)

    def _get_rule(self, call: Call) -> Reply:
        subscription, stored = self._rule(call)
        return Reply(200, entry(self._rule_entry(call, subscription, stored)))

    def _put_rule(self, call: Call) -> Reply:
        description = _required(call.description)
        if local_name(description) != "RuleDescription":
            raise ArgumentError(f"A {local_name(description)} cannot be put at "
                                f"{call.target.path!r}: expected a RuleDescription.")
        target = call.target
        subscription = self._ns.store.subscription(target.entity, target.subscription)
        parsed = parse_rule(description, target.rule)
        named = StoredRule(parsed.rule.model_copy(update={"name": target.rule}),
                           parsed.sent_filter, parsed.sent_action)
        now = self._ns.now()
        replaced = subscription.stored_rule(target.rule) if call.update else None
        self._ns.store.check_filters(target.entity, [named.rule.filter], removing=replaced)
        stored = (subscription.replace_rule(named, now) if call.update
                  else subscription.add_rule(named, now))
        return Reply(200 if call.update else 201,
                     entry(self._rule_entry(call, subscription, stored)))

    def _delete_rule(self, call: Call) -> Reply:
        subscription = self._ns.store.subscription(call.target.entity,
                                                   call.target.subscription)
        subscription.remove_rule(call.target.rule, self._ns.now())
        return Reply(200)

    # --- checks ----------------------------------------------------------------------------

    def _check_forwarding(self, source: str, *targets: str | None) -> None:
        """As on the service, a forwarding target must exist; the entity itself is one (the
        service accepted a queue forwarding its messages and its dead letters to itself in
        azure-sdk-for-python's recorded ``test_mgmt_queue_update_dict_success``; what it then
        does with a message sent there is not published: the fake refuses the send, its
        forwarding chain being too long)."""
        for target in targets:
            if target is None or target.lower() == source.lower():
                continue
            if not self._ns.store.exists(target):
                raise ArgumentError(f"The forwarding target {target!r} of {source!r} does not "
                                    "exist; create it first.")


class _MethodNotAllowed(FakeServiceError):
    status_code = 405
    condition = "amqp:not-allowed"


def _check_names(target: Target) -> None:
    """The names a PUT would create, as the service allows them (400 otherwise)."""
    checks: list[tuple[Callable[[str], str], str]] = [(check_entity_name, target.entity)]
    if target.kind in (Kind.SUBSCRIPTION, Kind.RULE):
        checks.append((check_subscription_name, target.subscription))
    if target.kind is Kind.RULE:
        checks.append((check_rule_name, target.rule))
    for check, name in checks:
        try:
            check(name)
        except ValueError as exc:
            raise ArgumentError(f"{exc}.") from None


def _absent(exists: bool, target: Target) -> None:
    """409 for a create of what exists, in the service's words."""
    if exists:
        raise EntityAlreadyExists(f"The messaging entity '{target.path}' already exists.")


def _required(description: ET.Element | None) -> ET.Element:
    if description is None:
        raise ArgumentError("A PUT needs a description in its body.")
    return description

