"""Rules in the administration API's XML: ``RuleDescription`` with its ``Filter`` and
``Action`` (typed by ``i:type``) to and from :class:`sbmgmt.rules.RuleDescription`.

What the service writes for each filter (and the SDKs read): a true or false filter as its
SQL (``1=1`` / ``1=0``) with compatibility level 20, a SQL filter or action likewise, a
correlation filter as its set fields then ``Properties``, a list of
``KeyValueOfstringanyType`` whose ``Value`` carries ``i:type="d6p1:<xsd type>"`` (SQL
parameters the same way, in ``Parameters``).

A rule with SQL parameters is stored bound (:mod:`._sql_parameters`) and reported as sent:
:func:`parse_rule` returns the subscription's record of the rule
(:class:`fakes._entity_rules.StoredRule`), which keeps the parameterised filter or action
as sent, and :func:`rule_xml` writes that part back as the service would.
"""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from typing import Any

from sbmgmt.amqp.values import ticks_from_timedelta, timedelta_from_ticks
from sbmgmt.rules import (
    SQL_COMPATIBILITY_LEVEL,
    CorrelationFilter,
    FalseFilter,
    PropertyValue,
    RuleDescription,
    RuleFilter,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)

from .._entity_rules import SentSql, StoredRule
from .._errors import ArgumentError
from ._durations import duration_ticks, ticks_duration
from ._sql_parameters import bind_parameters
from ._xml import SB_NS, XSD_NS, attribute, element, timestamp, xsi_type

__all__ = ["parse_rule", "rule_xml"]

#: A correlation filter's fields, in the order of the service's ``CorrelationFilter``.
_CORRELATION = (("CorrelationId", "correlation_id"), ("MessageId", "message_id"), ("To", "to"),
                ("ReplyTo", "reply_to"), ("Label", "subject"), ("SessionId", "session_id"),
                ("ReplyToSessionId", "reply_to_session_id"), ("ContentType", "content_type"))
_SERIALIZATION_NS = "http://schemas.microsoft.com/2003/10/Serialization/"
_INT32 = range(-(2**31), 2**31)


def _sql(expression: str) -> str:
    return (f"{element('SqlExpression', expression)}"
            f"{element('CompatibilityLevel', str(SQL_COMPATIBILITY_LEVEL))}")


def _typed(value: PropertyValue) -> tuple[str, str, str]:
    """(xsd type, its namespace, the text) of a property value, as .NET's DataContract
    serializer writes an ``object``."""
    if isinstance(value, bool):
        return "boolean", XSD_NS, "true" if value else "false"
    if isinstance(value, int):
        return ("int" if value in _INT32 else "long"), XSD_NS, str(value)
    if isinstance(value, float):
        return "double", XSD_NS, repr(value)
    if isinstance(value, uuid.UUID):
        return "guid", _SERIALIZATION_NS, str(value)
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return "dateTime", XSD_NS, timestamp(moment.timestamp())
    if isinstance(value, timedelta):  # a TimeSpan: XmlConvert's xs:duration ("P1DT2H3M")
        return "duration", XSD_NS, ticks_duration(ticks_from_timedelta(value))
    return "string", XSD_NS, value


def _key_values(tag: str, values: dict[str, PropertyValue]) -> str:
    pairs = []
    for key, value in values.items():
        kind, namespace, text = _typed(value)
        typed = attribute("i:type", f"d6p1:{kind}") + attribute("xmlns:d6p1", namespace)
        pairs.append(f"<KeyValueOfstringanyType>{element('Key', key)}"
                     f"{element('Value', text, typed)}</KeyValueOfstringanyType>")
    return f"<{tag}>{''.join(pairs)}</{tag}>"


def _filter_xml(rule_filter: RuleFilter) -> str:
    if isinstance(rule_filter, TrueFilter):
        kind, body = "TrueFilter", _sql("1=1")
    elif isinstance(rule_filter, FalseFilter):
        kind, body = "FalseFilter", _sql("1=0")
    elif isinstance(rule_filter, SqlFilter):
        kind, body = "SqlFilter", _sql(rule_filter.expression)
    else:
        kind = "CorrelationFilter"
        body = "".join(element(name, getattr(rule_filter, field)) for name, field in _CORRELATION)
        body += _key_values("Properties", rule_filter.properties)
    return f"<Filter{attribute('i:type', kind)}>{body}</Filter>"


def _action_xml(action: SqlRuleAction | None) -> str:
    if action is None:
        return f"<Action{attribute('i:type', 'EmptyRuleAction')}/>"
    return f"<Action{attribute('i:type', 'SqlRuleAction')}>{_sql(action.expression)}</Action>"


def _parameterised(kind: str, tag: str, sent: SentSql) -> str:
    return (f"<{tag}{attribute('i:type', kind)}>{_sql(sent.expression)}"
            f"{_key_values('Parameters', sent.parameters)}</{tag}>")


def rule_xml(stored: StoredRule, created_at: float) -> str:
    """A ``RuleDescription`` as the service writes it (``created_at`` when the rule has no
    creation time of its own; a SQL filter or action that came with parameters as sent)."""
    rule = stored.rule
    created = created_at if rule.created_at is None else rule.created_at.timestamp()
    body = (_filter_xml(rule.filter) if stored.sent_filter is None
            else _parameterised("SqlFilter", "Filter", stored.sent_filter))
    body += (_action_xml(rule.action) if stored.sent_action is None
             else _parameterised("SqlRuleAction", "Action", stored.sent_action))
    return (f"<RuleDescription{attribute('xmlns', SB_NS)}"
            f"{attribute('xmlns:i', 'http://www.w3.org/2001/XMLSchema-instance')}>"
            f"{body}{element('CreatedAt', timestamp(created))}"
            f"{element('Name', rule.name)}</RuleDescription>")


def _child(node: ET.Element, name: str) -> ET.Element | None:
    return node.find(f"{{{SB_NS}}}{name}")


def _text(node: ET.Element, name: str) -> str | None:
    found = _child(node, name)
    return None if found is None else (found.text or "")


def _value(node: ET.Element) -> PropertyValue:
    kind, text = xsi_type(node), node.text or ""
    try:
        if kind in ("int", "long", "short", "byte"):
            return int(text)
        if kind in ("double", "float", "decimal"):
            return float(text)
        if kind == "boolean":
            return text.strip().lower() == "true"
        if kind == "guid":
            return uuid.UUID(text)
        if kind == "dateTime":
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        if kind == "duration":
            return timedelta_from_ticks(duration_ticks(text))
    except ValueError:
        raise ArgumentError(f"The property value {text!r} is not a valid {kind}.") from None
    if kind == "string":
        return text
    raise ArgumentError(f"A property value of type {kind!r} is not supported.")


def _pairs(node: ET.Element, tag: str) -> dict[str, PropertyValue]:
    """The ``KeyValueOfstringanyType`` pairs of ``node``'s ``tag`` child."""
    found = _child(node, tag)
    if found is None:
        return {}
    return {_text(pair, "Key") or "": _value(value)
            for pair in found if (value := _child(pair, "Value")) is not None}


def _correlation(node: ET.Element) -> CorrelationFilter:
    fields: dict[str, Any] = {field: _text(node, name) for name, field in _CORRELATION}
    fields["properties"] = _pairs(node, "Properties")
    return CorrelationFilter(**fields)


def _sql_part(node: ET.Element) -> SentSql:
    return SentSql((_text(node, "SqlExpression") or "").strip(), _pairs(node, "Parameters"))


def _filter(node: ET.Element | None) -> tuple[RuleFilter, SentSql | None]:
    if node is None:
        return TrueFilter(), None
    kind = xsi_type(node)
    if kind == "CorrelationFilter":
        return _correlation(node), None
    if kind == "TrueFilter":
        return TrueFilter(), None
    if kind == "FalseFilter":
        return FalseFilter(), None
    if kind == "SqlFilter":
        sent = _sql_part(node)
        return (SqlFilter(expression=bind_parameters(sent.expression, sent.parameters)),
                sent if sent.parameters else None)
    raise ArgumentError(f"The filter type {kind!r} is not one of SqlFilter, CorrelationFilter, "
                        "TrueFilter, FalseFilter.")


def _action(node: ET.Element | None) -> tuple[SqlRuleAction | None, SentSql | None]:
    kind = "" if node is None else xsi_type(node)
    if node is None or kind in ("", "EmptyRuleAction"):
        return None, None
    if kind != "SqlRuleAction":
        raise ArgumentError(f"The action type {kind!r} is not one of SqlRuleAction, "
                            "EmptyRuleAction.")
    sent = _sql_part(node)
    return (SqlRuleAction(expression=bind_parameters(sent.expression, sent.parameters)),
            sent if sent.parameters else None)


def parse_rule(node: ET.Element, name: str) -> StoredRule:
    """A rule's record from its ``RuleDescription`` (or a subscription's
    ``DefaultRuleDescription``); ``name`` when the XML names none. 400 for what the fake
    cannot hold."""
    try:
        rule_filter, sent_filter = _filter(_child(node, "Filter"))
        action, sent_action = _action(_child(node, "Action"))
        rule = RuleDescription(name=_text(node, "Name") or name, filter=rule_filter,
                               action=action)
    except ValueError as exc:
        raise ArgumentError(f"The rule is not valid: {exc}") from None
    return StoredRule(rule, sent_filter, sent_action)
