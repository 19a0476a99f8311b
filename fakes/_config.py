"""The official Service Bus emulator's ``Config.json``, validated with pydantic.

The contract is the emulator's published JSON schema (its installer repository,
``ServiceBus-Emulator/Schema/Config-schema.json``): what it accepts loads, what it refuses is
refused with a :class:`~fakes.ConfigError` whose message names the JSON path, e.g.
``UserConfig.Namespaces[0].Queues[2].Properties.LockDuration: ...``. The file is read as the
emulator reads it: JSON with ``//`` and ``/* */`` comments and trailing commas (the json5
parser); an empty ``ForwardTo`` / ``ForwardDeadLetteredMessagesTo`` means none. Where the
fake is more lenient than the schema it says so in docs/fake.md ("Moving from the emulator").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

import json5
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sbmgmt.rules import CorrelationFilter, RuleDescription, SqlFilter, SqlRuleAction

from ._admin import (
    AUTHORIZATION_RULES,
    QUEUE_DESCRIBED,
    SUBSCRIPTION_DESCRIBED,
    TOPIC_DESCRIBED,
    described,
    named_rules_xml,
)
from ._entity_state import EntitySettings
from ._errors import ArgumentError, ConfigError
from ._validation import (
    check_entity_name,
    check_idle,
    check_rule_name,
    check_settings,
    check_subscription_name,
    check_topic_settings,
    dated,
)
from .sql import SqlSyntaxError, parse_action, parse_filter


class EntityMaker(Protocol):
    """What a configuration is applied to: :class:`~fakes.FakeNamespace` (its entity
    settings as keywords)."""

    def add_queue(self, name: str, *args: Any, **settings: Any) -> None: ...

    def add_topic(self, name: str, *args: Any, **settings: Any) -> None: ...

    def add_subscription(self, topic: str, name: str, *args: Any, **settings: Any) -> None: ...

    def describe(self, path: str, properties: dict[str, str]) -> None: ...


__all__ = ["EmulatorConfig", "apply_config", "load_config", "parse_duration"]

# The schema's duration pattern,
# "^P(?!$)(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?$",
# with decimal fractions allowed too (ISO 8601 allows them; the fake always did).
_NUMBER = r"\d+(?:\.\d+)?"
_DURATION = re.compile(
    rf"^P(?!$)(?:(?P<years>{_NUMBER})Y)?(?:(?P<months>{_NUMBER})M)?(?:(?P<days>{_NUMBER})D)?"
    rf"(?:T(?:(?P<hours>{_NUMBER})H)?(?:(?P<minutes>{_NUMBER})M)?(?:(?P<seconds>{_NUMBER})S)?)?$")
#: A year and a month in days, as .NET's ``XmlConvert.ToTimeSpan`` counts them.
_DAYS = {"years": 365, "months": 30}


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration as the emulator's schema allows it (``PT1M``, ``P14D``, ``P1Y``,
    ``PT``; ``PT30.5S`` too) as a timedelta; a year is 365 days, a month 30."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not an ISO 8601 duration such as 'PT1M'")
    total = timedelta()
    for unit, value in match.groupdict().items():
        if value:
            amount = float(value)
            total += (timedelta(days=amount * _DAYS[unit]) if unit in _DAYS
                      else timedelta(**{unit: amount}))
    return total


#: The schema's name pattern, "^[A-Za-z0-9]$|^[A-Za-z0-9][\w-\.\/]*[A-Za-z0-9]$", with the
#: service's rules beyond it (fakes/_validation.py, the one rule of every way in).
EntityName = Annotated[str, AfterValidator(check_entity_name)]
SubscriptionName = Annotated[str, AfterValidator(check_subscription_name)]
RuleName = Annotated[str, AfterValidator(functools.partial(check_rule_name, default=False))]


class _Model(BaseModel):
    # strict: as the schema's types, a boolean is a JSON boolean, a number a JSON number
    # ("yes" or 1 is no boolean, "3" no number)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _Duration(_Model):
    @field_validator("*", mode="before")
    @classmethod
    def _durations(cls, value: Any, info: Any) -> Any:
        if info.field_name in _DURATION_FIELDS and isinstance(value, str):
            return parse_duration(value)
        if info.field_name in _FORWARDING_FIELDS and isinstance(value, str):
            return None if value == "" else check_entity_name(value)  # "": the emulator's "none"
        return value


_DURATION_FIELDS = frozenset({
    "LockDuration", "DefaultMessageTimeToLive", "DuplicateDetectionHistoryTimeWindow",
    "AutoDeleteOnIdle"})
_FORWARDING_FIELDS = frozenset({"ForwardTo", "ForwardDeadLetteredMessagesTo"})


class EntityProperties(_Duration):
    """Properties of a queue or subscription."""

    RequiresSession: bool = False
    LockDuration: timedelta = timedelta(minutes=1)
    MaxDeliveryCount: int = Field(default=10, ge=1, le=10)  # the schema: 1 to 10
    DefaultMessageTimeToLive: timedelta | None = None
    DeadLetteringOnMessageExpiration: bool = False
    ForwardTo: str | None = None
    ForwardDeadLetteredMessagesTo: str | None = None
    DuplicateDetectionHistoryTimeWindow: timedelta | None = None
    RequiresDuplicateDetection: bool = False
    AutoDeleteOnIdle: timedelta | None = None
    EnableBatchedOperations: bool = True
    EnablePartitioning: bool = False
    MaxSizeInMegabytes: int | None = None


class TopicProperties(_Duration):
    """Properties of a topic (duplicate detection and the default time to live are
    emulated; see docs/fake.md)."""

    DefaultMessageTimeToLive: timedelta | None = None
    DuplicateDetectionHistoryTimeWindow: timedelta | None = None
    RequiresDuplicateDetection: bool = False
    EnablePartitioning: bool = False


class CorrelationFilterConfig(_Model):
    """A correlation filter in Config.json."""

    CorrelationId: str | None = None
    MessageId: str | None = None
    To: str | None = None
    ReplyTo: str | None = None
    Label: str | None = None
    SessionId: str | None = None
    ReplyToSessionId: str | None = None
    ContentType: str | None = None
    Properties: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _not_empty(cls, data: Any) -> Any:
        """The schema's ``minProperties: 1``, for the filter and for its ``Properties``."""
        if isinstance(data, dict):
            if not data:
                raise ValueError("a correlation filter needs at least one property to match")
            if data.get("Properties") == {}:
                raise ValueError("Properties, when given, needs at least one entry")
        return data


class SqlExpression(_Model):
    """A SQL filter or action expression."""

    SqlExpression: str = Field(min_length=1)


class RuleProperties(_Model):
    """A rule's filter and action."""

    FilterType: Literal["Correlation", "Sql"]
    CorrelationFilter: CorrelationFilterConfig | None = None
    SqlFilter: SqlExpression | None = None
    Action: SqlExpression | None = None

    @model_validator(mode="after")
    def _filter_of_its_type(self) -> RuleProperties:
        """The schema's ``oneOf``: a Correlation rule has a CorrelationFilter, a Sql rule a
        SqlFilter."""
        if self.FilterType == "Sql" and self.SqlFilter is None:
            raise ValueError("FilterType Sql needs SqlFilter")
        if self.FilterType == "Correlation" and self.CorrelationFilter is None:
            raise ValueError("FilterType Correlation needs CorrelationFilter")
        return self


class RuleConfig(_Model):
    """A subscription rule."""

    Name: RuleName
    Properties: RuleProperties


class SubscriptionConfig(_Model):
    """A subscription."""

    Name: SubscriptionName
    Properties: EntityProperties = EntityProperties()
    extension: dict[str, Any] = Field(default_factory=dict, alias="x-sbmgmt")
    Rules: list[RuleConfig] = Field(default_factory=list, max_length=1000)


class TopicConfig(_Model):
    """A topic with its subscriptions."""

    Name: EntityName
    Properties: TopicProperties = TopicProperties()
    extension: dict[str, Any] = Field(default_factory=dict, alias="x-sbmgmt")
    #: The schema: required, 1 to 50.
    Subscriptions: list[SubscriptionConfig] = Field(min_length=1, max_length=50)


class QueueConfig(_Model):
    """A queue."""

    Name: EntityName
    Properties: EntityProperties = EntityProperties()
    extension: dict[str, Any] = Field(default_factory=dict, alias="x-sbmgmt")


class NamespaceConfig(_Model):
    """One namespace (the fake serves the first)."""

    #: The schema allows one name only.
    Name: Literal["sbemulatorns"]
    #: The fake's own (the emulator's schema has no tier): the service tier whose quotas and
    #: features the namespace keeps (docs/fake.md, "Tiers"); Standard when absent.
    Tier: Literal["Basic", "Standard", "Premium"] | None = None
    #: The schema: both required, at most 50 each.
    Queues: list[QueueConfig] = Field(max_length=50)
    Topics: list[TopicConfig] = Field(max_length=50)


class LoggingConfig(_Model):
    """The ``Logging`` section: where ``python -m fakes`` writes its log (``Console``:
    stderr; ``File``: ``fake-servicebus.log`` in the temporary directory; both), as the
    emulator does (docs/fake.md, "The log")."""

    Type: Literal["File", "Console", "File,Console", "Console,File"]


class UserConfig(_Model):
    """The ``UserConfig`` object."""

    Namespaces: list[NamespaceConfig] = Field(min_length=1, max_length=1)
    Logging: LoggingConfig  # required by the schema


class EmulatorConfig(_Model):
    """The whole Config.json."""

    UserConfig: UserConfig


def _path(location: tuple[int | str, ...]) -> str:
    out = ""
    for part in location:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _is_json_text(source: str) -> bool:
    """Whether a string argument is the file's text rather than its path: an object, or a
    comment before it."""
    start = source.lstrip()
    return start.startswith(("{", "//", "/*")) or "\n" in source


def load_config(source: str | Path | dict[str, Any]) -> EmulatorConfig:
    """Read and validate a Config.json (a path, JSON text, or an already parsed dict)."""
    if isinstance(source, dict):
        data: Any = source
    else:
        text = source.read_text() if isinstance(source, Path) else source
        if isinstance(source, str) and not _is_json_text(source):
            text = Path(source).read_text()
        try:
            data = json5.loads(text)
        except ValueError as exc:
            raise ConfigError(f"Config.json is not valid JSON: {exc}") from None
    try:
        return EmulatorConfig.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_path(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise ConfigError("; ".join(problems)) from None


def _rule(rule: RuleConfig, where: str) -> RuleDescription:
    """The rule as the store takes it; a ConfigError naming ``where`` if a value cannot be
    carried (a correlation property that is no AMQP value, e.g. an integer past 64 bits)."""
    try:
        return _description(rule)
    except ValidationError as exc:
        problems = [f"{where}.Properties.CorrelationFilter: {e['msg']}" for e in exc.errors()]
        raise ConfigError("; ".join(problems)) from None


def _description(rule: RuleConfig) -> RuleDescription:
    props = rule.Properties
    action = None if props.Action is None else SqlRuleAction(expression=props.Action.SqlExpression)
    if props.SqlFilter is not None:  # FilterType Sql (the model checked)
        return RuleDescription(name=rule.Name, action=action,
                               filter=SqlFilter(expression=props.SqlFilter.SqlExpression))
    c = props.CorrelationFilter
    assert c is not None  # FilterType Correlation (the model checked)
    return RuleDescription(name=rule.Name, action=action, filter=CorrelationFilter(
        correlation_id=c.CorrelationId, message_id=c.MessageId, to=c.To, reply_to=c.ReplyTo,
        subject=c.Label, session_id=c.SessionId, reply_to_session_id=c.ReplyToSessionId,
        content_type=c.ContentType, properties=c.Properties))


def _checked(rule: RuleDescription, where: str) -> RuleDescription:
    """The rule, if its SQL filter and action parse; else a ConfigError naming the path."""
    checks: list[tuple[str, Callable[[str], object], str]] = []
    if isinstance(rule.filter, SqlFilter):
        checks.append(("SqlFilter.SqlExpression", parse_filter, rule.filter.expression))
    if rule.action is not None:
        checks.append(("Action.SqlExpression", parse_action, rule.action.expression))
    for field, parse, expression in checks:
        try:
            parse(expression)
        except SqlSyntaxError as exc:
            raise ConfigError(f"{where}.Properties.{field}: {exc}") from None
    return rule


def _entity_kwargs(props: EntityProperties) -> dict[str, Any]:
    return {
        "requires_session": props.RequiresSession,
        "lock_duration": props.LockDuration,
        "max_delivery_count": props.MaxDeliveryCount,
        "default_ttl": props.DefaultMessageTimeToLive,
        "dead_lettering_on_expiration": props.DeadLetteringOnMessageExpiration,
        "forward_to": props.ForwardTo,
        "forward_dead_lettered_messages_to": props.ForwardDeadLetteredMessagesTo,
        "auto_delete_on_idle": props.AutoDeleteOnIdle,
    }


def _duplicate_kwargs(props: EntityProperties | TopicProperties) -> dict[str, Any]:
    """``RequiresDuplicateDetection`` and its window (the service's default when absent)."""
    kwargs: dict[str, Any] = {"requires_duplicate_detection": props.RequiresDuplicateDetection}
    if props.DuplicateDetectionHistoryTimeWindow is not None:
        kwargs["duplicate_detection_history_time_window"] = (
            props.DuplicateDetectionHistoryTimeWindow)
    return kwargs


def _check_properties(spec: NamespaceConfig) -> None:
    """Refuse what the fake cannot honour, naming the JSON path: a forwarding target that
    is no queue or topic of the config, duplicate detection on a subscription (a queue's
    and a topic's property in the service), a history window that is not positive."""
    names = {queue.Name.lower() for queue in spec.Queues}
    names |= {topic.Name.lower() for topic in spec.Topics}
    base = "UserConfig.Namespaces[0]"
    entities: list[tuple[str, EntityProperties | TopicProperties]] = [
        (f"{base}.Queues[{q}]", queue.Properties) for q, queue in enumerate(spec.Queues)]
    entities += [(f"{base}.Topics[{t}]", topic.Properties) for t, topic in enumerate(spec.Topics)]
    for t, topic in enumerate(spec.Topics):
        for s, sub in enumerate(topic.Subscriptions):
            where = f"{base}.Topics[{t}].Subscriptions[{s}]"
            if sub.Properties.RequiresDuplicateDetection:
                raise ConfigError(f"{where}.Properties.RequiresDuplicateDetection: duplicate "
                                  "detection is a property of the topic, not of a subscription")
            entities.append((where, sub.Properties))
    for where, props in entities:
        window = props.DuplicateDetectionHistoryTimeWindow
        if window is not None and window.total_seconds() <= 0:
            raise ConfigError(f"{where}.Properties.DuplicateDetectionHistoryTimeWindow: "
                              "must be positive")
        try:
            _check_ranges(props)
        except ValueError as exc:
            raise ConfigError(f"{where}.Properties: {exc}") from None
        if not isinstance(props, EntityProperties):
            continue
        for field in ("ForwardTo", "ForwardDeadLetteredMessagesTo"):
            target = getattr(props, field)
            if target is not None and target.lower() not in names:
                raise ConfigError(f"{where}.Properties.{field}: {target!r} is not a queue or "
                                  "topic of this namespace")


def _seconds(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def _check_ranges(props: EntityProperties | TopicProperties) -> None:
    """The service's ranges (fakes/_validation.py), as the administration API applies them;
    ValueError names the property."""
    window = _seconds(props.DuplicateDetectionHistoryTimeWindow)
    ttl = dated(_seconds(props.DefaultMessageTimeToLive))
    if isinstance(props, TopicProperties):
        check_topic_settings(window, ttl)
        return
    check_settings(EntitySettings(lock_duration=props.LockDuration.total_seconds(),
                                  max_delivery_count=props.MaxDeliveryCount, default_ttl=ttl,
                                  duplicate_detection_window=window))
    check_idle(dated(_seconds(props.AutoDeleteOnIdle)))


def _extension(values: dict[str, Any], kept: Any, where: str, now: float,
               deliveries: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """An entity's ``x-sbmgmt`` object (sbmgmt's extension of the format, docs/topology.md):
    the add keywords it overrides (``MaxDeliveryCount`` past the schema's 10) and the
    properties the fake keeps and reports (the administration API's texts), each checked as
    that API checks them, and the authorization rules (names and rights: the file holds no
    keys), kept as the administration API keeps them."""
    overrides: dict[str, Any] = {}
    texts: dict[str, str] = {}
    rules: str | None = None
    for key, value in values.items():
        at = f"{where}.x-sbmgmt.{key}"
        if key == "MaxDeliveryCount" and deliveries:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{at}: must be a whole number of at least 1")
            overrides["max_delivery_count"] = value
        elif key in kept and isinstance(value, bool | int | str):
            texts[key] = str(value).lower() if isinstance(value, bool) else str(value)
        elif key == AUTHORIZATION_RULES and kept is not SUBSCRIPTION_DESCRIBED:
            try:
                rules = named_rules_xml(value, now)
            except ArgumentError as exc:
                raise ConfigError(f"{at}: {exc}") from None
        else:
            raise ConfigError(f"{at}: not a property the fake reads from x-sbmgmt (those: "
                              f"{', '.join(sorted(kept))}, MaxDeliveryCount, "
                              "AuthorizationRules)")
    try:
        found = described(texts, kept)
    except ArgumentError as exc:
        raise ConfigError(f"{where}.x-sbmgmt: {exc}") from None
    return overrides, found if rules is None else {**found, AUTHORIZATION_RULES: rules}


#: ``x-sbmgmt``'s key for a subscription's ``$Default`` rule (the schema's rule names have
#: no ``$``): its ``Properties``, or null for a subscription without rules (docs/topology.md).
_DEFAULT_RULE_KEY = "DefaultRule"


def _with_default_rule(given: Any, rules: list[RuleDescription],
                       where: str) -> list[RuleDescription]:
    """The subscription's rules with ``x-sbmgmt.DefaultRule`` as its ``$Default`` (none when
    null)."""
    if given is None:
        return rules
    at = f"{where}.x-sbmgmt.{_DEFAULT_RULE_KEY}"
    try:
        properties = RuleProperties.model_validate(given)
    except ValidationError as exc:
        raise ConfigError("; ".join(f"{at}: {e['msg']}" for e in exc.errors())) from None
    rule = RuleConfig.model_construct(Name="$Default", Properties=properties)
    return [_checked(_rule(rule, at), at), *rules]


def apply_config(namespace: EntityMaker, source: object, now: float) -> None:
    """Create the entities of the first namespace of a Config.json (``now``: the namespace's
    clock, which dates the authorization rules it keeps)."""
    config = source if isinstance(source, EmulatorConfig) else load_config(source)  # type: ignore[arg-type]
    spec = config.UserConfig.Namespaces[0]
    _check_properties(spec)
    base = "UserConfig.Namespaces[0]"
    for q, queue in enumerate(spec.Queues):
        overrides, kept = _extension(queue.extension, QUEUE_DESCRIBED, f"{base}.Queues[{q}]",
                                     now)
        namespace.add_queue(queue.Name, **{**_entity_kwargs(queue.Properties), **overrides},
                            **_duplicate_kwargs(queue.Properties))
        namespace.describe(queue.Name, kept)
    for t, topic in enumerate(spec.Topics):
        _, kept = _extension(topic.extension, TOPIC_DESCRIBED, f"{base}.Topics[{t}]",
                             now, deliveries=False)
        namespace.add_topic(topic.Name, default_ttl=topic.Properties.DefaultMessageTimeToLive,
                            **_duplicate_kwargs(topic.Properties))
        namespace.describe(topic.Name, kept)
        for s, sub in enumerate(topic.Subscriptions):
            at = f"{base}.Topics[{t}].Subscriptions[{s}]"
            where = f"{at}.Rules"
            rules: list[RuleDescription] | None = [
                _checked(_rule(r, f"{where}[{i}]"), f"{where}[{i}]")
                for i, r in enumerate(sub.Rules)]
            extension = dict(sub.extension)
            if _DEFAULT_RULE_KEY in extension:
                rules = _with_default_rule(extension.pop(_DEFAULT_RULE_KEY), rules or [], at)
            overrides, kept = _extension(extension, SUBSCRIPTION_DESCRIBED, at, now)
            namespace.add_subscription(topic.Name, sub.Name,
                                       rules=rules if _DEFAULT_RULE_KEY in sub.extension
                                       else rules or None,
                                       **{**_entity_kwargs(sub.Properties), **overrides})
            namespace.describe(f"{topic.Name}/Subscriptions/{sub.Name}", kept)
