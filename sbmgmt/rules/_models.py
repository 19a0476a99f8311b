"""The rule models: filters, the SQL action, and the rule that holds them (pydantic).

Each model is frozen and refuses unknown fields; :data:`RuleFilter` tells the filters
apart by ``kind`` when they are built from plain values. How they travel is
:mod:`sbmgmt.rules._wire`.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from ..amqp.values import ticks_from_timedelta

__all__ = [
    "CORRELATION_FIELDS",
    "CorrelationFilter",
    "FalseFilter",
    "PropertyValue",
    "RuleDescription",
    "RuleFilter",
    "SqlFilter",
    "SqlRuleAction",
    "TrueFilter",
]

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

#: A value of a correlation filter's ``properties``: what an application property can hold.
PropertyValue = (
    Annotated[bool, Strict()]
    | Annotated[int, Strict()]
    | Annotated[float, Strict()]
    | Annotated[str, Strict()]
    | Annotated[uuid.UUID, Strict()]
    | Annotated[datetime, Strict()]
    | Annotated[timedelta, Strict()]
)


class _RuleModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SqlFilter(_RuleModel):
    """A SQL-like condition over the message's system and application properties.

    ``SqlFilter(expression="color = 'red' AND sys.Label LIKE 'inv%'")``: the service's SQL filter
    syntax (docs/sql-filters.md). A frozen pydantic model: an unknown field or a bad value raises
    pydantic's ``ValidationError`` (a ``ValueError``).

    Attributes:
        expression: The condition (not empty).
        kind: ``"sql"``, which tells the filters apart.
    """

    kind: Literal["sql"] = "sql"
    expression: str = Field(min_length=1)


class CorrelationFilter(_RuleModel):
    """Equality on message properties; every field that is set must match.

    ``CorrelationFilter(subject="invoice", properties={"region": "eu"})``. ``subject`` is the
    message's subject, called ``label`` on the wire. At least one field (or one entry of
    ``properties``) must be set. A frozen pydantic model: an unknown field or a bad value raises
    pydantic's ``ValidationError`` (a ``ValueError``).

    Attributes:
        correlation_id: The message's correlation-id.
        message_id: Its message-id.
        to: Its to.
        reply_to: Its reply-to.
        subject: Its subject (``label`` on the wire).
        session_id: Its session id (group-id).
        reply_to_session_id: Its reply-to-group-id.
        content_type: Its content-type.
        properties: Application properties that must be equal: bool, int (64-bit), float, str,
            ``uuid.UUID``, ``datetime`` or ``timedelta`` values (a duration: a .NET
            ``TimeSpan``, within about 10,675,199 days either way).
        kind: ``"correlation"``.
    """

    kind: Literal["correlation"] = "correlation"
    correlation_id: str | None = None
    message_id: str | None = None
    to: str | None = None
    reply_to: str | None = None
    subject: str | None = None
    session_id: str | None = None
    reply_to_session_id: str | None = None
    content_type: str | None = None
    properties: dict[str, PropertyValue] = Field(default_factory=dict)

    @field_validator("properties")
    @classmethod
    def _numbers_fit_a_long(cls, properties: dict[str, PropertyValue]) -> dict[str, PropertyValue]:
        for key, value in properties.items():
            if isinstance(value, int) and not _LONG_MIN <= value <= _LONG_MAX:
                raise ValueError(f"property {key!r}: integers must fit an AMQP long (64 bits)")
            # A duration travels as a TimeSpan's 100 ns ticks, a long (sbmgmt.amqp.values).
            if (isinstance(value, timedelta)
                    and not _LONG_MIN <= ticks_from_timedelta(value) <= _LONG_MAX):
                raise ValueError(f"property {key!r}: durations must fit a .NET TimeSpan "
                                 "(about 10,675,199 days either way)")
        return properties

    @model_validator(mode="after")
    def _at_least_one_field(self) -> CorrelationFilter:
        if not self.properties and all(
            getattr(self, attribute) is None for attribute, _ in CORRELATION_FIELDS
        ):
            raise ValueError(
                "CorrelationFilter needs at least one field or property to match on"
            )
        return self


class TrueFilter(_RuleModel):
    """Takes every message (the SQL filter ``1=1``; a subscription's ``$Default`` rule).

    Attributes:
        kind: ``"true"``.
    """

    kind: Literal["true"] = "true"


class FalseFilter(_RuleModel):
    """Takes no message (the SQL filter ``1=0``).

    Attributes:
        kind: ``"false"``.
    """

    kind: Literal["false"] = "false"


#: Any rule filter; ``kind`` tells them apart when built from plain values.
RuleFilter = Annotated[
    SqlFilter | CorrelationFilter | TrueFilter | FalseFilter, Field(discriminator="kind")
]


class SqlRuleAction(_RuleModel):
    """A SQL-like action (``SET``, ``REMOVE``) applied to the messages the filter takes.

    ``SqlRuleAction(expression="SET priority = 'high'")``. A frozen pydantic model: an unknown
    field or a bad value raises pydantic's ``ValidationError`` (a ``ValueError``).

    Attributes:
        expression: The action (not empty).
    """

    expression: str = Field(min_length=1)


class RuleDescription(_RuleModel):
    """A rule of a subscription, as ``list_rules`` (enumerate-rules) reports it.

    A frozen pydantic model: an unknown field or a bad value raises pydantic's
    ``ValidationError`` (a ``ValueError``).

    Attributes:
        name: The rule's name, unique in its subscription.
        filter: Its filter: [SqlFilter][sbmgmt.SqlFilter],
            [CorrelationFilter][sbmgmt.CorrelationFilter], [TrueFilter][sbmgmt.TrueFilter] or
            [FalseFilter][sbmgmt.FalseFilter].
        action: Its [SqlRuleAction][sbmgmt.SqlRuleAction], if any.
        created_at: When the service created it (UTC), as reported.
    """

    name: str = Field(min_length=1)
    filter: RuleFilter
    action: SqlRuleAction | None = None
    created_at: datetime | None = None


# CorrelationFilter attribute -> wire name, in the order of the described list.
CORRELATION_FIELDS = (
    ("correlation_id", "correlation-id"),
    ("message_id", "message-id"),
    ("to", "to"),
    ("reply_to", "reply-to"),
    ("subject", "label"),
    ("session_id", "session-id"),
    ("reply_to_session_id", "reply-to-session-id"),
    ("content_type", "content-type"),
)
