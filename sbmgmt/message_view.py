"""How a message's body is shown: in the form that fits, as text; one rule for every reader.

The explorer shows a body this way and the search (:mod:`sbmgmt.actions.search`) searches
what it shows, so both read it from here. Nothing here is markup: every value becomes a
``str`` that a page escapes. The body's form is chosen from what it is, not only from what
it claims:

- an amqp-value or amqp-sequence body: the value, as JSON where it fits, else its repr;
- a data body that parses as JSON (whatever its content type): JSON, indented;
- one that parses as XML and starts with ``<``: XML, indented (expat, which fetches no
  external entity; a body with a document type, which could declare entities that expand
  a billion times, is not parsed; bodies over :data:`MAX_PRETTY` are not re-indented);
- UTF-8 text without control characters (tab and newlines allowed): text;
- anything else: a hex dump (offset, hex, ASCII), of the first :data:`MAX_HEX` bytes.

:func:`body_form` decides the form and keeps what it parsed (the JSON document, the XML
text) without writing the text yet: indenting a JSON body with the standard library's
encoder costs several times its parsing (its C encoder does not indent), and a search
asks for the shown text only when a cheaper test could not rule the body out
(:meth:`BodyForm.compact_text`). :func:`body_view` is the form with its text.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from xml.dom import minidom
from xml.parsers.expat import ExpatError

from ._messages.wire_body import wire_data_body
from ._wording import utc_time
from .amqp.values import datetime_from_ms
from .message import Message

__all__ = ["MAX_HEX", "MAX_PRETTY", "BodyForm", "BodyKind", "BodyView", "body_form", "body_view",
           "might_contain", "utf8_text", "value_text"]

#: The most bytes re-indented as JSON or XML; a larger body is shown as text.
MAX_PRETTY = 1 << 20
#: The most bytes of a hex dump.
MAX_HEX = 64 * 1024


class BodyKind(str, enum.Enum):
    """How a body is shown."""

    JSON = "json"
    XML = "xml"
    TEXT = "text"
    HEX = "hex"
    VALUE = "value"


@dataclass(frozen=True)
class BodyView:
    """A body ready to show: its kind, its text, its size in bytes, and whether the text
    stops short of the whole body (a hex dump of a large body)."""

    kind: BodyKind
    text: str
    size: int
    truncated: bool = False


_UNSET: Any = object()


@dataclass(eq=False)
class BodyForm:
    """A body's form, decided, with what was parsed to decide it; the text is written
    when first asked for.

    Attributes:
        kind: How the body is shown.
        size: The body's size in bytes.
        document: The JSON document (a data body shown as JSON) or the value (an
            amqp-value or amqp-sequence body); None for the other kinds.
        raw: The body as text (UTF-8) for JSON, XML and text bodies; None otherwise.
            (An XML body's indented text is written when the form is decided: parsing it
            is what decides.)
        truncated: The text stops short of the body (a hex dump of a large body).
    """

    kind: BodyKind
    size: int
    document: Any = None
    raw: str | None = None
    truncated: bool = False
    _text: Any = field(default=_UNSET, repr=False)
    _data: bytes = field(default=b"", repr=False)

    @property
    def text(self) -> str:
        """The text shown (JSON and XML indented, a value as JSON, binary as a hex dump)."""
        if self._text is _UNSET:
            self._text = self._write()
        text: str = self._text
        return text

    def compact_text(self) -> str:
        """The shown text with less whitespace: for a JSON body or a value, the same tokens
        in the same order, only the whitespace between them differs (the standard library's
        C encoder writes it; both encoders write strings and numbers alike); the shown text
        itself for the other kinds. Every run of the shown text between whitespace lies in
        one run of this one, so a piece of a text looked for (between its whitespace) that
        is not in this text is not in the shown text either.

        Returns:
            The text.
        """
        if self.kind is BodyKind.JSON:
            return json.dumps(self.document, ensure_ascii=False)
        if self.kind is BodyKind.VALUE:
            try:
                return json.dumps(self.document, ensure_ascii=False, default=value_text)
            except (TypeError, ValueError):
                return self.text
        return self.text

    def view(self) -> BodyView:
        """The form with its text.

        Returns:
            The view.
        """
        return BodyView(self.kind, self.text, self.size, self.truncated)

    def _write(self) -> str:
        if self.kind is BodyKind.JSON:
            return json.dumps(self.document, indent=2, ensure_ascii=False)
        if self.kind is BodyKind.VALUE:
            try:
                return json.dumps(self.document, indent=2, ensure_ascii=False,
                                  default=value_text)
            except (TypeError, ValueError):
                return repr(self.document)
        if self.kind is BodyKind.TEXT:
            assert self.raw is not None
            return self.raw
        return _hex_dump(self._data[:MAX_HEX])


def value_text(value: Any) -> str:
    """Any decoded value as text (bytes as hex, times in UTC to the millisecond, as
    ``2026-11-26 09:30:00.250 UTC``).

    Args:
        value: A value decoded from AMQP.

    Returns:
        Its text.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex(" ")
    if isinstance(value, datetime):
        return f"{utc_time(value, milliseconds=True)} UTC"
    if isinstance(value, int) and type(value).__name__ == "timestamp":  # proton's, in ms
        return f"{utc_time(datetime_from_ms(int(value)), milliseconds=True)} UTC"
    if isinstance(value, enum.Enum):
        return value.name.lower()
    return str(value)


def body_form(message: Message) -> BodyForm:
    """The body's form (see the module's docstring), its text not yet written.

    Args:
        message: A message (peeked, received or to send).

    Returns:
        The form.
    """
    data = _data_body(message)
    if data is None:
        data = message.body_bytes()
        return BodyForm(BodyKind.VALUE, len(data), document=message.body)
    text = utf8_text(data)
    if text is not None and len(data) <= MAX_PRETTY:
        document = _json(text)
        if document is not _UNSET:
            return BodyForm(BodyKind.JSON, len(data), document=document, raw=text)
        pretty = _xml(text)
        if pretty is not None:
            return BodyForm(BodyKind.XML, len(data), raw=text, _text=pretty)
    if text is not None and _printable_text(text):
        return BodyForm(BodyKind.TEXT, len(data), raw=text)
    return BodyForm(BodyKind.HEX, len(data), truncated=len(data) > MAX_HEX, _data=data)


def body_view(message: Message) -> BodyView:
    """The message's body in the form that fits, with its text (see the module's docstring).

    Args:
        message: A message (peeked, received or to send).

    Returns:
        The body's kind, text and size.
    """
    return body_form(message).view()


_STRUCTURE = re.compile(r'[\s{}\[\],:]+')
_NUMBER_CHARS = frozenset("0123456789.eE+-")
_LINE_BREAKS = str.maketrans("", "", "\t\r\n")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: The ASCII bytes a text body may hold: printable ones, tab and line breaks.
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"
#: The ASCII characters ``str.strip`` strips (what the XML test strips): control
#: characters 0x1c-0x1f among them, which ``bytes.strip`` keeps.
_ASCII_SPACE = bytes(code for code in range(0x80) if chr(code).isspace())


def might_contain(message: Message, needle: str) -> bool:
    """Whether the shown body may contain ``needle`` (both casefolded), told from the body's
    raw text without parsing it: False only when it certainly does not.

    It answers from the raw text when the shown text is either that text (a text body) or
    JSON written from it: a data body that is UTF-8, printable (tabs and line breaks
    aside), without a backslash (so every JSON string is written as it came, no escape
    undone or made) and not starting with ``<`` (never XML). Such a body's shown text, if
    JSON, holds the same tokens: its strings as in the raw text, its numbers maybe spelled
    otherwise, only whitespace between them differs. So every piece of ``needle`` between
    whitespace and JSON's punctuation (``{}[],:``) that holds a quote or a character no
    number is made of lies inside one string (or true, false, null) of the shown text,
    and so in the raw text. A body of another kind answers True (ask the shown text).

    Args:
        message: The message.
        needle: The text looked for, casefolded.

    Returns:
        False when the shown body cannot contain ``needle``; True when it may.
    """
    data = _data_body(message)
    if data is None:
        return True
    if data.isascii():  # the common case, on the bytes: ASCII casefolds as it lowercases
        return _ascii_might_contain(data, needle)
    text = utf8_text(data)
    if text is None:
        return True
    folded = text.casefold()
    if all(piece in folded for piece in _telling_pieces(needle)):
        return True
    # a piece is missing from the raw text: conclusive only if the shown text is made of it
    return "\\" in text or text.lstrip()[:1] == "<" or not _printable_text(text)


def _ascii_might_contain(data: bytes, needle: str) -> bool:
    """:func:`might_contain` of an ASCII data body, read as bytes (its UTF-8 text, the same
    characters). A piece missing from the raw text rules the body out as there, with one
    shortcut: when a missing piece could not be in a hex dump either (:func:`_hex_proof`),
    the body need not be proved printable (not shown as a hex dump)."""
    folded = data.lower()
    missing = hex_proof = False
    for piece, proof in _telling_bytes(needle):
        if piece not in folded:
            missing = True
            if proof:
                hex_proof = True
                break
    if not missing or b"\\" in data or data.lstrip(_ASCII_SPACE)[:1] == b"<":
        return True
    return not hex_proof and data.translate(None, _PRINTABLE_ASCII) != b""


def _data_body(message: Message) -> bytes | None:
    """The body's bytes when it is a data body (None for an amqp-value or amqp-sequence
    body): from a lazily decoded message's wire bytes when it is still undecoded
    (:mod:`sbmgmt._messages.wire_body`, the rest left undecoded), else decoded."""
    data = wire_data_body(message)
    if data is not None:
        return data
    return message.body_bytes() if message.body_type == "data" else None


@functools.lru_cache(maxsize=64)
def _telling_pieces(needle: str) -> tuple[str, ...]:
    """The pieces of ``needle`` that, if in the shown text, are in the raw text too."""
    return tuple(piece for piece in _STRUCTURE.split(needle)
                 if piece and ('"' in piece or not _NUMBER_CHARS.issuperset(piece)))


@functools.lru_cache(maxsize=64)
def _telling_bytes(needle: str) -> tuple[tuple[bytes, bool], ...]:
    """:func:`_telling_pieces` as UTF-8 (a piece is in an ASCII text as its bytes are in
    its bytes; a piece that is not ASCII is in none), each with :func:`_hex_proof`."""
    pieces = [piece.encode() for piece in _telling_pieces(needle)]
    return tuple((piece, _hex_proof(piece)) for piece in pieces)


_HEX_DIGITS = frozenset(b"0123456789abcdef")


def _hex_proof(piece: bytes) -> bool:
    """Whether ``piece`` (casefolded, with no whitespace nor ``{}[],:``), missing from an
    ASCII body's raw text, is missing from its hex dump too. A hex dump's lines are an
    offset (hex digits), the bytes in hex (pairs of hex digits) and the bytes as ASCII
    (each printable byte as itself, any other as ``.``), separated by spaces and line
    breaks: a piece lies in one of these runs, so one with a character that is not a hex
    digit and no ``.`` lies in the ASCII column, where it is bytes of the body as they
    are, and so in the raw text."""
    return b"." not in piece and not _HEX_DIGITS.issuperset(piece)


def _printable_text(text: str) -> bool:
    """Every character printable, or a tab or a line break (as a text body must be)."""
    if text.isascii():
        return _ASCII_CONTROL.search(text) is None
    return text.isprintable() or text.translate(_LINE_BREAKS).isprintable()


def utf8_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8, else None.

    Args:
        data: Bytes.

    Returns:
        The text, or None.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json(text: str) -> Any:
    """The JSON document of ``text``, or ``_UNSET`` when it is not JSON."""
    if not text.strip() or text.lstrip()[:1] not in '{["':
        return _UNSET
    try:
        return json.loads(text)
    except ValueError:
        return _UNSET


def _xml(text: str) -> str | None:
    if not text.lstrip().startswith("<") or "<!DOCTYPE" in text or "<!ENTITY" in text:
        return None  # a document type may declare entities: never expanded here
    try:
        document = minidom.parseString(text.strip())
    except (ExpatError, ValueError):
        return None
    lines = document.toprettyxml(indent="  ").splitlines()
    return "\n".join(line for line in lines[1:] if line.strip())


def _hex_dump(data: bytes) -> str:
    rows = []
    for offset in range(0, len(data), 16):
        chunk = data[offset:offset + 16]
        ascii_text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        rows.append(f"{offset:08x}  {chunk.hex(' '):<47}  {ascii_text}")
    return "\n".join(rows)
