"""The body substring test is exact: its shortcuts (the raw text, unparsed; a JSON body's
compact text) never reject a body whose shown text holds the text looked for. Checked
with hypothesis against the definition: ``needle.casefold() in body_view(m).text.casefold()``,
over JSON written every way (escapes, spacing, numbers spelled otherwise, duplicate keys),
text, XML, binary and amqp-value bodies, with needles cut from the shown text itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbmgmt._messages.lazy_decoder import lazy_decoder
from sbmgmt.actions.search import Conditions
from sbmgmt.message import Message, ReceivedMessage, as_received
from sbmgmt.message_view import BodyForm, body_view, might_contain

decode_lazily = lazy_decoder(ReceivedMessage, ReceivedMessage._construct)

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                     st.floats(allow_nan=False, allow_infinity=False, width=32),
                     st.text(st.characters(codec="utf-8"), max_size=12))
_DOCS = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)


def _written(doc: Any, draw: Any) -> str:
    """The document as a sender may have written it."""
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()),
                      indent=draw(st.sampled_from([None, 0, 2, "\t"])),
                      separators=draw(st.sampled_from([None, (",", ":"), (" , ", " : ")])))
    if draw(st.booleans()):
        text = text.replace("1.0", "1.00").replace("0.5", "5e-1")  # numbers spelled otherwise
    return text


@st.composite
def bodies(draw: Any) -> Message:
    kind = draw(st.sampled_from(["json", "duplicates", "text", "xml", "binary", "value"]))
    if kind == "json":
        return Message(body=_written(draw(_DOCS), draw).encode())
    if kind == "duplicates":
        return Message(body=b'{"a": 1, "b": "x y", "a": {"c": "z"}, "b": 2.50}')
    if kind == "text":
        return Message(body=draw(st.text(max_size=40)).encode())
    if kind == "xml":
        word = draw(st.sampled_from(["a&amp;b", "x", "&#65;", "<![CDATA[<i>]]>"]))
        return Message(body=f"<r k='v'><s>{word}</s>  <t/></r>".encode())
    if kind == "binary":
        return Message(body=draw(st.binary(max_size=40)))
    return Message(body=draw(_DOCS), body_type="value")


@st.composite
def cases(draw: Any) -> tuple[ReceivedMessage, str]:
    message = as_received(draw(bodies()), sequence_number=1)
    shown = body_view(message).text
    if shown and draw(st.booleans()):
        start = draw(st.integers(0, len(shown) - 1))
        needle = shown[start:start + draw(st.integers(1, 30))]
    else:
        needle = draw(st.text(min_size=1, max_size=8))
    if not needle.strip():
        needle = "x" + needle
    return message, needle


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_substring_test_is_the_definition(case: tuple[ReceivedMessage, str]) -> None:
    message, needle = case
    expected = needle.casefold() in body_view(message).text.casefold()
    assert Conditions(body=needle).matcher()(message) is expected
    if expected:
        assert might_contain(message, needle.casefold())


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_substring_test_on_wire_bytes_is_the_definition(
        case: tuple[ReceivedMessage, str]) -> None:
    """The same, each message decoded lazily from its wire bytes, as a peek hands it out:
    its data body read from those bytes (sbmgmt/_messages/wire_body.py)."""
    message, needle = case
    lazy = decode_lazily(message.to_bytes(), None)
    expected = needle.casefold() in body_view(message).text.casefold()
    assert might_contain(lazy, needle.casefold()) or not expected
    assert Conditions(body=needle).matcher()(lazy) is expected


@pytest.mark.parametrize(("body", "needle", "found"), [
    (b"\x1c<r k='v'/>", 'k="v"', True),  # str.strip's space: shown as XML
    (b"\x01abc", "00000000", True),  # the hex dump's offset
    (b"\x01abc", "01 61", True),  # its hex
    (b"\x01abc", ".abc", True),  # its ASCII column
    (b"\x01abc", '"abc', False),  # a quote: in no hex dump
    (b"\x01abc", "abd", False),
])
def test_an_ascii_body_shown_otherwise(body: bytes, needle: str, found: bool) -> None:
    message = decode_lazily(as_received(Message(body=body), sequence_number=1).to_bytes(),
                            None)
    assert (needle in body_view(message).text) is found
    assert Conditions(body=needle).matcher()(message) is found


def test_a_raw_json_needle_is_not_what_the_explorer_shows() -> None:
    message = as_received(Message(body=b'{"status":"failed"}'), sequence_number=1)
    assert Conditions(body='"status": "FAILED"').matcher()(message)
    assert not Conditions(body='"status":"failed"').matcher()(message)


_ORDER = b'{"order": {"id": 7, "status": "failed", "tags": ["a", "b"]}, "name": "Stra\xc3\x9fe"}'


@pytest.mark.parametrize(("needle", "found"), [
    ('"status": "failed"', True),  # told by the compact text
    (' "b"', True),  # the space after a comma: the indent's last space
    ('"b"]', False),  # punctuation: the indented text puts a line break before "]"
    ("STRASSE", True),  # casefolded, character by character: "ß" is "ss"
    ('"id": 7, "status"', False),  # a comma: the indented text breaks the line after it
    ('7,\n    "status"', True),  # ... as here, which the compact text has not
])
def test_the_compact_text_answers_for_what_has_no_punctuation(
        monkeypatch: pytest.MonkeyPatch, needle: str, found: bool) -> None:
    message = decode_lazily(as_received(Message(body=_ORDER), sequence_number=1).to_bytes(),
                            None)
    assert (needle.casefold() in body_view(message).text.casefold()) is found
    matches = Conditions(body=needle).matcher()
    if found and not set(needle) & set("{}[],"):
        def indented(self: object) -> str:
            raise AssertionError("the compact text told: nothing is indented")
        monkeypatch.setattr(BodyForm, "_write", indented)
    assert matches(message) is found
