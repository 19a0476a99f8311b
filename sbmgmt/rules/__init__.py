"""Subscription rules: the filter and action models, and their two wire formats.

A rule is a name, a filter that decides which messages a subscription takes, an
optional SQL action that edits the properties of the messages it takes, and (when
the service reports it) its creation time.

The models (:mod:`sbmgmt.rules._models`) are :class:`RuleDescription`, its filters
(:data:`RuleFilter`: :class:`SqlFilter`, :class:`CorrelationFilter`,
:class:`TrueFilter`, :class:`FalseFilter`) and :class:`SqlRuleAction`. The rule
operations carry them in two formats, each with one encoder and one decoder
(:mod:`sbmgmt.rules._wire`): add-rule's plain map (:func:`rule_description_map`,
:func:`rule_fields_from_map`) and enumerate-rules' described lists
(:func:`described_rule`, :func:`rule_fields_from_described`), whose descriptor codes
are the ``*_CODE`` constants.
"""

from ._models import (
    CorrelationFilter,
    FalseFilter,
    PropertyValue,
    RuleDescription,
    RuleFilter,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)
from ._wire import (
    CORRELATION_FILTER_CODE,
    EMPTY_RULE_ACTION_CODE,
    FALSE_FILTER_CODE,
    RULE_DESCRIPTION_CODE,
    SQL_COMPATIBILITY_LEVEL,
    SQL_FILTER_CODE,
    SQL_RULE_ACTION_CODE,
    TRUE_FILTER_CODE,
    described_rule,
    rule_description_map,
    rule_fields_from_described,
    rule_fields_from_map,
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
    "CorrelationFilter",
    "FalseFilter",
    "PropertyValue",
    "RuleDescription",
    "RuleFilter",
    "SqlFilter",
    "SqlRuleAction",
    "TrueFilter",
    "described_rule",
    "rule_description_map",
    "rule_fields_from_described",
    "rule_fields_from_map",
]
