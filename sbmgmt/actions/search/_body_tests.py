"""The body conditions of a search, each compiled once into a test of a message's body as
the explorer shows it (:mod:`sbmgmt.message_view`): a substring (any case), a regular
expression, a JSONPath query or an ElementTree path, either with a trailing comparison.

A substring is looked for in three steps, each only when the one before could not
answer: the raw text, unparsed (a *screen* of the message itself, which rules out nearly
every body a search reads: :func:`~sbmgmt.message_view.might_contain`), the compact text
of a JSON body, then its indented text, the shown one. The compact text answers both
ways for a substring without JSON's punctuation (``{}[],``): the indented text is the
compact one with whitespace put after ``{``, ``[`` and ``,`` and before ``]`` and ``}``
(and the space after a ``,`` widened to a line break and an indent, which ends with a
space), the tokens and the ``": "`` between a key and its value written alike by both of
the standard library's encoders, and casefolding goes character by character; so such
a substring found in the compact text is in the shown text, and the indenting (several
times the parse) is paid only for what the compact text cannot tell.
"""

from __future__ import annotations

import functools
import json
import operator
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from typing import Any

import jsonpath
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as parse_xml

from ...message import ReceivedMessage
from ...message_view import BodyForm, BodyKind, body_form, might_contain
from ._records import ConditionError

__all__ = ["BodyOf", "BodyTest", "MessageTest", "body_tests"]

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge,
    "<": operator.lt, ">": operator.gt}
# A trailing comparison: the path, an operator, a JSON literal (or a single-quoted string).
_TRAILING = re.compile(
    r"^(?P<path>.+?)\s*(?P<op>==|!=|<=|>=|<|>)\s*"
    r"(?P<value>'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
    r"|true|false|null)\s*$")


class BodyOf:
    """One message's body form, decided at the first body condition that needs it."""

    __slots__ = ("form", "message")

    def __init__(self, message: ReceivedMessage) -> None:
        self.message = message
        self.form: BodyForm | None = None

    def get(self) -> BodyForm:
        if self.form is None:
            self.form = body_form(self.message)
        return self.form


BodyTest = Callable[[BodyOf], bool]
#: A test of the message itself, cheaper than a body test, that must hold too.
MessageTest = Callable[[ReceivedMessage], bool]
#: JSON's punctuation, where the indented text differs from the compact one.
_PUNCTUATION = frozenset("{}[],")


def _substring_test(text: str) -> tuple[MessageTest, BodyTest]:
    """The screen (the raw text) and the test (the compact, then the shown text) of a
    substring; see the module's docstring."""
    needle = text.casefold()
    pieces = needle.split()
    compact_tells = _PUNCTUATION.isdisjoint(needle)

    def contains(body: BodyOf) -> bool:
        form = body.get()
        if form.kind in (BodyKind.JSON, BodyKind.VALUE):
            compact = form.compact_text().casefold()
            if not all(piece in compact for piece in pieces):
                return False  # not in the tokens: not in the indented text either
            if compact_tells and needle in compact:
                return True
        return needle in form.text.casefold()

    return functools.partial(might_contain, needle=needle), contains


def _regex_test(pattern: str) -> BodyTest:
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise ConditionError("body_regex", f"not a regular expression: {error}") from None
    return lambda body: compiled.search(body.get().text) is not None


def _literal(text: str) -> Any:
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    return json.loads(text)


def _compares(op: Callable[[Any, Any], bool], value: Any) -> Callable[[Any], bool]:
    def holds(found: Any) -> bool:
        if isinstance(value, str) != isinstance(found, str) or \
                isinstance(value, bool) != isinstance(found, bool):
            return False  # a number is not compared with text, nor a bool with a number
        try:
            return bool(op(found, value))
        except TypeError:
            return False
    return holds


def _split_comparison(text: str, literal: Callable[[str], Any],
                      ) -> tuple[str, Callable[[Any], bool] | None]:
    """The path and the test of what it selects (None: selecting something is enough)."""
    trailing = _TRAILING.match(text)
    if trailing is None:
        return text, None
    return trailing["path"], _compares(_COMPARISONS[trailing["op"]], literal(trailing["value"]))


def _json_path_test(text: str) -> BodyTest:
    try:
        whole = jsonpath.compile(text)
        test: Callable[[Any], bool] | None = None
    except jsonpath.JSONPathError:
        path, test = _split_comparison(text, _literal)
        try:
            whole = jsonpath.compile(path)
        except jsonpath.JSONPathError as error:
            raise ConditionError("path", f"not a JSONPath query: {_first_line(error)}") \
                from None

    def selects(body: BodyOf) -> bool:
        form = body.get()
        if form.kind not in (BodyKind.JSON, BodyKind.VALUE):
            return False
        try:
            values = whole.findall(form.document)
        except (jsonpath.JSONPathError, TypeError):
            return False  # a value the query cannot walk (a proton type, a tuple)
        return bool(values) if test is None else any(test(value) for value in values)

    return selects


def _xml_text(node: ElementTree.Element, like: Any) -> Any:
    """An element's text, as a number when it is compared with a number."""
    text = (node.text or "").strip()
    if isinstance(like, (int, float)) and not isinstance(like, bool):
        try:
            return float(text)
        except ValueError:
            return text
    return text


def _xml_path_test(text: str) -> BodyTest:
    compared: list[Any] = []

    def literal(value: str) -> Any:
        compared.append(_literal(value))
        return compared[0]

    path, test = _split_comparison(text, literal)
    if path.startswith("//"):
        path = "." + path
    elif path.startswith("/"):
        raise ConditionError("path", "an ElementTree path starts at the root element: write "
                             "'order/total' or './/total', not '/root/order/total'")
    try:
        ElementTree.fromstring("<x/>").findall(path)
    except (SyntaxError, KeyError, TypeError) as error:
        raise ConditionError("path", f"not an ElementTree path: {error}") from None
    like = compared[0] if compared else None

    def selects(body: BodyOf) -> bool:
        form = body.get()
        if form.kind is not BodyKind.XML:
            return False
        assert form.raw is not None
        try:
            nodes = parse_xml(form.raw.strip()).findall(path)
        except (ElementTree.ParseError, DefusedXmlException, SyntaxError):
            return False
        if test is None:
            return bool(nodes)
        return any(test(_xml_text(node, like)) for node in nodes)

    return selects


def _first_line(value: object) -> str:
    return str(value).strip().splitlines()[0] if str(value).strip() else "empty"


def body_tests(body: str | None, body_regex: str | None, path: str | None,
               ) -> tuple[list[MessageTest], list[BodyTest]]:
    """The tests of the body conditions given (see :class:`~._conditions.Conditions`):
    the screens of the messages, then the tests of their bodies; a body meets them when it
    passes all of both.

    Raises:
        ConditionError: A condition cannot be used (empty, or does not parse).
    """
    screens: list[MessageTest] = []
    tests: list[BodyTest] = []
    if body is not None:
        if not body:
            raise ConditionError("body", "the text to find is empty")
        screen, test = _substring_test(body)
        screens.append(screen)
        tests.append(test)
    if body_regex is not None:
        tests.append(_regex_test(body_regex))
    if path is not None:
        text = path.strip()
        if not text:
            raise ConditionError("path", "the path is empty")
        tests.append(_json_path_test(text) if text.startswith("$") else _xml_path_test(text))
    return screens, tests
