"""The official Service Bus emulator's ``Config.json``, validated with pydantic.

Unknown keys and invalid values raise :class:`~fakes.ConfigError` whose message names
the JSON path, e.g. ``UserConfig.Namespaces[0].Queues[2].Properties.LockDuration: ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sbmgmt.rules import CorrelationFilter, RuleDescription, SqlFilter, SqlRuleAction

from ._errors import ConfigError
from .sql import SqlSyntaxError, parse_action, parse_filter

if TYPE_CHECKING:
    from ._namespace import FakeNamespace

__all__ = ["EmulatorConfig", "apply_config", "load_config", "parse_duration"]

_DURATION = re.compile(
    r"^P(?:(?P<days>\d+(?:\.\d+)?)D)?(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?"
    r"(?:(?P<minutes>\d+(?:\.\d+)?)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$")


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration (``PT1M``, ``P14D``, ``PT30.5S``) as a timedelta."""
    match = _DURATION.match(text)
    if not match or text in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"{text!r} is not an ISO 8601 duration such as 'PT1M'")
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return timedelta(**parts)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Duration(_Model):
    @field_validator("*", mode="before")
    @classmethod
    def _durations(cls, value: Any, info: Any) -> Any:
        if info.field_name in _DURATION_FIELDS and isinstance(value, str):
            return parse_duration(value)
        return value


_DURATION_FIELDS = frozenset({
    "LockDuration", "DefaultMessageTimeToLive", "DuplicateDetectionHistoryTimeWindow",
    "AutoDeleteOnIdle"})


class EntityProperties(_Duration):
    """Properties of a queue or subscription."""

    RequiresSession: bool = False
    LockDuration: timedelta = timedelta(minutes=1)
    MaxDeliveryCount: int = Field(default=10, ge=1)
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


class SqlExpression(_Model):
    """A SQL filter or action expression."""

    SqlExpression: str = Field(min_length=1)


class RuleProperties(_Model):
    """A rule's filter and action."""

    FilterType: Literal["Correlation", "Sql"]
    CorrelationFilter: CorrelationFilterConfig | None = None
    SqlFilter: SqlExpression | None = None
    Action: SqlExpression | None = None


class RuleConfig(_Model):
    """A subscription rule."""

    Name: str = Field(min_length=1)
    Properties: RuleProperties


class SubscriptionConfig(_Model):
    """A subscription."""

    Name: str = Field(min_length=1)
    Properties: EntityProperties = EntityProperties()
    Rules: list[RuleConfig] = Field(default_factory=list)


class TopicConfig(_Model):
    """A topic with its subscriptions."""

    Name: str = Field(min_length=1)
    Properties: TopicProperties = TopicProperties()
    Subscriptions: list[SubscriptionConfig] = Field(default_factory=list)


class QueueConfig(_Model):
    """A queue."""

    Name: str = Field(min_length=1)
    Properties: EntityProperties = EntityProperties()


class NamespaceConfig(_Model):
    """One namespace (the fake serves the first)."""

    Name: str = Field(min_length=1)
    Queues: list[QueueConfig] = Field(default_factory=list)
    Topics: list[TopicConfig] = Field(default_factory=list)


class UserConfig(_Model):
    """The ``UserConfig`` object."""

    Namespaces: list[NamespaceConfig] = Field(min_length=1)
    Logging: dict[str, Any] = Field(default_factory=dict)


class EmulatorConfig(_Model):
    """The whole Config.json."""

    UserConfig: UserConfig


def _path(location: tuple[int | str, ...]) -> str:
    out = ""
    for part in location:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_config(source: str | Path | dict[str, Any]) -> EmulatorConfig:
    """Read and validate a Config.json (a path, JSON text, or an already parsed dict)."""
    if isinstance(source, dict):
        data: Any = source
    else:
        text = source.read_text() if isinstance(source, Path) else source
        if isinstance(source, str) and not source.lstrip().startswith("{"):
            text = Path(source).read_text()
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"Config.json is not valid JSON: {exc}") from None
    try:
        return EmulatorConfig.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_path(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise ConfigError("; ".join(problems)) from None


def _rule(rule: RuleConfig) -> RuleDescription:
    props = rule.Properties
    action = None if props.Action is None else SqlRuleAction(expression=props.Action.SqlExpression)
    if props.FilterType == "Sql":
        if props.SqlFilter is None:
            raise ConfigError(f"rule {rule.Name!r}: FilterType Sql needs SqlFilter")
        return RuleDescription(name=rule.Name, action=action,
                               filter=SqlFilter(expression=props.SqlFilter.SqlExpression))
    c = props.CorrelationFilter
    if c is None:
        raise ConfigError(f"rule {rule.Name!r}: FilterType Correlation needs CorrelationFilter")
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
        if not isinstance(props, EntityProperties):
            continue
        for field in ("ForwardTo", "ForwardDeadLetteredMessagesTo"):
            target = getattr(props, field)
            if target is not None and target.lower() not in names:
                raise ConfigError(f"{where}.Properties.{field}: {target!r} is not a queue or "
                                  "topic of this namespace")


def apply_config(namespace: FakeNamespace, source: object) -> None:
    """Create the entities of the first namespace of a Config.json."""
    config = source if isinstance(source, EmulatorConfig) else load_config(source)  # type: ignore[arg-type]
    spec = config.UserConfig.Namespaces[0]
    _check_properties(spec)
    for queue in spec.Queues:
        namespace.add_queue(queue.Name, **_entity_kwargs(queue.Properties),
                            **_duplicate_kwargs(queue.Properties))
    for t, topic in enumerate(spec.Topics):
        namespace.add_topic(topic.Name, default_ttl=topic.Properties.DefaultMessageTimeToLive,
                            **_duplicate_kwargs(topic.Properties))
        for s, sub in enumerate(topic.Subscriptions):
            where = f"UserConfig.Namespaces[0].Topics[{t}].Subscriptions[{s}].Rules"
            rules = [_checked(_rule(r), f"{where}[{i}]") for i, r in enumerate(sub.Rules)] or None
            namespace.add_subscription(topic.Name, sub.Name, rules=rules,
                                       **_entity_kwargs(sub.Properties))
