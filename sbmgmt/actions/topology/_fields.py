"""Every property of a queue, topic and subscription the administration API has, as the
topology file writes it: its key, where it lives (the emulator's ``Properties`` or the
``x-sbmgmt`` extension), its form, the service's default, and the administration client's
attribute.

Keys are the service's own element names (the ATOM descriptions' ``QueueDescription``,
``TopicDescription``, ``SubscriptionDescription``), which are also the emulator's
Config.json keys where the emulator has the property. Values are JSON: booleans, whole
numbers, text, ISO 8601 durations in whole seconds (``PT1M``, ``P14D``: the emulator's
schema pattern, ``^P(?!$)(?:\\d+Y)?(?:\\d+M)?(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+S)?)?$``,
allows no fraction), and :data:`NEVER` for the service's "never" (.NET's
``TimeSpan.MaxValue``, which the service sends as ``P10675199DT2H48M5.4775807S``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from ..entities import EntityKind

__all__ = ["FIELDS", "NEVER", "STATUSES", "Field", "Form", "Json", "authorization_rules",
           "check_value", "defaults", "duration_text", "field_of", "fields_of", "from_sdk",
           "from_text", "normal", "parse_duration", "to_sdk"]

#: A JSON value as the file holds it.
Json = Any

#: "Never" (.NET's TimeSpan.MaxValue, 10675199 days 2:48:05.4775807) in whole seconds: the
#: service's default time to live and auto-delete-on-idle.
NEVER = "P10675199DT2H48M5S"
_NEVER_SECONDS = 10675199 * 86400 + 2 * 3600 + 48 * 60 + 5


class Form(enum.Enum):
    """How a property's value is written."""

    BOOL = "bool"
    INT = "int"
    TEXT = "text"
    DURATION = "duration"
    #: An entity name (the service sends a forwarding target as ``sb://host/name``).
    ENTITY = "entity"
    #: One of the service's ``EntityStatus`` values.
    STATUS = "status"
    #: ``[{"KeyName": ..., "Rights": [...]}]``: shared access rules, their keys left out.
    AUTHORIZATION = "authorization"


Q, T, S = EntityKind.QUEUE, EntityKind.TOPIC, EntityKind.SUBSCRIPTION
QUEUE_TOPIC = frozenset({Q, T})
QUEUE_SUBSCRIPTION = frozenset({Q, S})
ALL = frozenset({Q, T, S})


@dataclass(frozen=True)
class Field:
    """One property.

    Attributes:
        key: The file's key (the service's element name).
        attr: The administration client's attribute (``QueueProperties.lock_duration``).
        kinds: The entities that have it.
        form: How its value is written.
        default: The service's value when a create leaves it out (JSON).
        emulator: The emulator's Config.json has it in ``Properties`` (for these kinds; the
            topic's are fewer); else it is written in ``x-sbmgmt``.
        emulator_max: The emulator schema's maximum: a larger value is written there as
            this and whole in ``x-sbmgmt``.
        creatable: A create takes it (``Status`` is set by an update only).
        mutable: An update may change it (the service refuses changing a session or
            duplicate-detection or partitioning choice of an existing entity).
    """

    key: str
    attr: str
    kinds: frozenset[EntityKind]
    form: Form
    default: Json
    emulator: frozenset[EntityKind] = frozenset()
    emulator_max: int | None = None
    creatable: bool = True
    mutable: bool = True


#: The service's statuses (azure-servicebus's ``EntityStatus``).
STATUSES = ("Active", "Disabled", "SendDisabled", "ReceiveDisabled")

# Defaults: the service's, as Microsoft Learn's "Create queues / topics" pages and the
# administration client's docstrings give them (lock 1 min, 10 deliveries, duplicate window
# 10 min, 1024 MB, TTL and auto-delete never, batched operations on).
FIELDS: tuple[Field, ...] = (
    Field("LockDuration", "lock_duration", QUEUE_SUBSCRIPTION, Form.DURATION, "PT1M",
          emulator=QUEUE_SUBSCRIPTION),
    Field("MaxSizeInMegabytes", "max_size_in_megabytes", QUEUE_TOPIC, Form.INT, 1024),
    Field("RequiresDuplicateDetection", "requires_duplicate_detection", QUEUE_TOPIC, Form.BOOL,
          False, emulator=QUEUE_TOPIC, mutable=False),
    Field("RequiresSession", "requires_session", QUEUE_SUBSCRIPTION, Form.BOOL, False,
          emulator=QUEUE_SUBSCRIPTION, mutable=False),
    Field("DefaultMessageTimeToLive", "default_message_time_to_live", ALL, Form.DURATION, NEVER,
          emulator=ALL),
    Field("DeadLetteringOnMessageExpiration", "dead_lettering_on_message_expiration",
          QUEUE_SUBSCRIPTION, Form.BOOL, False, emulator=QUEUE_SUBSCRIPTION),
    Field("DeadLetteringOnFilterEvaluationExceptions",
          "dead_lettering_on_filter_evaluation_exceptions", frozenset({S}), Form.BOOL, True),
    Field("DuplicateDetectionHistoryTimeWindow", "duplicate_detection_history_time_window",
          QUEUE_TOPIC, Form.DURATION, "PT10M", emulator=QUEUE_TOPIC),
    # the emulator's schema: "minimum": 1, "maximum": 10
    Field("MaxDeliveryCount", "max_delivery_count", QUEUE_SUBSCRIPTION, Form.INT, 10,
          emulator=QUEUE_SUBSCRIPTION, emulator_max=10),
    Field("EnableBatchedOperations", "enable_batched_operations", ALL, Form.BOOL, True),
    Field("FilteringMessagesBeforePublishing", "filtering_messages_before_publishing",
          frozenset({T}), Form.BOOL, False),
    Field("SupportOrdering", "support_ordering", frozenset({T}), Form.BOOL, True),
    Field("Status", "status", ALL, Form.STATUS, "Active", creatable=False),
    Field("ForwardTo", "forward_to", QUEUE_SUBSCRIPTION, Form.ENTITY, None,
          emulator=QUEUE_SUBSCRIPTION),
    Field("ForwardDeadLetteredMessagesTo", "forward_dead_lettered_messages_to",
          QUEUE_SUBSCRIPTION, Form.ENTITY, None, emulator=QUEUE_SUBSCRIPTION),
    Field("UserMetadata", "user_metadata", ALL, Form.TEXT, None),
    Field("AutoDeleteOnIdle", "auto_delete_on_idle", ALL, Form.DURATION, NEVER),
    Field("EnablePartitioning", "enable_partitioning", QUEUE_TOPIC, Form.BOOL, False,
          mutable=False),
    Field("EnableExpress", "enable_express", QUEUE_TOPIC, Form.BOOL, False),
    Field("MaxMessageSizeInKilobytes", "max_message_size_in_kilobytes", QUEUE_TOPIC, Form.INT,
          256),
    Field("AuthorizationRules", "authorization_rules", QUEUE_TOPIC, Form.AUTHORIZATION, []),
)

_BY_KEY = {field.key: field for field in FIELDS}


def fields_of(kind: EntityKind) -> tuple[Field, ...]:
    """The properties a kind of entity has, in the table's order."""
    return tuple(field for field in FIELDS if kind in field.kinds)


def field_of(kind: EntityKind, key: str) -> Field | None:
    """The property ``key`` of ``kind``, or None when it has none of that name."""
    field = _BY_KEY.get(key)
    return field if field is not None and kind in field.kinds else None


def defaults(kind: EntityKind) -> dict[str, Json]:
    """Every property of ``kind`` at the service's default."""
    return {field.key: field.default for field in fields_of(kind)}


# --- durations -----------------------------------------------------------------------------

_DURATION = re.compile(
    r"^P(?!$)(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$")
#: A year and a month in days, as .NET's ``XmlConvert.ToTimeSpan`` counts them.
_UNIT_SECONDS = {"years": 365 * 86400, "months": 30 * 86400, "weeks": 7 * 86400,
                 "days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}


def parse_duration(text: str) -> float:
    """Seconds of an ISO 8601 duration (``PT1M``, ``P14D``, ``P1Y``); ValueError if it is
    none."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not an ISO 8601 duration such as 'PT1M' or 'P14D'")
    return sum(float(value) * _UNIT_SECONDS[unit]
               for unit, value in match.groupdict().items() if value)


def duration_text(seconds: float) -> str:
    """A duration as the file writes it: whole seconds, days / hours / minutes / seconds
    (``P1DT2H``, ``PT30S``); :data:`NEVER` at or past the service's "never"."""
    whole = round(seconds)
    if whole >= _NEVER_SECONDS:
        return NEVER
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = "".join(f"{value}{unit}" for value, unit in ((hours, "H"), (minutes, "M"),
                                                        (secs, "S")) if value)
    text = "P" + (f"{days}D" if days else "") + (f"T{clock}" if clock else "")
    return text if text != "P" else "PT0S"


# --- the administration client's values -----------------------------------------------------

def _entity_name(address: str | None) -> str | None:
    """A forwarding target's entity name (the service sends ``sb://host/name``)."""
    if not address:
        return None
    path = urlsplit(address).path if "://" in address else address
    return path.strip("/") or None


def authorization_rules(named: list[tuple[str, list[str]]]) -> list[dict[str, Json]]:
    """Shared access rules (key name, rights) as the file writes them: without their keys
    (secrets stay in the namespace), by name, each one's rights sorted."""
    return sorted(({"KeyName": name, "Rights": sorted(set(rights))} for name, rights in named),
                  key=lambda entry: str(entry["KeyName"]).lower())


def _authorization(rules: Any) -> list[dict[str, Json]]:
    return authorization_rules([(rule.key_name, [str(getattr(r, "value", r))
                                                 for r in rule.rights or ()])
                                for rule in rules or ()])


def from_text(field: Field, text: str | None) -> Json:
    """A property as the administration API's XML writes it (an element's text; None when
    absent or empty: the default) as the file writes it."""
    text = (text or "").strip()
    if not text:
        return field.default
    if field.form is Form.BOOL:
        return text.lower() == "true"
    if field.form is Form.INT:
        return int(text)
    if field.form is Form.DURATION:
        return duration_text(parse_duration(text))
    if field.form is Form.ENTITY:
        return _entity_name(text)
    return text


def from_sdk(field: Field, value: Any) -> Json:
    """A property of the administration client's model as the file writes it."""
    if field.form is Form.DURATION:
        if value is None:
            return field.default
        seconds = value.total_seconds() if isinstance(value, timedelta) else parse_duration(value)
        return duration_text(seconds)
    if field.form is Form.ENTITY:
        return _entity_name(value)
    if field.form is Form.STATUS:
        return str(getattr(value, "value", value)) if value is not None else field.default
    if field.form is Form.AUTHORIZATION:
        return _authorization(value)
    if field.form is Form.TEXT:
        return value or None
    return field.default if value is None else value


def normal(field: Field, value: Json) -> Json:
    """A checked file value in the one form two equal values share (a duration rewritten,
    ``""`` as no forwarding, authorization rules sorted)."""
    if field.form is Form.DURATION:
        return duration_text(parse_duration(value))
    if field.form in (Form.ENTITY, Form.TEXT):
        return value or None
    if field.form is Form.AUTHORIZATION:
        return authorization_rules([(entry["KeyName"], entry["Rights"]) for entry in value])
    return value


def to_sdk(field: Field, value: Json) -> Any:
    """A file's value as the administration client takes it (durations as timedelta)."""
    if field.form is Form.DURATION:
        return timedelta(seconds=parse_duration(value))
    return value


def check_value(field: Field, value: Json) -> str | None:
    """What is wrong with a file's value for ``field`` (in words), or None."""
    form = field.form
    if form is Form.BOOL and not isinstance(value, bool):
        return "must be true or false"
    if form is Form.INT and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        return "must be a whole number of at least 1"
    if form is Form.DURATION:
        try:
            seconds = parse_duration(value)
        except ValueError as error:
            return str(error)
        if seconds <= 0:
            return "must be longer than zero"
    if form in (Form.TEXT, Form.ENTITY) and value is not None and not isinstance(value, str):
        return "must be text"
    if form is Form.STATUS and value not in STATUSES:
        return f"must be one of {', '.join(STATUSES)}"
    if form is Form.AUTHORIZATION:
        return _authorization_problem(value)
    return None


def _authorization_problem(value: Json) -> str | None:
    if not isinstance(value, list):
        return 'must be a list of {"KeyName": ..., "Rights": [...]}'
    for entry in value:
        if (not isinstance(entry, Mapping) or set(entry) != {"KeyName", "Rights"}
                or not isinstance(entry.get("KeyName"), str)
                or not isinstance(entry.get("Rights"), list)
                or not all(r in ("Manage", "Send", "Listen") for r in entry["Rights"])):
            return ('each rule is {"KeyName": "name", "Rights": ["Manage", "Send", '
                    '"Listen"]} (its keys are the namespace\'s: never in the file)')
    return None
