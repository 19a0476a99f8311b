"""A namespace's topology read through the official administration client.

The listings go out at once on a small pool (:data:`IN_FLIGHT` requests at most): the
queues' pages, the topics' pages, each topic's subscriptions as soon as the topics are
known, and each subscription's rules as soon as its topic's subscriptions are. They are the
administration client's own requests (its generated operations, ``client._impl``: the same
pipeline, credential and retries), but their ATOM feeds are read here, element by element,
rather than into the client's models: the elements are the file's keys (:mod:`._fields`),
and the models took 5 ms of CPU per entry, most of an export of 1,000 entities
(bench/topology.py). The entities are sorted by name (case-insensitive) and the rules
likewise, so that the same namespace always writes the same file.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..entities import (
    DESCRIPTION_NAMESPACE,
    LISTING_PAGE,
    EntityKind,
    _translated,
    feed_entries,
)
from ._fields import Form, Json, authorization_rules, fields_of, from_sdk, from_text
from ._model import EntitySpec, RuleSpec, Topology

__all__ = ["IN_FLIGHT", "export_topology", "properties_of", "rules_of"]

#: The most administration requests an export or an apply has on their way at once
#: (bench/topology.py: with 16, an apply of 1,000 entities at 5 ms took 8 s where the
#: official client one request at a time took 42 s).
IN_FLIGHT = 16

_SB = "{" + DESCRIPTION_NAMESPACE + "}"
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
_CORRELATION = ("CorrelationId", "MessageId", "To", "ReplyTo", "Label", "SessionId",
                "ReplyToSessionId", "ContentType")
#: The XML Schema types of a property value that JSON holds as it is.
_JSON_TYPES: dict[str, Callable[[str], Json]] = {
    "string": str, "int": int, "long": int, "short": int, "byte": int,
    "double": float, "float": float, "decimal": float,
    "boolean": lambda text: text.lower() == "true",
}


def properties_of(kind: EntityKind, model: Any) -> dict[str, Json]:
    """An administration client model's properties (``QueueProperties``...) as the file
    writes them."""
    return {field.key: from_sdk(field, getattr(model, field.attr, None))
            for field in fields_of(kind)}


def _described(kind: EntityKind, description: Any) -> dict[str, Json]:
    """A description's properties (``QueueDescription``...) as the file writes them."""
    values: dict[str, Json] = {}
    for field in fields_of(kind):
        found = None if description is None else description.find(_SB + field.key)
        if field.form is Form.AUTHORIZATION:
            values[field.key] = authorization_rules([
                (rule.findtext(_SB + "KeyName") or "",
                 [right.text or "" for right in rule.iterfind(f"{_SB}Rights/{_SB}AccessRights")])
                for rule in ([] if found is None else found)])
        else:
            values[field.key] = from_text(field, None if found is None else found.text)
    return values


def _values(holder: Any, where: str, left_out: list[str]) -> dict[str, Json]:
    """A filter's ``Properties`` or ``Parameters`` (``KeyValueOfstringanyType``): the
    values JSON holds; the others said in ``left_out``."""
    kept: dict[str, Json] = {}
    for pair in [] if holder is None else holder:
        key = pair.findtext(_SB + "Key") or ""
        value = pair.find(_SB + "Value")
        kind = "" if value is None else (value.get(_XSI_TYPE) or "string").rpartition(":")[2]
        read = _JSON_TYPES.get(kind)
        if read is None or value is None:
            left_out.append(f"{where}: {key} is a {kind or 'null'}, which the file cannot hold")
        else:
            kept[key] = read(value.text or "")
    return kept


def _rule(title: str, description: Any, where: str, left_out: list[str]) -> RuleSpec:
    """A ``RuleDescription`` as the file writes it; what the emulator's format cannot hold
    (SQL parameters, time-typed correlation properties) is said in ``left_out``."""
    flt = description.find(_SB + "Filter")
    properties: dict[str, Json]
    if flt is not None and flt.get(_XSI_TYPE, "").endswith("CorrelationFilter"):
        fields: dict[str, Json] = {key: flt.findtext(_SB + key) for key in _CORRELATION
                                   if flt.findtext(_SB + key) is not None}
        kept = _values(flt.find(_SB + "Properties"), where, left_out)
        if kept:
            fields["Properties"] = kept
        properties = {"FilterType": "Correlation", "CorrelationFilter": fields}
    else:
        expression = "1=1" if flt is None else flt.findtext(_SB + "SqlExpression") or "1=1"
        properties = {"FilterType": "Sql", "SqlFilter": {"SqlExpression": expression}}
        if flt is not None and _values(flt.find(_SB + "Parameters"), where, []):
            left_out.append(f"{where}: the filter's SQL parameters")
    action = description.find(_SB + "Action")
    expression = None if action is None else action.findtext(_SB + "SqlExpression")
    if expression:
        properties["Action"] = {"SqlExpression": expression}
        if _values(action.find(_SB + "Parameters"), where, []):
            left_out.append(f"{where}: the action's SQL parameters")
    return RuleSpec(title, properties)


def rules_of(client: Any, topic: str, subscription: str,
             left_out: list[str]) -> tuple[RuleSpec, ...]:
    """A subscription's rules, sorted by name."""
    operations = client._impl
    path = f"{topic}/Subscriptions/{subscription}/Rules"
    entries = feed_entries(lambda skip: operations.list_rules(topic, subscription, skip=skip,
                                                               top=LISTING_PAGE))
    return tuple(_rule(title, description, f"{path}/{title}", left_out)
                 for title, description in _sorted(entries))


def _sorted(entries: Any) -> list[tuple[str, Any]]:
    return sorted(entries, key=lambda entry: entry[0].lower())


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
    operations = client._impl
    left_out: list[str] = []
    entities: list[EntitySpec] = []
    report = on_progress or (lambda _count: None)

    def listed(kind: str) -> list[tuple[str, Any]]:
        return _sorted(feed_entries(lambda skip: operations.list_entities(
            kind, skip=skip, top=LISTING_PAGE)))

    def subscriptions(topic: str) -> list[tuple[str, Any]]:
        return _sorted(feed_entries(lambda skip: operations.list_subscriptions(
            topic, skip=skip, top=LISTING_PAGE)))

    with _translated(), ThreadPoolExecutor(in_flight,
                                           thread_name_prefix="sbmgmt-topology") as pool:
        queues = pool.submit(listed, "queues")
        topics = listed("topics")
        their_subscriptions = [pool.submit(subscriptions, name) for name, _ in topics]
        for name, description in queues.result():
            entities.append(EntitySpec(EntityKind.QUEUE, name,
                                       _described(EntityKind.QUEUE, description)))
        report(len(entities))
        rules: list[list[tuple[str, Any, Future[tuple[RuleSpec, ...]]]]] = [
            [(sub, description, pool.submit(rules_of, client, topic, sub, left_out))
             for sub, description in subs.result()]
            for (topic, _), subs in zip(topics, their_subscriptions, strict=True)]
        for (topic, description), its_subscriptions in zip(topics, rules, strict=True):
            entities.append(EntitySpec(EntityKind.TOPIC, topic,
                                       _described(EntityKind.TOPIC, description)))
            for sub, sub_description, its_rules in its_subscriptions:
                entities.append(EntitySpec(
                    EntityKind.SUBSCRIPTION, sub,
                    _described(EntityKind.SUBSCRIPTION, sub_description), topic=topic,
                    rules=its_rules.result()))
            report(len(entities))
    return Topology(tuple(entities), tuple(sorted(left_out)))
