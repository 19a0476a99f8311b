"""The XML the administration API reads and writes: namespaces, elements, times, parsing.

Responses are written as text, not through an XML library's serializer, because the clients
depend on the prefixes the service uses (the JavaScript SDK reads ``i:type`` and the one
``xmlns:d2p1`` of ``CountDetails`` by name); a character XML 1.0 cannot carry (a control
character of a name in an error's detail) is written as U+FFFD, so that every answer parses.

Requests come from whoever reaches the port: they are parsed by defusedxml (made for
untrusted XML; in every encoding the parser reads, after decoding, so a UTF-16 body is
screened as a UTF-8 one), which refuses a DTD and so every entity declaration and expansion;
and a body of more than :data:`MAX_ELEMENTS` elements is refused as it is read (a
description has a few dozen), so that a small body cannot become a large tree. Namespaces
are resolved; anything refused is a 400.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from .._errors import ArgumentError

__all__ = ["ATOM_NS", "COUNT_NS", "MAX_ELEMENTS", "SB_NS", "XSD_NS", "XSI_NS", "attribute",
           "element",
           "local_name", "parse_body", "timestamp", "xsi_type"]

ATOM_NS = "http://www.w3.org/2005/Atom"
#: The namespace of queue, topic, subscription, rule and namespace descriptions.
SB_NS = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
#: The namespace of the counts inside ``CountDetails`` (prefix ``d2p1``).
COUNT_NS = "http://schemas.microsoft.com/netservices/2011/06/servicebus"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
XSD_NS = "http://www.w3.org/2001/XMLSchema"

_XSI_TYPE = f"{{{XSI_NS}}}type"
#: The most elements a request body may hold (a rule with many SQL parameters has hundreds).
MAX_ELEMENTS = 10_000
#: What XML 1.0 cannot carry, even escaped: control characters but tab, LF and CR;
#: surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text))


def element(name: str, text: str | None, attributes: str = "") -> str:
    """``<name>text</name>`` with ``text`` escaped; nothing when ``text`` is None."""
    if text is None:
        return ""
    return f"<{name}{attributes}>{_xml_text(text)}</{name}>"


def attribute(name: str, value: str) -> str:
    """`` name="value"`` with the value quoted."""
    return f" {name}={quoteattr(_NOT_XML.sub(chr(0xFFFD), value))}"


def timestamp(seconds: float) -> str:
    """An ``xs:dateTime`` in UTC as the service writes one (``2024-05-01T10:00:00.123Z``)."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}"[:3] + "Z"


class _CountingBuilder(ET.TreeBuilder):
    """ElementTree's tree builder, refusing a document past :data:`MAX_ELEMENTS` elements."""

    def __init__(self) -> None:
        super().__init__()
        self._elements = 0

    def start(self, tag: Any, attrs: dict[Any, Any], /) -> ET.Element:
        self._elements += 1
        if self._elements > MAX_ELEMENTS:
            raise ArgumentError(f"The request body has more than {MAX_ELEMENTS} elements.")
        return super().start(tag, attrs)


def parse_body(body: bytes) -> ET.Element:
    """The request's XML document (400 when it is not one, declares a DTD or entities, or
    has too many elements)."""
    parser = DefusedXMLParser(target=_CountingBuilder(), forbid_dtd=True)
    try:
        parser.feed(body)
        root: ET.Element = parser.close()
    except DefusedXmlException:
        raise ArgumentError("The request body may not declare a DTD or entities.") from None
    except (ET.ParseError, ValueError, LookupError) as exc:
        raise ArgumentError(f"The request body is not well-formed XML: {exc}.") from None
    return root


def local_name(node: ET.Element) -> str:
    """An element's name without its namespace."""
    return node.tag.rpartition("}")[2]


def xsi_type(node: ET.Element) -> str:
    """The element's ``xsi:type`` without a prefix (``SqlFilter``, ``d6p1:int`` -> ``int``)."""
    return node.get(_XSI_TYPE, "").rpartition(":")[2]
