"""Rules in the administration API's XML: ``RuleDescription`` with its ``Filter`` and
``Action`` (typed by ``i:type``) to and from :class:`sbmgmt.rules.RuleDescription`.

What the service writes for each filter (and the SDKs read): a true or false filter as its
SQL (``1=1`` / ``1=0``) with compatibility level 20, a SQL filter or action likewise, a
correlation filter as its set fields then ``Properties``, a list of
``KeyValueOfstringanyType`` whose ``Value`` carries ``i:type="d6p1:<xsd type>"``. SQL
parameters (``@name`` values) are refused: the fake's SQL engine has none.
"""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from typing import Any

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

from .._errors import ArgumentError
from ._xml import SB_NS, XSD_NS, attribute, element, local_name, timestamp, xsi_type

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
    return "string", XSD_NS, value


def _properties(values: dict[str, PropertyValue]) -> str:
    pairs = []
    for key, value in values.items():
        kind, namespace, text = _typed(value)
        typed = attribute("i:type", f"d6p1:{kind}") + attribute("xmlns:d6p1", namespace)
        pairs.append(f"<KeyValueOfstringanyType>{element('Key', key)}"
                     f"{element('Value', text, typed)}</KeyValueOfstringanyType>")
    return f"<Properties>{''.join(pairs)}</Properties>"


def _filter_xml(rule_filter: RuleFilter) -> str:
    if isinstance(rule_filter, TrueFilter):
        kind, body = "TrueFilter", _sql("1=1")
    elif isinstance(rule_filter, FalseFilter):
        kind, body = "FalseFilter", _sql("1=0")
    elif isinstance(rule_filter, SqlFilter):
        kind, body = "SqlFilter", _sql(rule_filter.expression)
    else:
        kind = "CorrelationFilter"
        body = "".join(element(name, getattr(rule_filter, field))
                       for name, field in _CORRELATION) + _properties(rule_filter.properties)
    return f"<Filter{attribute('i:type', kind)}>{body}</Filter>"


def rule_xml(rule: RuleDescription, created_at: float) -> str:
    """A ``RuleDescription`` as the service writes it (``created_at`` when the rule has no
    creation time of its own)."""
    if rule.action is None:
        action = f"<Action{attribute('i:type', 'EmptyRuleAction')}/>"
    else:
        action = (f"<Action{attribute('i:type', 'SqlRuleAction')}>"
                  f"{_sql(rule.action.expression)}</Action>")
    created = created_at if rule.created_at is None else rule.created_at.timestamp()
    return (f"<RuleDescription{attribute('xmlns', SB_NS)}"
            f"{attribute('xmlns:i', 'http://www.w3.org/2001/XMLSchema-instance')}>"
            f"{_filter_xml(rule.filter)}{action}{element('CreatedAt', timestamp(created))}"
            f"{element('Name', rule.name)}</RuleDescription>")


def _child(node: ET.Element, name: str) -> ET.Element | None:
    return node.find(f"{{{SB_NS}}}{name}")


def _text(node: ET.Element, name: str) -> str | None:
    found = _child(node, name)
    return None if found is None else (found.text or "")


def _no_parameters(node: ET.Element, where: str) -> None:
    parameters = _child(node, "Parameters")
    if parameters is not None and len(parameters):
        raise ArgumentError(f"The {where} has SQL parameters, which the fake namespace does "
                            "not support; write the values into the expression.")


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
    except ValueError:
        raise ArgumentError(f"The property value {text!r} is not a valid {kind}.") from None
    if kind == "string":
        return text
    raise ArgumentError(f"A property value of type {kind!r} is not supported.")


def _correlation(node: ET.Element) -> CorrelationFilter:
    fields: dict[str, Any] = {field: _text(node, name) for name, field in _CORRELATION}
    properties = _child(node, "Properties")
    if properties is not None:
        fields["properties"] = {
            _text(pair, "Key") or "": _value(value)
            for pair in properties if (value := _child(pair, "Value")) is not None}
    return CorrelationFilter(**fields)


def _filter(node: ET.Element | None) -> RuleFilter:
    if node is None:
        return TrueFilter()
    kind = xsi_type(node)
    if kind == "CorrelationFilter":
        return _correlation(node)
    _no_parameters(node, "filter")
    expression = (_text(node, "SqlExpression") or "").strip()
    if kind == "TrueFilter":
        return TrueFilter()
    if kind == "FalseFilter":
        return FalseFilter()
    if kind == "SqlFilter":
        return SqlFilter(expression=expression)
    raise ArgumentError(f"The filter type {kind!r} is not one of SqlFilter, CorrelationFilter, "
                        "TrueFilter, FalseFilter.")


def parse_rule(node: ET.Element, name: str) -> RuleDescription:
    """A rule from its ``RuleDescription`` (or a subscription's ``DefaultRuleDescription``);
    ``name`` when the XML names none. 400 for what the fake cannot hold."""
    action_node = _child(node, "Action")
    action = None
    if action_node is not None and xsi_type(action_node) == "SqlRuleAction":
        _no_parameters(action_node, "action")
        action = SqlRuleAction(expression=(_text(action_node, "SqlExpression") or "").strip())
    elif action_node is not None and xsi_type(action_node) not in ("", "EmptyRuleAction"):
        raise ArgumentError(f"The action type {xsi_type(action_node)!r} is not one of "
                            "SqlRuleAction, EmptyRuleAction.")
    try:
        return RuleDescription(name=_text(node, "Name") or name, filter=_filter(
            _child(node, "Filter")), action=action)
    except ValueError as exc:
        raise ArgumentError(f"The rule is not valid: {exc}") from None


def is_rule(node: ET.Element) -> bool:
    """Whether ``node`` is a rule description (a request's content or a default rule)."""
    return local_name(node) in ("RuleDescription", "DefaultRuleDescription")
