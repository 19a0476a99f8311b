"""The topology file: a namespace's queues, topics, subscriptions and rules as the emulator's
Config.json, read and written.

The format is the emulator's (its installer repository's
``ServiceBus-Emulator/Schema/Config-schema.json``): ``UserConfig.Namespaces[0]`` named
``sbemulatorns`` with its ``Queues`` and ``Topics``, each topic with its ``Subscriptions``,
each subscription with its ``Rules``; ``UserConfig.Logging.Type``. Each entity's
``Properties`` holds every property the emulator has, always written (the emulator's
defaults are not the service's: 3 deliveries, an hour's time to live). What the emulator's
format cannot hold goes in an ``x-sbmgmt`` object beside ``Properties`` (the schema allows
other keys: it sets no ``additionalProperties``): the properties it lacks (auto-delete on
idle, size limits, partitioning, status, metadata, authorization rules without their
keys...) when they differ from the service's default, and a value past the schema's limits
(``MaxDeliveryCount`` above 10: ``Properties`` has 10, ``x-sbmgmt`` the value). Reading,
``x-sbmgmt`` wins over ``Properties`` and a property left out is the service's default.

The rule ``$Default``: the emulator's schema refuses the name (its rule-name pattern has no
``$``), and the emulator, like the service, gives a subscription listed without rules the
true rule ``$Default``. So a subscription whose only rule is that true rule is written
without ``Rules``; any other ``$Default`` is written as ``x-sbmgmt.DefaultRule`` (its
``Properties``), and ``"DefaultRule": null`` says a subscription with no rule at all. Read
back, a subscription has its ``Rules``, plus ``$Default`` as ``DefaultRule`` says, or (no
``DefaultRule``) the true ``$Default`` when ``Rules`` is absent or empty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import json5

from ...errors import ServiceBusManagementError
from ..entities import EntityKind
from ._fields import Form, Json, check_value, defaults, field_of, fields_of, normal

__all__ = ["DEFAULT_RULE", "EXTENSION", "NAMESPACE_NAME", "TRUE_FILTER", "EntitySpec",
           "RuleSpec", "Topology", "TopologyFileError", "checked_properties",
           "emulator_limits", "read_topology", "rule_spec", "write_topology"]

#: The key of sbmgmt's extension object on each queue, topic and subscription.
EXTENSION = "x-sbmgmt"
#: The one namespace name the emulator's schema allows (``"enum": ["sbemulatorns"]``).
NAMESPACE_NAME = "sbemulatorns"
#: The emulator schema's limits: queues and topics ("maxItems": 50 each; the descriptions
#: say 50 of both together), subscriptions per topic ("minItems": 1, "maxItems": 50).
_EMULATOR_ENTITIES = 50
_EMULATOR_SUBSCRIPTIONS = 50
#: The service's rule every new subscription gets (a true filter).
DEFAULT_RULE = "$Default"
TRUE_FILTER: Mapping[str, Json] = {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}}
#: ``x-sbmgmt``'s key for a subscription's ``$Default`` rule when it is not the true rule alone.
DEFAULT_RULE_KEY = "DefaultRule"
#: The emulator schema's name pattern (``[\w-\.\/]`` there: word characters, ``.``, ``/``
#: and ``-``; Python's ``re`` reads the schema's form as a bad range).
_EMULATOR_NAME = re.compile(r"^[A-Za-z0-9]$|^[A-Za-z0-9][\w.\/-]*[A-Za-z0-9]$")
_CORRELATION_KEYS = ("CorrelationId", "MessageId", "To", "ReplyTo", "Label", "SessionId",
                     "ReplyToSessionId", "ContentType", "Properties")


class TopologyFileError(ServiceBusManagementError, ValueError):
    """A topology file that is not the format: not JSON, a value of the wrong kind, an
    unknown property; the message names the JSON path."""


@dataclass(frozen=True)
class RuleSpec:
    """A subscription's rule: its name and its ``Properties`` as the file writes them
    (``FilterType``, ``SqlFilter`` or ``CorrelationFilter``, ``Action``)."""

    name: str
    properties: Mapping[str, Json]


@dataclass(frozen=True)
class EntitySpec:
    """A queue, topic or subscription with every property of its kind (the service's
    default where the file says nothing), in the file's form.

    Attributes:
        kind: Queue, topic or subscription.
        name: Its name (a subscription's own name, without its topic).
        properties: Every property of its kind, by the file's key.
        topic: A subscription's topic.
        rules: A subscription's rules, in the file's order (None for the others).
    """

    kind: EntityKind
    name: str
    properties: Mapping[str, Json]
    topic: str | None = None
    rules: tuple[RuleSpec, ...] | None = None

    @property
    def path(self) -> str:
        """``QUEUE``, ``TOPIC`` or ``TOPIC/Subscriptions/SUB``."""
        return self.name if self.topic is None else f"{self.topic}/Subscriptions/{self.name}"

    @property
    def key(self) -> str:
        """The path as the service compares it (names are case-insensitive)."""
        return self.path.lower()


@dataclass(frozen=True)
class Topology:
    """A namespace's entities: queues, then each topic followed by its subscriptions.

    Attributes:
        entities: The entities.
        left_out: What an export could not write, one sentence each (said on stderr).
    """

    entities: tuple[EntitySpec, ...]
    left_out: tuple[str, ...] = field(default=())

    def of_kind(self, kind: EntityKind) -> list[EntitySpec]:
        """The entities of one kind, in order."""
        return [entity for entity in self.entities if entity.kind is kind]


# --- writing -------------------------------------------------------------------------------

def _written(entity: EntitySpec) -> dict[str, Json]:
    """An entity's ``Name``, ``Properties`` and (when it has anything) ``x-sbmgmt``."""
    properties: dict[str, Json] = {}
    extension: dict[str, Json] = {}
    for prop in fields_of(entity.kind):
        value = entity.properties[prop.key]
        if entity.kind in prop.emulator:
            shown = "" if value is None and prop.default is None else value
            if prop.emulator_max is not None and value > prop.emulator_max:
                shown = prop.emulator_max
                extension[prop.key] = value
            properties[prop.key] = shown
        elif value != prop.default:
            extension[prop.key] = value
    out: dict[str, Json] = {"Name": entity.name, "Properties": properties}
    if extension:
        out[EXTENSION] = extension
    return out


def _written_subscription(sub: EntitySpec) -> dict[str, Json]:
    """A subscription with its rules, ``$Default`` as the module's docstring says."""
    written = _written(sub)
    rules = list(sub.rules or ())
    default = next((rule for rule in rules if rule.name.lower() == DEFAULT_RULE.lower()), None)
    others = [{"Name": rule.name, "Properties": dict(rule.properties)}
              for rule in rules if rule is not default]
    if default is not None and not others and dict(default.properties) == TRUE_FILTER:
        return written
    if default is not None or not others:
        extension = dict(written.get(EXTENSION, {}))
        extension[DEFAULT_RULE_KEY] = None if default is None else dict(default.properties)
        written[EXTENSION] = extension
    written["Rules"] = others
    return written


def write_topology(topology: Topology) -> str:
    """The topology as Config.json text (two-space indents, a final newline)."""
    queues = [_written(q) for q in topology.of_kind(EntityKind.QUEUE)]
    topics = []
    for topic in topology.of_kind(EntityKind.TOPIC):
        written = _written(topic)
        written["Subscriptions"] = [
            _written_subscription(sub) for sub in topology.entities
            if sub.kind is EntityKind.SUBSCRIPTION and sub.topic == topic.name]
        topics.append(written)
    document = {"UserConfig": {
        "Namespaces": [{"Name": NAMESPACE_NAME, "Queues": queues, "Topics": topics}],
        "Logging": {"Type": "File"}}}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def emulator_limits(topology: Topology) -> list[str]:
    """Where the topology is past what the emulator's schema takes, one sentence each (the
    file is still written whole; the fake and ``sbmgmt topology apply`` take it)."""
    said = []
    for kind in (EntityKind.QUEUE, EntityKind.TOPIC):
        count = len(topology.of_kind(kind))
        if count > _EMULATOR_ENTITIES:
            said.append(f"{count} {kind.value}s: the emulator takes at most "
                        f"{_EMULATOR_ENTITIES}")
    for topic in topology.of_kind(EntityKind.TOPIC):
        count = sum(1 for sub in topology.of_kind(EntityKind.SUBSCRIPTION)
                    if sub.topic == topic.name)
        if not 1 <= count <= _EMULATOR_SUBSCRIPTIONS:
            said.append(f"topic {topic.name} has {count} subscriptions: the emulator takes "
                        f"1 to {_EMULATOR_SUBSCRIPTIONS}")
    for entity in topology.entities:
        names = [entity.name, *(rule.name for rule in entity.rules or ()
                                if rule.name.lower() != DEFAULT_RULE.lower())]
        said += [f"{entity.path}: the name {name!r} is not one the emulator's schema takes"
                 for name in names if not _EMULATOR_NAME.match(name)]
    return said


# --- reading -------------------------------------------------------------------------------

def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TopologyFileError(f"{where}: must be an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TopologyFileError(f"{where}: must be a list")
    return value


def _name(item: Mapping[str, Any], where: str) -> str:
    name = item.get("Name")
    if not isinstance(name, str) or not name:
        raise TopologyFileError(f"{where}.Name: a name is required")
    return name


def checked_properties(kind: EntityKind, given: Mapping[str, Json], where: str,
                       start: Mapping[str, Json] | None = None) -> dict[str, Json]:
    """``start`` (default: the service's defaults) with ``given``'s properties, each checked
    and in its normal form.

    Raises:
        TopologyFileError: A property ``kind`` lacks, or a value of the wrong kind; the
            message names it after ``where``.
    """
    values = dict(defaults(kind) if start is None else start)
    for key, value in given.items():
        prop = field_of(kind, key)
        if prop is None:
            raise TopologyFileError(f"{where}{key}: a {kind.value} has no such property")
        if prop.form is Form.ENTITY and value == "":
            value = None  # the emulator's "no forwarding"
        problem = None if value is None and prop.default is None else check_value(prop, value)
        if problem is not None:
            raise TopologyFileError(f"{where}{key}: {problem}")
        values[key] = None if value is None else normal(prop, value)
    return values


def _properties(kind: EntityKind, item: Mapping[str, Any], where: str) -> dict[str, Json]:
    """Every property of ``kind``: the service's defaults, then ``Properties``, then
    ``x-sbmgmt``."""
    values = defaults(kind)
    for part in ("Properties", EXTENSION):
        given = dict(_object(item.get(part, {}), f"{where}.{part}"))
        if part == EXTENSION and kind is EntityKind.SUBSCRIPTION:
            given.pop(DEFAULT_RULE_KEY, None)  # a rule, not a property
        values = checked_properties(kind, given, f"{where}.{part}.", values)
    return values


def rule_spec(name: str, properties: Mapping[str, Any], where: str = "") -> RuleSpec:
    """A rule from its name and the file's ``Properties`` form, checked, in normal form.

    Raises:
        TopologyFileError: Not the form; the message names the field after ``where``.
    """
    return _rule({"Name": name, "Properties": properties}, where or "the rule", named=False)


def _rule(item: Any, where: str, *, named: bool = True) -> RuleSpec:
    rule = _object(item, where)
    at = f"{where}.Properties" if named else where
    properties = _object(rule.get("Properties"), at)
    kind = properties.get("FilterType")
    if kind == "Sql":
        sql = _object(properties.get("SqlFilter"), f"{at}.SqlFilter")
        if not isinstance(sql.get("SqlExpression"), str):
            raise TopologyFileError(f"{at}.SqlFilter.SqlExpression: the "
                                    "filter's SQL text is required")
        normal_form: dict[str, Json] = {"FilterType": "Sql",
                                        "SqlFilter": {"SqlExpression": sql["SqlExpression"]}}
    elif kind == "Correlation":
        given = _object(properties.get("CorrelationFilter"),
                        f"{at}.CorrelationFilter")
        unknown = sorted(set(given) - set(_CORRELATION_KEYS))
        if unknown:
            raise TopologyFileError(f"{at}.CorrelationFilter.{unknown[0]}: no "
                                    f"such field (the fields: {', '.join(_CORRELATION_KEYS)})")
        normal_form = {"FilterType": "Correlation",
                       "CorrelationFilter": {k: v for k, v in given.items()
                                             if v is not None and v != {}}}
    else:
        raise TopologyFileError(f"{at}.FilterType: must be Sql or Correlation")
    action = properties.get("Action")
    if action is not None:
        text = _object(action, f"{at}.Action").get("SqlExpression")
        if not isinstance(text, str):
            raise TopologyFileError(f"{at}.Action.SqlExpression: the action's "
                                    "SQL text is required")
        normal_form["Action"] = {"SqlExpression": text}
    return RuleSpec(_name(rule, where), normal_form)


def _subscription_rules(sub: Mapping[str, Any], where: str) -> tuple[RuleSpec, ...]:
    """A subscription's rules, ``$Default`` as the module's docstring says."""
    rules = [_rule(rule, f"{where}.Rules[{r}]")
             for r, rule in enumerate(_list(sub.get("Rules", []), f"{where}.Rules"))]
    extension = _object(sub.get(EXTENSION, {}), f"{where}.{EXTENSION}")
    if DEFAULT_RULE_KEY in extension:
        given = extension[DEFAULT_RULE_KEY]
        if given is not None:
            rules.insert(0, rule_spec(DEFAULT_RULE, given,
                                      f"{where}.{EXTENSION}.{DEFAULT_RULE_KEY}"))
    elif not rules:  # as the emulator and the service: a new subscription's true rule
        rules = [RuleSpec(DEFAULT_RULE, TRUE_FILTER)]
    return tuple(rules)


def _entities(namespace: Mapping[str, Any], where: str) -> Iterable[EntitySpec]:
    for q, item in enumerate(_list(namespace.get("Queues", []), f"{where}.Queues")):
        at = f"{where}.Queues[{q}]"
        queue = _object(item, at)
        yield EntitySpec(EntityKind.QUEUE, _name(queue, at),
                         _properties(EntityKind.QUEUE, queue, at))
    for t, item in enumerate(_list(namespace.get("Topics", []), f"{where}.Topics")):
        at = f"{where}.Topics[{t}]"
        topic = _object(item, at)
        name = _name(topic, at)
        yield EntitySpec(EntityKind.TOPIC, name, _properties(EntityKind.TOPIC, topic, at))
        subs = _list(topic.get("Subscriptions", []), f"{at}.Subscriptions")
        for s, sub_item in enumerate(subs):
            sub_at = f"{at}.Subscriptions[{s}]"
            sub = _object(sub_item, sub_at)
            yield EntitySpec(EntityKind.SUBSCRIPTION, _name(sub, sub_at),
                             _properties(EntityKind.SUBSCRIPTION, sub, sub_at),
                             topic=name, rules=_subscription_rules(sub, sub_at))


def read_topology(text: str) -> Topology:
    """A topology file's entities (JSON with the emulator's leniency: comments, trailing
    commas), every property filled in.

    Raises:
        TopologyFileError: Not JSON, not the format, or a name given twice; the message
            names the JSON path.
    """
    try:
        document = json5.loads(text)
    except ValueError as error:
        raise TopologyFileError(f"the file is not JSON: {error}") from None
    config = _object(_object(document, "the file").get("UserConfig"), "UserConfig")
    namespaces = _list(config.get("Namespaces"), "UserConfig.Namespaces")
    if len(namespaces) != 1:
        raise TopologyFileError("UserConfig.Namespaces: one namespace, please (the emulator's "
                                "schema allows one)")
    where = "UserConfig.Namespaces[0]"
    entities = tuple(_entities(_object(namespaces[0], where), where))
    seen: set[str] = set()
    for entity in entities:
        key = entity.key if entity.kind is EntityKind.SUBSCRIPTION else entity.name.lower()
        if key in seen:
            raise TopologyFileError(f"{entity.kind.value} {entity.path} is in the file twice "
                                    "(names are case-insensitive; a queue and a topic share "
                                    "them)")
        seen.add(key)
        rule_names = [rule.name.lower() for rule in entity.rules or ()]
        if len(set(rule_names)) != len(rule_names):
            raise TopologyFileError(f"subscription {entity.path} has a rule twice")
    return Topology(entities)
