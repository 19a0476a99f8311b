"""The rules' two wire formats: add-rule's plain maps, enumerate-rules' described lists.

The rule operations carry rules in two different formats, and each has one
encoder and one decoder here:

- ``com.microsoft:add-rule`` sends a **plain map** (:func:`rule_description_map`,
  read back by :func:`rule_fields_from_map`): exactly one of ``sql-filter`` or
  ``correlation-filter``, and ``sql-rule-action`` when there is an action. The
  map format has no true or false filter: :class:`TrueFilter` and
  :class:`FalseFilter` travel as the SQL filters ``1=1`` and ``1=0`` and therefore
  come back from the map as ``SqlFilter("1=1")`` / ``SqlFilter("1=0")``.
- ``com.microsoft:enumerate-rules`` answers with **described lists**
  (:func:`described_rule`, read back by :func:`rule_fields_from_described`):
  rule-description ``0x0000013700000004`` holding ``[filter, action, name,
  created_at]``. The filter descriptor codes are the page's, digit for digit: the
  page (and the .NET and Java SDKs) write them with thirteen hex digits
  (``0x000001370000006`` .. ``0x000001370000009``), which is not the same number as
  the action codes ``0x0000013700000005`` / ``0x0000013700000006``. Decoding also
  accepts the fourteen-digit spelling of the filter codes, the thirteen-digit
  spelling of the action codes, and the symbolic descriptors
  (``com.microsoft:sql-filter:list`` and so on).

In both formats a correlation filter's ``properties`` map holds each value as itself, a
``datetime`` as an AMQP timestamp (milliseconds) and a ``timedelta`` as the
``com.microsoft:timespan`` described long of its 100 ns ticks: the service's published
.NET-to-AMQP mapping of a ``TimeSpan`` (:data:`~sbmgmt.amqp.values.TIMESPAN_DESCRIPTOR`).
That page gives the mapping for message properties; no public SDK test sends a duration
through add-rule or reads one from enumerate-rules, so that the service uses the same
mapping on the management link is the page applied, not something shown.

The decoders check the structure of what they read (a malformed value is a
:class:`~sbmgmt.errors.ProtocolError`) and return the model's field values as a
plain dict; the operation modules validate that dict into their models in one
step, so a wrong value is reported once, with the operation's name.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, NoReturn

from proton import Described, int32, timestamp, ulong

from ..amqp.values import (
    TIMESPAN_DESCRIPTOR,
    Fields,
    datetime_from_ms,
    timedelta_from_ticks,
    timespan_value,
    timestamp_value,
)
from ..errors import ProtocolError
from ._models import (
    CORRELATION_FIELDS,
    CorrelationFilter,
    FalseFilter,
    PropertyValue,
    RuleDescription,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)

__all__ = [
    "CORRELATION_FILTER_CODE",
    "EMPTY_RULE_ACTION_CODE",
    "FALSE_FILTER_CODE",
    "RULE_DESCRIPTION_CODE",
    "SQL_COMPATIBILITY_LEVEL",
    "SQL_FILTER_CODE",
    "SQL_RULE_ACTION_CODE",
    "TRUE_FILTER_CODE",
    "described_rule",
    "rule_description_map",
    "rule_fields_from_described",
    "rule_fields_from_map",
]

#: com.microsoft:rule-description:list
RULE_DESCRIPTION_CODE = 0x0000013700000004
#: com.microsoft:sql-filter:list (the page's thirteen hex digits, as the service uses them)
SQL_FILTER_CODE = 0x000001370000006
#: com.microsoft:true-filter:list
TRUE_FILTER_CODE = 0x000001370000007
#: com.microsoft:false-filter:list
FALSE_FILTER_CODE = 0x000001370000008
#: com.microsoft:correlation-filter:list
CORRELATION_FILTER_CODE = 0x000001370000009
#: com.microsoft:empty-rule-action:list
EMPTY_RULE_ACTION_CODE = 0x0000013700000005
#: com.microsoft:sql-rule-action:list
SQL_RULE_ACTION_CODE = 0x0000013700000006
#: "always 20": the syntax version of SQL filters and actions.
SQL_COMPATIBILITY_LEVEL = 20

_TRUE_EXPRESSION = "1=1"
_FALSE_EXPRESSION = "1=0"
_PROPERTIES_INDEX = len(CORRELATION_FIELDS)

_RULE_DESCRIPTORS: Mapping[int | str, str] = {
    RULE_DESCRIPTION_CODE: "rule",
    "com.microsoft:rule-description:list": "rule",
}
_FILTER_DESCRIPTORS: Mapping[int | str, str] = {
    SQL_FILTER_CODE: "sql",
    TRUE_FILTER_CODE: "true",
    FALSE_FILTER_CODE: "false",
    CORRELATION_FILTER_CODE: "correlation",
    0x0000013700000006: "sql",
    0x0000013700000007: "true",
    0x0000013700000008: "false",
    0x0000013700000009: "correlation",
    "com.microsoft:sql-filter:list": "sql",
    "com.microsoft:true-filter:list": "true",
    "com.microsoft:false-filter:list": "false",
    "com.microsoft:correlation-filter:list": "correlation",
}
_ACTION_DESCRIPTORS: Mapping[int | str, str] = {
    EMPTY_RULE_ACTION_CODE: "empty",
    SQL_RULE_ACTION_CODE: "sql",
    0x000001370000005: "empty",
    0x000001370000006: "sql",
    "com.microsoft:empty-rule-action:list": "empty",
    "com.microsoft:sql-rule-action:list": "sql",
}


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"{where}: {problem}", operation=where)


def _sql_expression(rule_filter: SqlFilter | TrueFilter | FalseFilter) -> str:
    if isinstance(rule_filter, TrueFilter):
        return _TRUE_EXPRESSION
    if isinstance(rule_filter, FalseFilter):
        return _FALSE_EXPRESSION
    return rule_filter.expression


def _property_value_out(value: PropertyValue) -> Any:
    if isinstance(value, datetime):
        return timestamp_value(value)
    if isinstance(value, timedelta):
        return timespan_value(value)
    return value


def _properties_out(properties: Mapping[str, PropertyValue]) -> dict[str, Any]:
    return {key: _property_value_out(value) for key, value in properties.items()}


def _property_value_in(value: Any, where: str) -> PropertyValue:
    if isinstance(value, bool):
        return value
    if isinstance(value, timestamp):
        return _datetime_in(value, where)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, Described) and value.descriptor == TIMESPAN_DESCRIPTOR:
        return _timedelta_in(value.value, where)
    _fail(where, "a property value must be a simple value or a com.microsoft:timespan, got "
          f"{_described_name(value)}")


def _described_name(value: Any) -> str:
    if isinstance(value, Described):
        return f"a value described by {value.descriptor!r}"
    return type(value).__name__


def _timedelta_in(value: Any, where: str) -> timedelta:
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, f"a com.microsoft:timespan must hold a long, got {type(value).__name__}")
    return timedelta_from_ticks(int(value))


def _properties_in(value: Any, where: str) -> dict[str, PropertyValue]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(where, f"must be a map, got {type(value).__name__}")
    properties: dict[str, PropertyValue] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            _fail(where, f"property names must be strings, got {type(key).__name__}")
        properties[str(key)] = _property_value_in(item, f"{where}[{key!r}]")
    return properties


def _datetime_in(value: Any, where: str) -> datetime:
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, f"must be a timestamp, got {type(value).__name__}")
    try:
        return datetime_from_ms(int(value))
    except (OverflowError, ValueError):
        _fail(where, f"timestamp {int(value)} is out of range")


# --- add-rule: plain maps -------------------------------------------------------------


def _correlation_map(rule_filter: CorrelationFilter) -> dict[str, Any]:
    body: dict[str, Any] = {
        wire: getattr(rule_filter, attribute)
        for attribute, wire in CORRELATION_FIELDS
        if getattr(rule_filter, attribute) is not None
    }
    if rule_filter.properties:
        body["properties"] = _properties_out(rule_filter.properties)
    return body


def rule_description_map(
    rule_filter: SqlFilter | CorrelationFilter | TrueFilter | FalseFilter,
    action: SqlRuleAction | None,
) -> dict[str, Any]:
    """The add-rule ``rule-description`` map for a filter and an optional action."""
    description: dict[str, Any] = {}
    if isinstance(rule_filter, CorrelationFilter):
        description["correlation-filter"] = _correlation_map(rule_filter)
    else:
        description["sql-filter"] = {"expression": _sql_expression(rule_filter)}
    # "sql-rule-action | map | Yes": always sent, null when there is no action (as the
    # .NET SDK does).
    description["sql-rule-action"] = (
        None if action is None else {"expression": action.expression}
    )
    return description


def _correlation_fields_from_map(fields: Fields) -> dict[str, Any]:
    values: dict[str, Any] = {
        attribute: fields.optional_str(wire) for attribute, wire in CORRELATION_FIELDS
    }
    values["kind"] = "correlation"
    values["properties"] = _properties_in(fields.raw("properties"), f"{fields.where}.properties")
    return values


def rule_fields_from_map(fields: Fields) -> dict[str, Any]:
    """Read an add-rule ``rule-description`` map: ``{"filter": ..., "action": ...}``.

    The values are plain dicts for :class:`RuleFilter` and :class:`SqlRuleAction`
    (``action`` is ``None`` without an action). Keys other than the filter and
    action (the .NET SDK also sends ``rule-name``) are ignored.
    """
    has_sql, has_correlation = fields.has("sql-filter"), fields.has("correlation-filter")
    if has_sql == has_correlation:
        _fail(fields.where, "exactly one of 'sql-filter' and 'correlation-filter' must be set")
    rule_filter = (
        {"kind": "sql", "expression": fields.map("sql-filter").str("expression")}
        if has_sql
        else _correlation_fields_from_map(fields.map("correlation-filter"))
    )
    action = (
        {"expression": fields.map("sql-rule-action").str("expression")}
        if fields.has("sql-rule-action")
        else None
    )
    return {"filter": rule_filter, "action": action}


# --- enumerate-rules: described lists -------------------------------------------------


def _described_filter(rule_filter: SqlFilter | CorrelationFilter | TrueFilter | FalseFilter
                      ) -> Described:
    if isinstance(rule_filter, SqlFilter):
        return Described(
            ulong(SQL_FILTER_CODE), [rule_filter.expression, int32(SQL_COMPATIBILITY_LEVEL)]
        )
    if isinstance(rule_filter, TrueFilter):
        return Described(ulong(TRUE_FILTER_CODE), [])
    if isinstance(rule_filter, FalseFilter):
        return Described(ulong(FALSE_FILTER_CODE), [])
    return Described(
        ulong(CORRELATION_FILTER_CODE),
        [getattr(rule_filter, attribute) for attribute, _ in CORRELATION_FIELDS]
        + [_properties_out(rule_filter.properties)],
    )


def _described_action(action: SqlRuleAction | None) -> Described:
    if action is None:
        return Described(ulong(EMPTY_RULE_ACTION_CODE), [])
    return Described(
        ulong(SQL_RULE_ACTION_CODE), [action.expression, int32(SQL_COMPATIBILITY_LEVEL)]
    )


def described_rule(rule: RuleDescription) -> Described:
    """The enumerate-rules ``rule-description`` described list of a rule."""
    created_at = None if rule.created_at is None else timestamp_value(rule.created_at)
    return Described(
        ulong(RULE_DESCRIPTION_CODE),
        [_described_filter(rule.filter), _described_action(rule.action), rule.name, created_at],
    )


def _unpack(value: Any, kinds: Mapping[int | str, str], what: str, where: str
            ) -> tuple[str, list[Any]]:
    if not isinstance(value, Described):
        _fail(where, f"{what} must be a described list, got {type(value).__name__}")
    descriptor = value.descriptor
    kind = (
        kinds.get(descriptor)
        if isinstance(descriptor, (int, str)) and not isinstance(descriptor, bool)
        else None
    )
    if kind is None:
        _fail(where, f"unknown {what} descriptor {descriptor!r}")
    if not isinstance(value.value, list):
        _fail(where, f"{what} must be a described list, got {type(value.value).__name__}")
    return kind, value.value


def _item(items: list[Any], index: int) -> Any:
    return items[index] if index < len(items) else None


def _optional_string(items: list[Any], index: int, where: str) -> str | None:
    value = _item(items, index)
    if value is None:
        return None
    if not isinstance(value, str):
        _fail(f"{where}[{index}]", f"must be a string, got {type(value).__name__}")
    return str(value)


def _string(items: list[Any], index: int, where: str) -> str:
    value = _optional_string(items, index, where)
    if value is None:
        _fail(f"{where}[{index}]", "must be a string, got nothing")
    return value


def _filter_fields_from_described(value: Any, where: str) -> dict[str, Any]:
    kind, items = _unpack(value, _FILTER_DESCRIPTORS, "filter", where)
    if kind == "sql":
        return {"kind": kind, "expression": _string(items, 0, where)}
    if kind != "correlation":
        return {"kind": kind}
    values: dict[str, Any] = {
        attribute: _optional_string(items, index, where)
        for index, (attribute, _) in enumerate(CORRELATION_FIELDS)
    }
    values["kind"] = kind
    values["properties"] = _properties_in(
        _item(items, _PROPERTIES_INDEX), f"{where}[{_PROPERTIES_INDEX}]"
    )
    return values


def _action_fields_from_described(value: Any, where: str) -> dict[str, Any] | None:
    kind, items = _unpack(value, _ACTION_DESCRIPTORS, "rule action", where)
    return {"expression": _string(items, 0, where)} if kind == "sql" else None


def rule_fields_from_described(value: Any, where: str) -> dict[str, Any]:
    """Read an enumerate-rules ``rule-description`` described list.

    Returns the field values of a :class:`RuleDescription` (``name``, ``filter``,
    ``action``, ``created_at``) with the filter and action as plain dicts.
    """
    _, items = _unpack(value, _RULE_DESCRIPTORS, "rule-description", where)
    created_at = _item(items, 3)
    return {
        "filter": _filter_fields_from_described(_item(items, 0), f"{where}[0]"),
        "action": _action_fields_from_described(_item(items, 1), f"{where}[1]"),
        "name": _string(items, 2, where),
        "created_at": None if created_at is None else _datetime_in(created_at, f"{where}[3]"),
    }
