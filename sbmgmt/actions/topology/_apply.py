"""A plan carried out through the administration client, several requests in flight.

Theory of operation. The changes go in phases, each waiting for the one before: (1) the
deletes of entities (a topic's takes its subscriptions), (2) the creates and updates of
queues and topics, (3) of subscriptions, (4) the creates and updates of rules, (5) the
deletes of rules (after the creates, so that a subscription is never without the rules the
file gives it), (6) the follow-up updates: what a create cannot set (``Status``) and a
forwarding target created in the same phase (a queue forwarding to a queue created beside
it is created without its forwarding, then updated; an update that forwards to one waits
for it likewise). Within a phase at most ``in_flight``
requests are on their way (a pool of threads, the administration client being one HTTP
session that takes concurrent requests); the calling thread submits, waits for the first to
finish, and submits the next, checking ``cancel`` before each. The first failure stops the
submitting; the requests in flight finish and are counted. The report lists exactly the
changes the namespace answered as done.

An update reads the entity first and changes only the planned properties on the model the
client returned (the administration client's own way), so that what the file does not hold
(an authorization rule's keys) is sent back as it was. Authorization rules that a create
sends get new random keys: keys are never in the file.
"""

from __future__ import annotations

import enum
import functools
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ...errors import ServiceBusManagementError
from ..entities import EntityKind, _sdk, _translated
from ._export import IN_FLIGHT
from ._fields import Field, Form, Json, field_of, fields_of, to_sdk
from ._model import EntitySpec, RuleSpec
from ._plan import Change, ChangeKind, Plan

__all__ = ["ApplyOutcome", "ApplyReport", "PlanRefusedError", "apply_plan", "entity_kwargs"]


class PlanRefusedError(ServiceBusManagementError, ValueError):
    """A plan with changes the service cannot make: nothing was changed."""


class ApplyOutcome(str, enum.Enum):
    """How an apply ended."""

    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(frozen=True)
class ApplyReport:
    """What an apply did.

    Attributes:
        done: The changes the namespace answered as done, in the order they finished.
        outcome: Finished, cancelled (nothing sent after ``cancel`` was set) or failed.
        error: The failure that stopped it.
        failed: The change that failed.
    """

    done: tuple[Change, ...]
    outcome: ApplyOutcome
    error: BaseException | None = None
    failed: Change | None = None

    def count(self, action: ChangeKind) -> int:
        """How many changes of one action were done."""
        return sum(1 for change in self.done if change.action is action)

    def as_record(self) -> dict[str, Json]:
        """The report as a JSON object (every key, whatever happened)."""
        return {"outcome": self.outcome.value, "created": self.count(ChangeKind.CREATE),
                "updated": self.count(ChangeKind.UPDATE),
                "deleted": self.count(ChangeKind.DELETE),
                "failed": None if self.failed is None else self.failed.describe(),
                "error": None if self.error is None else str(self.error)}


def _authorization_rules(rules: list[dict[str, Json]], kept: Any = None) -> list[Any]:
    """The administration client's ``AuthorizationRule`` objects: a rule the entity already
    has keeps its keys (``kept``: its current rules), a new one gets new random keys."""
    management = _sdk()
    old = {rule.key_name.lower(): rule for rule in kept or ()}
    out = []
    for rule in rules:
        before = old.get(str(rule["KeyName"]).lower())
        out.append(management.AuthorizationRule(
            type="SharedAccessAuthorizationRule", claim_type="SharedAccessKey",
            claim_value="None", rights=list(rule["Rights"]), key_name=rule["KeyName"],
            primary_key=before.primary_key if before else secrets.token_urlsafe(32),
            secondary_key=before.secondary_key if before else secrets.token_urlsafe(32)))
    return out


def _sdk_value(field: Field, value: Json) -> Any:
    if field.form is Form.AUTHORIZATION:
        return _authorization_rules(value)
    return to_sdk(field, value)


def entity_kwargs(entity: EntitySpec, *, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A create's keywords: every property that a create takes and that is not the
    service's default (a create leaves the rest to the service), but those in ``skip``."""
    return {field.attr: _sdk_value(field, entity.properties[field.key])
            for field in fields_of(entity.kind)
            if field.creatable and field.key not in skip
            and entity.properties[field.key] != field.default}


def _filter(rule: RuleSpec) -> tuple[Any, Any]:
    """A rule's filter and action as the administration client's models."""
    management = _sdk()
    properties = rule.properties
    if properties["FilterType"] == "Sql":
        flt = management.SqlRuleFilter(properties["SqlFilter"]["SqlExpression"])
    else:
        given = properties["CorrelationFilter"]
        flt = management.CorrelationRuleFilter(
            correlation_id=given.get("CorrelationId"), message_id=given.get("MessageId"),
            to=given.get("To"), reply_to=given.get("ReplyTo"), label=given.get("Label"),
            session_id=given.get("SessionId"), reply_to_session_id=given.get("ReplyToSessionId"),
            content_type=given.get("ContentType"), properties=given.get("Properties"))
    action = properties.get("Action")
    return flt, None if action is None else management.SqlRuleAction(action["SqlExpression"])


#: Forwarding: a target created in the same phase is set by a follow-up update.
_FORWARDING = frozenset({"ForwardTo", "ForwardDeadLetteredMessagesTo"})


class _Requests:
    """The administration client's call for each change."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def create(self, entity: EntitySpec, skip: frozenset[str]) -> None:
        kwargs = entity_kwargs(entity, skip=skip)
        if entity.kind is EntityKind.QUEUE:
            self.client.create_queue(entity.name, **kwargs)
        elif entity.kind is EntityKind.TOPIC:
            self.client.create_topic(entity.name, **kwargs)
        else:
            self.client.create_subscription(entity.topic, entity.name, **kwargs)

    def update(self, entity: EntitySpec, keys: list[str]) -> None:
        """Read the entity, set ``keys`` to the file's values, send it back."""
        client = self.client
        if entity.kind is EntityKind.QUEUE:
            model = client.get_queue(entity.name)
        elif entity.kind is EntityKind.TOPIC:
            model = client.get_topic(entity.name)
        else:
            model = client.get_subscription(entity.topic, entity.name)
        for key in keys:
            field = field_of(entity.kind, key)
            assert field is not None  # the plan's keys are the kind's
            value = entity.properties[key]
            if field.form is Form.AUTHORIZATION:
                setattr(model, field.attr, _authorization_rules(value, model.authorization_rules))
            else:
                setattr(model, field.attr, to_sdk(field, value))
        if entity.kind is EntityKind.QUEUE:
            client.update_queue(model)
        elif entity.kind is EntityKind.TOPIC:
            client.update_topic(model)
        else:
            client.update_subscription(entity.topic, model)

    def delete(self, change: Change) -> None:
        entity = change.entity
        assert entity is not None
        if change.kind == "rule":
            assert change.rule is not None
            self.client.delete_rule(entity.topic, entity.name, change.rule.name)
        elif entity.kind is EntityKind.QUEUE:
            self.client.delete_queue(entity.name)
        elif entity.kind is EntityKind.TOPIC:
            self.client.delete_topic(entity.name)
        else:
            self.client.delete_subscription(entity.topic, entity.name)

    def rule(self, change: Change) -> None:
        entity, rule = change.entity, change.rule
        assert entity is not None and rule is not None
        flt, action = _filter(rule)
        if change.action is ChangeKind.CREATE:
            self.client.create_rule(entity.topic, entity.name, rule.name, filter=flt,
                                    action=action)
        else:
            model = self.client.get_rule(entity.topic, entity.name, rule.name)
            model.filter, model.action = flt, action
            self.client.update_rule(entity.topic, entity.name, model)


@dataclass(frozen=True)
class _Step:
    change: Change
    call: Callable[[], None]
    #: The step finishes its change (a create with a follow-up does not).
    finishes: bool = True


def _steps(plan: Plan, requests: _Requests) -> list[list[_Step]]:
    """The plan's requests, phase by phase (see the module's docstring)."""
    phases: list[list[_Step]] = [[] for _ in range(6)]
    created = {c.path.lower() for c in plan.changes
               if c.action is ChangeKind.CREATE and c.kind in ("queue", "topic")}
    for change in plan.changes:
        entity = change.entity
        assert entity is not None
        if change.kind == "rule":
            deleted = change.action is ChangeKind.DELETE
            call = requests.delete if deleted else requests.rule
            phases[4 if deleted else 3].append(_Step(change, functools.partial(call, change)))
            continue
        if change.action is ChangeKind.DELETE:
            phases[0].append(_Step(change, functools.partial(requests.delete, change)))
            continue
        phase = 1 if entity.kind is not EntityKind.SUBSCRIPTION else 2
        if change.action is ChangeKind.UPDATE:
            keys = [key for key, _, _ in change.differences]
            late = phase == 1 and any((entity.properties[key] or "").lower() in created
                                      for key in _FORWARDING & set(keys))
            phases[5 if late else phase].append(
                _Step(change, functools.partial(requests.update, entity, keys)))
            continue
        later = sorted(key for key in _FORWARDING & set(entity.properties)
                       if phase == 1 and (entity.properties[key] or "").lower() in created)
        if entity.properties.get("Status", "Active") != "Active":
            later.append("Status")
        phases[phase].append(_Step(change, functools.partial(requests.create, entity,
                                                             frozenset(later)),
                                   finishes=not later))
        if later:
            phases[5].append(_Step(change, functools.partial(requests.update, entity, later)))
    return phases


def apply_plan(client: Any, plan: Plan, *, in_flight: int = IN_FLIGHT,
               on_progress: Callable[[Change], None] | None = None,
               cancel: threading.Event | None = None) -> ApplyReport:
    """Make the plan's changes, ``in_flight`` requests at most on their way at once.

    Args:
        client: A ``ServiceBusAdministrationClient``.
        plan: What to change (:func:`~._plan.plan`).
        in_flight: The most requests on their way at once.
        on_progress: Called with each change once the namespace has answered it done.
        cancel: Once set, nothing more is sent; the requests in flight finish.

    Returns:
        What was done, and how it ended.

    Raises:
        PlanRefusedError: The plan has changes the service cannot make (nothing sent).
    """
    if plan.refused:
        raise PlanRefusedError("nothing changed: " + "; ".join(plan.refused))
    requests = _Requests(client)
    done: list[Change] = []
    failure: list[tuple[Change, BaseException]] = []
    stop = cancel or threading.Event()

    def finished(step: _Step, future: Future[None]) -> None:
        error = future.exception()
        if error is not None:
            failure.append((step.change, error))
        elif step.finishes:
            done.append(step.change)
            if on_progress is not None:
                on_progress(step.change)

    with ThreadPoolExecutor(in_flight, thread_name_prefix="sbmgmt-topology") as pool:
        for phase in _steps(plan, requests):
            _run_phase(pool, phase, in_flight, lambda: stop.is_set() or bool(failure),
                       finished)
            if stop.is_set() or failure:
                break
    if failure:
        change, error = failure[0]
        return ApplyReport(tuple(done), ApplyOutcome.FAILED, error, change)
    if stop.is_set():
        return ApplyReport(tuple(done), ApplyOutcome.CANCELLED)
    return ApplyReport(tuple(done), ApplyOutcome.FINISHED)


def _translated_call(call: Callable[[], None]) -> None:
    with _translated():
        call()


def _run_phase(pool: ThreadPoolExecutor, steps: list[_Step], in_flight: int,
               stopped: Callable[[], bool],
               finished: Callable[[_Step, Future[None]], None]) -> None:
    """Keep ``in_flight`` of the steps going until all are done or ``stopped()``."""
    waiting: Iterator[_Step] = iter(steps)
    going: dict[Future[None], _Step] = {}
    while True:
        while len(going) < in_flight and not stopped():
            step = next(waiting, None)
            if step is None:
                break
            going[pool.submit(_translated_call, step.call)] = step
        if not going:
            return
        ready, _ = wait(going, return_when=FIRST_COMPLETED)
        for future in ready:
            finished(going.pop(future), future)
