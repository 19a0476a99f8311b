"""A namespace's topology read through the official administration client.

The listings go out at once on a small pool (:data:`IN_FLIGHT` requests at most): the
queues' pages, the topics' pages, each topic's subscriptions as soon as the topics are
known, and each subscription's rules as soon as its topic's subscriptions are. The
entities are sorted by name (case-insensitive) and the rules likewise, so that the same
namespace always writes the same file.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from ..entities import EntityKind, _translated
from ._fields import Json, fields_of, from_sdk
from ._model import EntitySpec, RuleSpec, Topology

__all__ = ["IN_FLIGHT", "export_topology", "properties_of", "rule_of"]

#: The most administration requests an export or an apply has on their way at once
#: (bench/topology.py: at 5 ms of latency an export of 1,000 entities took ... ; see the
#: report in docs/topology.md).
IN_FLIGHT = 16

_CORRELATION = (("correlation_id", "CorrelationId"), ("message_id", "MessageId"), ("to", "To"),
                ("reply_to", "ReplyTo"), ("label", "Label"), ("session_id", "SessionId"),
                ("reply_to_session_id", "ReplyToSessionId"), ("content_type", "ContentType"))


def properties_of(kind: EntityKind, model: Any) -> dict[str, Json]:
    """An administration client model's properties as the file writes them."""
    return {field.key: from_sdk(field, getattr(model, field.attr, None))
            for field in fields_of(kind)}


def _json_values(values: dict[str, Any] | None, where: str, left_out: list[str]) -> dict[str, Json]:
    """A filter's properties or parameters that JSON can hold; the others said."""
    kept: dict[str, Json] = {}
    for key, value in (values or {}).items():
        if isinstance(value, datetime | timedelta):
            left_out.append(f"{where}: {key} is a {type(value).__name__}, which the file "
                            "cannot hold")
        else:
            kept[key] = value
    return kept


def rule_of(rule: Any, where: str, left_out: list[str]) -> RuleSpec:
    """A rule of the administration client (``RuleProperties``) as the file writes it;
    what the emulator's format cannot hold (SQL parameters, time-typed correlation
    properties) is added to ``left_out``, one sentence each."""
    flt, properties = rule.filter, {}
    if hasattr(flt, "sql_expression"):
        properties = {"FilterType": "Sql", "SqlFilter": {"SqlExpression": flt.sql_expression}}
        if flt.parameters:
            left_out.append(f"{where}: the filter's SQL parameters "
                            f"({', '.join(sorted(flt.parameters))})")
    else:
        fields: dict[str, Json] = {key: getattr(flt, attr) for attr, key in _CORRELATION
                                   if getattr(flt, attr, None) is not None}
        kept = _json_values(flt.properties, where, left_out)
        if kept:
            fields["Properties"] = kept
        properties = {"FilterType": "Correlation", "CorrelationFilter": fields}
    if rule.action is not None and rule.action.sql_expression:
        properties["Action"] = {"SqlExpression": rule.action.sql_expression}
        if rule.action.parameters:
            left_out.append(f"{where}: the action's SQL parameters "
                            f"({', '.join(sorted(rule.action.parameters))})")
    return RuleSpec(rule.name, properties)


def _listed(listing: Callable[..., Any], *names: str) -> list[Any]:
    """Every page of a listing, sorted by name (case-insensitive)."""
    return sorted(listing(*names), key=lambda model: str(model.name).lower())


def export_topology(client: Any, *, in_flight: int = IN_FLIGHT,
                    on_progress: Callable[[int], None] | None = None) -> Topology:
    """Every queue, topic, subscription and rule of a namespace, with every property.

    Args:
        client: A ``ServiceBusAdministrationClient`` (see
            :func:`sbmgmt.actions.entities.admin_client`).
        in_flight: The most requests on their way at once.
        on_progress: Called with the number of entities read so far.

    Returns:
        The topology; ``left_out`` says what the file cannot hold.

    Raises:
        UnauthorizedError: The credentials were refused.
        TransportError: The administration API did not answer.
        ServiceBusManagementError: Any other failed reply.
    """
    left_out: list[str] = []
    entities: list[EntitySpec] = []
    report = on_progress or (lambda _count: None)
    with _translated(), ThreadPoolExecutor(in_flight,
                                           thread_name_prefix="sbmgmt-topology") as pool:
        queues = pool.submit(_listed, client.list_queues)
        topics = _listed(client.list_topics)
        subscriptions = [pool.submit(_listed, client.list_subscriptions, topic.name)
                         for topic in topics]
        for queue in queues.result():
            entities.append(EntitySpec(EntityKind.QUEUE, queue.name,
                                       properties_of(EntityKind.QUEUE, queue)))
        report(len(entities))
        rules: list[list[tuple[Any, Future[list[Any]]]]] = [
            [(sub, pool.submit(_listed, client.list_rules, topic.name, sub.name))
             for sub in subs.result()]
            for topic, subs in zip(topics, subscriptions, strict=True)]
        for topic, its_subscriptions in zip(topics, rules, strict=True):
            entities.append(EntitySpec(EntityKind.TOPIC, topic.name,
                                       properties_of(EntityKind.TOPIC, topic)))
            for sub, its_rules in its_subscriptions:
                path = f"{topic.name}/Subscriptions/{sub.name}"
                specs = tuple(rule_of(rule, f"{path}/Rules/{rule.name}", left_out)
                              for rule in its_rules.result())
                entities.append(EntitySpec(EntityKind.SUBSCRIPTION, sub.name,
                                           properties_of(EntityKind.SUBSCRIPTION, sub),
                                           topic=topic.name, rules=specs))
            report(len(entities))
    return Topology(tuple(entities), tuple(left_out))
