"""The emulator's Config.json schema, written from its published shape.

The schema is the installer repository's ``ServiceBus-Emulator/Schema/Config-schema.json``
(Azure/azure-service-bus-emulator-installer, JSON Schema draft-07). It is not copied here
(the repository ships no licence file beside it): its rules are written below as a JSON
Schema of our own, rule for rule, each with the published rule it encodes, so that a file
that passes this passes the emulator's. Like the published one it sets no
``additionalProperties``: other keys (sbmgmt's ``x-sbmgmt``) are allowed everywhere.

One difference of form, not of meaning: the published name pattern,
``^[A-Za-z0-9]$|^[A-Za-z0-9][\\w-\\.\\/]*[A-Za-z0-9]$``, has a character class Python's ``re``
refuses (``\\w-\\.`` reads as a range); ``[\\w.\\/-]`` is the same set (word characters,
``.``, ``/``, ``-``), as ECMAScript reads the published one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EMULATOR_SCHEMA"]

_NAME_CHARS = r"[\w.\/-]"
#: "pattern": "^[A-Za-z0-9]$|^[A-Za-z0-9][\\w-\\.\\/]*[A-Za-z0-9]$"
NAME = {"type": "string", "pattern": rf"^[A-Za-z0-9]$|^[A-Za-z0-9]{_NAME_CHARS}*[A-Za-z0-9]$"}
#: the forwarding fields: the same, or "" ("^$|...")
FORWARD = {"type": "string",
           "pattern": rf"^$|^[A-Za-z0-9]$|^[A-Za-z0-9]{_NAME_CHARS}*[A-Za-z0-9]$"}
#: every duration: "^P(?!$)(?:\\d+Y)?(?:\\d+M)?(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+S)?)?$"
DURATION = {"type": "string",
            "pattern": r"^P(?!$)(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?$"}
BOOL = {"type": "boolean"}
#: MaxDeliveryCount: "type": "integer", "minimum": 1, "maximum": 10
DELIVERIES = {"type": "integer", "minimum": 1, "maximum": 10}
TEXT = {"type": "string"}
SQL = {"type": "object", "properties": {"SqlExpression": TEXT}}


def _object(properties: dict[str, Any], required: list[str] | None = None,
            **more: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = required
    return schema


_QUEUE_PROPERTIES = _object({
    "DeadLetteringOnMessageExpiration": BOOL, "DefaultMessageTimeToLive": DURATION,
    "DuplicateDetectionHistoryTimeWindow": DURATION, "ForwardDeadLetteredMessagesTo": FORWARD,
    "ForwardTo": FORWARD, "LockDuration": DURATION, "MaxDeliveryCount": DELIVERIES,
    "RequiresDuplicateDetection": BOOL, "RequiresSession": BOOL})
_TOPIC_PROPERTIES = _object({
    "DefaultMessageTimeToLive": DURATION, "DuplicateDetectionHistoryTimeWindow": DURATION,
    "RequiresDuplicateDetection": BOOL})
_SUBSCRIPTION_PROPERTIES = _object({
    "DeadLetteringOnMessageExpiration": BOOL, "DefaultMessageTimeToLive": DURATION,
    "LockDuration": DURATION, "MaxDeliveryCount": DELIVERIES,
    "ForwardDeadLetteredMessagesTo": FORWARD, "ForwardTo": FORWARD, "RequiresSession": BOOL})
#: CorrelationFilter: "minProperties": 1, its fields strings, its Properties an object with
#: "minProperties": 1
_CORRELATION = _object(
    {**{key: TEXT for key in ("ContentType", "CorrelationId", "Label", "MessageId", "ReplyTo",
                              "ReplyToSessionId", "SessionId", "To")},
     "Properties": {"type": "object", "minProperties": 1}},
    minProperties=1)
#: a rule's Properties: FilterType required, "enum": ["Correlation", "Sql"]; "oneOf": a
#: Correlation rule requires CorrelationFilter, a Sql rule SqlFilter
_RULE_PROPERTIES = _object(
    {"FilterType": {"type": "string", "enum": ["Correlation", "Sql"]},
     "CorrelationFilter": _CORRELATION, "SqlFilter": SQL, "Action": SQL},
    ["FilterType"],
    oneOf=[_object({"FilterType": {"enum": ["Correlation"]},
                    "CorrelationFilter": {"type": "object", "minProperties": 1}},
                   ["CorrelationFilter"]),
           _object({"FilterType": {"enum": ["Sql"]}, "SqlFilter": SQL}, ["SqlFilter"])])
#: Rules: "minItems": 0, "maxItems": 1000; a rule requires Name and Properties
_RULES = {"type": "array", "minItems": 0, "maxItems": 1000,
          "items": _object({"Name": NAME, "Properties": _RULE_PROPERTIES},
                           ["Name", "Properties"])}
#: Subscriptions: "minItems": 1, "maxItems": 50; a subscription requires Name
_SUBSCRIPTIONS = {"type": "array", "minItems": 1, "maxItems": 50,
                  "items": _object({"Name": NAME, "Properties": _SUBSCRIPTION_PROPERTIES,
                                    "Rules": _RULES}, ["Name"])}
#: Queues and Topics: "minItems": 0, "maxItems": 50; a queue requires Name, a topic Name
#: and Subscriptions
_QUEUES = {"type": "array", "minItems": 0, "maxItems": 50,
           "items": _object({"Name": NAME, "Properties": _QUEUE_PROPERTIES}, ["Name"])}
_TOPICS = {"type": "array", "minItems": 0, "maxItems": 50,
           "items": _object({"Name": NAME, "Properties": _TOPIC_PROPERTIES,
                             "Subscriptions": _SUBSCRIPTIONS}, ["Name", "Subscriptions"])}
#: Namespaces: "minItems": 1, "maxItems": 1; Name "enum": ["sbemulatorns"]; Name, Queues and
#: Topics required
_NAMESPACES = {"type": "array", "minItems": 1, "maxItems": 1,
               "items": _object({"Name": {**NAME, "enum": ["sbemulatorns"]},
                                 "Queues": _QUEUES, "Topics": _TOPICS},
                                ["Name", "Queues", "Topics"])}
#: Logging.Type: "enum": ["File", "Console", "File,Console", "Console,File"], required
_LOGGING = _object({"Type": {"type": "string",
                             "enum": ["File", "Console", "File,Console", "Console,File"]}},
                   ["Type"])

EMULATOR_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    **_object({"UserConfig": _object({"Namespaces": _NAMESPACES, "Logging": _LOGGING},
                                     ["Namespaces", "Logging"])}, ["UserConfig"]),
}
