"""An entity's ``AuthorizationRules``: kept as a create or update sends them and read back.

The service keeps a queue's or topic's shared access rules and returns them in its
description (azure-sdk-for-python's ``test_mgmt_queue_update_success`` sets one and reads it
back). The fake keeps each rule's fields as sent, in the order of the SDK's
``AuthorizationRule`` model (the service's data contract), typed
``SharedAccessAuthorizationRule`` as the service types them, and dated by the fake when the
request leaves its times out; it grants nothing (the namespace's keys are the only ones the
fake checks). What the service does with a rule without keys (it may make some) is not
published: the fake keeps such a rule without keys.

Rules are written back as the XML text :func:`rules_xml` made from the request (every value
escaped), kept in the entity's ``described`` map under ``AuthorizationRules``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .._errors import ArgumentError
from ._xml import attribute, element, local_name, timestamp, xsi_type

__all__ = ["EMPTY", "KEY", "MAX_RULES", "named_rules_xml", "rules_node", "rules_xml"]

#: The ``described`` key the rules are kept under, and what an entity without any reports.
KEY = "AuthorizationRules"
EMPTY = "<AuthorizationRules/>"

_RIGHTS = ("Listen", "Send", "Manage")
#: The simple fields of a rule, in the data contract's order around the rights and times.
_BEFORE = ("ClaimType", "ClaimValue")
_AFTER = ("KeyName", "PrimaryKey", "SecondaryKey")
_TIMES = ("CreatedTime", "ModifiedTime")
#: The most rules an entity may have (the service's quota: "Number of SAS authorization rules
#: per namespace, queue, or topic: 12", service-bus-quotas).
MAX_RULES = 12


def rules_xml(node: ET.Element | None, now: float) -> str | None:
    """The rules of a description's ``AuthorizationRules`` element as the text to write
    back; None when the description has none (or an empty element)."""
    if node is None or len(node) == 0:
        return None
    if len(node) > MAX_RULES:
        raise ArgumentError(f"An entity may have at most {MAX_RULES} authorization rules, "
                            f"not {len(node)}.")
    return f"<{KEY}>" + "".join(_rule(child, now) for child in node) + f"</{KEY}>"


def _rule(node: ET.Element, now: float) -> str:
    if local_name(node) != "AuthorizationRule":
        raise ArgumentError(f"AuthorizationRules holds AuthorizationRule elements, not "
                            f"{local_name(node)[:40]!r}.")
    fields = {local_name(child): (child.text or "").strip() for child in node if len(child) == 0}
    rights = next((child for child in node if local_name(child) == "Rights"), None)
    granted = [] if rights is None else [(child.text or "").strip() for child in rights]
    for right in granted:
        if right not in _RIGHTS:
            raise ArgumentError(f"An authorization rule's rights are {', '.join(_RIGHTS)}, "
                                f"not {right[:40]!r}.")
    if not fields.get("KeyName"):
        raise ArgumentError("An authorization rule needs a KeyName.")
    kind = xsi_type(node) or "SharedAccessAuthorizationRule"
    dated = timestamp(now)
    return "".join((
        f"<AuthorizationRule{attribute('i:type', kind)}>",
        *(element(name, fields.get(name) or None) for name in _BEFORE),
        "<Rights>", *(element("AccessRights", right) for right in granted), "</Rights>",
        *(element(name, fields.get(name) or dated) for name in _TIMES),
        *(element(name, fields.get(name) or None) for name in _AFTER),
        "</AuthorizationRule>"))


def named_rules_xml(rules: object, now: float) -> str | None:
    """Rules given by name and rights (a Config.json's ``x-sbmgmt.AuthorizationRules``:
    ``[{"KeyName": ..., "Rights": [...]}]``, as ``sbmgmt topology export`` writes them,
    without keys) as the text to write back, checked as the administration API checks a
    description's rules."""
    if not isinstance(rules, list):
        raise ArgumentError("AuthorizationRules is a list of {KeyName, Rights} objects.")
    node = ET.Element(KEY)
    for rule in rules:
        if not isinstance(rule, dict) or set(rule) - {"KeyName", "Rights"} or not isinstance(
                rule.get("KeyName"), str) or not isinstance(rule.get("Rights", []), list):
            raise ArgumentError(f"An authorization rule is {{KeyName, Rights}}, not "
                                f"{str(rule)[:60]!r}.")
        child = ET.SubElement(node, "AuthorizationRule")
        ET.SubElement(child, "KeyName").text = rule["KeyName"]
        rights = ET.SubElement(child, "Rights")
        for right in rule.get("Rights", []):
            ET.SubElement(rights, "AccessRights").text = str(right)
    return rules_xml(node, now)


def rules_node(description: ET.Element) -> ET.Element | None:
    """A description's ``AuthorizationRules`` element, if it has one."""
    return next((child for child in description if local_name(child) == KEY), None)
