"""The XML the administration API reads and writes: namespaces, elements, times, parsing.

Responses are written as text, not through an XML library's serializer, because the clients
depend on the prefixes the service uses (the JavaScript SDK reads ``i:type`` and the one
``xmlns:d2p1`` of ``CountDetails`` by name). Requests are parsed with ElementTree, namespaces
resolved, and refused (400) when malformed or when they declare a DTD.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from xml.sax.saxutils import escape, quoteattr

from .._errors import ArgumentError

__all__ = ["ATOM_NS", "COUNT_NS", "SB_NS", "XSD_NS", "XSI_NS", "attribute", "element",
           "local_name", "parse_body", "timestamp", "xsi_type"]

ATOM_NS = "http://www.w3.org/2005/Atom"
#: The namespace of queue, topic, subscription, rule and namespace descriptions.
SB_NS = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
#: The namespace of the counts inside ``CountDetails`` (prefix ``d2p1``).
COUNT_NS = "http://schemas.microsoft.com/netservices/2011/06/servicebus"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
XSD_NS = "http://www.w3.org/2001/XMLSchema"

_XSI_TYPE = f"{{{XSI_NS}}}type"


def element(name: str, text: str | None, attributes: str = "") -> str:
    """``<name>text</name>`` with ``text`` escaped; nothing when ``text`` is None."""
    if text is None:
        return ""
    return f"<{name}{attributes}>{escape(text)}</{name}>"


def attribute(name: str, value: str) -> str:
    """`` name="value"`` with the value quoted."""
    return f" {name}={quoteattr(value)}"


def timestamp(seconds: float) -> str:
    """An ``xs:dateTime`` in UTC as the service writes one (``2024-05-01T10:00:00.123Z``)."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}"[:3] + "Z"


def parse_body(body: bytes) -> ET.Element:
    """The request's XML document (400 when it is not one, or declares a DTD)."""
    if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
        raise ArgumentError("The request body may not declare a DTD.")
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise ArgumentError(f"The request body is not well-formed XML: {exc}.") from None


def local_name(node: ET.Element) -> str:
    """An element's name without its namespace."""
    return node.tag.rpartition("}")[2]


def xsi_type(node: ET.Element) -> str:
    """The element's ``xsi:type`` without a prefix (``SqlFilter``, ``d6p1:int`` -> ``int``)."""
    return node.get(_XSI_TYPE, "").rpartition(":")[2]
