"""Compile a parsed SQL tree into Python closures, once.

Each node becomes a :class:`Compiled`: a function of the message, whether it is a
condition (a truth value) or a value, and its value when it is known at compile
time (constant sub-expressions are folded, and a constant LIKE pattern is turned
into a regular expression once). Errors that the grammar cannot see (a condition
where a value is needed, an unknown system property, a reserved word used as a
name, a malformed constant) are raised here as :class:`SqlSyntaxError` with the
position of the construct.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from lark import Token, Tree

from sbmgmt.message import Message

from ._errors import SqlSyntaxError
from ._properties import read_system, read_user, resolve_dynamic, system_field
from ._values import (
    ARITHMETIC,
    COMPARISONS,
    Truth,
    like_pattern,
    sign,
    truth_and,
    truth_not,
    truth_or,
)

__all__ = ["Compiled", "Compiler", "Evaluator", "PropertyRef"]

Evaluator = Callable[[Message], Any]

_INT64_MAX = 2**63 - 1

_RESERVED = frozenset({
    "and", "or", "not", "is", "in", "like", "escape", "exists", "true", "false", "null",
    "set", "remove",
})


class _Varying:
    """Marks a node whose value depends on the message."""

    def __repr__(self) -> str:
        return "<varying>"


_VARYING: Any = _Varying()


@dataclass(frozen=True, slots=True)
class PropertyRef:
    """A property named in the expression: ``scope`` and its key (a field for ``sys``)."""

    scope: Literal["sys", "user"]
    key: str
    written: str


@dataclass(frozen=True, slots=True)
class Compiled:
    """One compiled node."""

    run: Evaluator
    is_condition: bool
    line: int
    column: int
    constant: Any = _VARYING
    reference: PropertyRef | None = None
    is_function: bool = False


def _position(node: Tree[Token] | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line or 1, node.column or 1
    return node.meta.line, node.meta.column


def _constant(value: Any, is_condition: bool, line: int, column: int) -> Compiled:
    return Compiled(lambda _m: value, is_condition, line, column, constant=value)


def _unescape(text: str, quote: str) -> str:
    return text[1:-1].replace(quote * 2, quote)


class Compiler:
    """Compiles the trees of one expression (it knows the text, for error messages)."""

    def __init__(self, expression: str) -> None:
        self._expression = expression

    # --- errors and checks -----------------------------------------------------------

    def fail(self, node: Tree[Token] | Token | Compiled, reason: str) -> NoReturn:
        """Raise :class:`SqlSyntaxError` at ``node``."""
        token: str | None = None
        if isinstance(node, Compiled):
            line, column = node.line, node.column
        else:
            line, column = _position(node)
            if isinstance(node, Token):
                token = str(node)
        raise SqlSyntaxError(
            reason, expression=self._expression, line=line, column=column, token=token
        )

    def condition(self, node: Tree[Token] | Token) -> Compiled:
        """Compile ``node``, which must be a condition."""
        compiled = self.compile(node)
        if not compiled.is_condition:
            self.fail(compiled, "expected a condition (a comparison, IS NULL, IN, LIKE, "
                                "EXISTS, ...), found a value")
        return compiled

    def value(self, node: Tree[Token] | Token) -> Compiled:
        """Compile ``node``, which must be a value."""
        compiled = self.compile(node)
        if compiled.is_condition:
            self.fail(compiled, "expected a value, found a condition")
        return compiled

    def compile(self, node: Tree[Token] | Token) -> Compiled:
        """Compile any expression node."""
        if isinstance(node, Token):
            self.fail(node, f"unexpected {node.type}")
        handler = getattr(self, f"_{node.data}", None)
        if handler is None:
            self.fail(node, f"unsupported construct {node.data}")
        result: Compiled = handler(node)
        return result

    # --- combining -------------------------------------------------------------------

    def _combine(
        self,
        node: Tree[Token],
        parts: list[Compiled],
        combine: Callable[..., Any],
        *,
        is_condition: bool,
    ) -> Compiled:
        line, column = _position(node)
        if all(part.constant is not _VARYING for part in parts):
            return _constant(combine(*(p.constant for p in parts)), is_condition, line, column)
        if len(parts) == 1:
            (only,) = (p.run for p in parts)
            return Compiled(lambda m: combine(only(m)), is_condition, line, column)
        if len(parts) == 2:
            left, right = (p.run for p in parts)
            return Compiled(lambda m: combine(left(m), right(m)), is_condition, line, column)
        runs = tuple(p.run for p in parts)
        return Compiled(lambda m: combine(*(r(m) for r in runs)), is_condition, line, column)

    # --- logic -----------------------------------------------------------------------

    def _or_op(self, node: Tree[Token]) -> Compiled:
        left, right = (self.condition(child) for child in node.children)
        if left.constant is not _VARYING and right.constant is not _VARYING:
            return self._combine(node, [left, right], truth_or, is_condition=True)
        first, second = left.run, right.run

        def run(message: Message) -> Truth:
            head: Truth = first(message)
            return True if head is True else truth_or(head, second(message))

        return Compiled(run, True, *_position(node))

    def _and_op(self, node: Tree[Token]) -> Compiled:
        left, right = (self.condition(child) for child in node.children)
        if left.constant is not _VARYING and right.constant is not _VARYING:
            return self._combine(node, [left, right], truth_and, is_condition=True)
        first, second = left.run, right.run

        def run(message: Message) -> Truth:
            head: Truth = first(message)
            return False if head is False else truth_and(head, second(message))

        return Compiled(run, True, *_position(node))

    def _not_op(self, node: Tree[Token]) -> Compiled:
        return self._combine(node, [self.condition(node.children[0])], truth_not,
                             is_condition=True)

    # --- predicates ------------------------------------------------------------------

    def _compare(self, node: Tree[Token]) -> Compiled:
        left_node, symbol, right_node = node.children
        compare = COMPARISONS[str(symbol)]
        return self._combine(node, [self.value(left_node), self.value(right_node)], compare,
                             is_condition=True)

    def _null_test(self, node: Tree[Token], negated: bool) -> Compiled:
        operand = self.value(node.children[0])
        if operand.reference is None and not operand.is_function:
            self.fail(operand, "IS [NOT] NULL applies to a property")
        run = operand.run
        if negated:
            return Compiled(lambda m: run(m) is not None, True, *_position(node))
        return Compiled(lambda m: run(m) is None, True, *_position(node))

    def _is_null(self, node: Tree[Token]) -> Compiled:
        return self._null_test(node, negated=False)

    def _is_not_null(self, node: Tree[Token]) -> Compiled:
        return self._null_test(node, negated=True)

    def _membership(self, node: Tree[Token], negated: bool) -> Compiled:
        operand_node, list_node = node.children
        assert isinstance(list_node, Tree)
        items = [self.value(item) for item in list_node.children]
        equals = COMPARISONS["="]

        def member(left: Any, *candidates: Any) -> Truth:
            if left is None:
                return None
            unknown = False
            for candidate in candidates:
                found = equals(left, candidate)
                if found:
                    return not negated
                unknown = unknown or found is None
            return None if unknown else negated

        return self._combine(node, [self.value(operand_node), *items], member,
                             is_condition=True)

    def _in_list(self, node: Tree[Token]) -> Compiled:
        return self._membership(node, negated=False)

    def _not_in_list(self, node: Tree[Token]) -> Compiled:
        return self._membership(node, negated=True)

    def _like_test(self, node: Tree[Token], negated: bool) -> Compiled:
        operand_node, pattern_node, escape_node = node.children
        operand = self.value(operand_node)
        pattern = self.value(pattern_node)
        escape = None if escape_node is None else self.value(escape_node)
        if pattern.constant is not _VARYING and not isinstance(pattern.constant, str):
            self.fail(pattern, "a LIKE pattern must be a string")
        if escape is not None and escape.constant is not _VARYING and not (
            isinstance(escape.constant, str) and len(escape.constant) == 1
        ):
            self.fail(escape, "the LIKE escape must be a string of one character")
        fixed_escape = None if escape is None else escape.constant
        if pattern.constant is not _VARYING and fixed_escape is not _VARYING:
            regex = like_pattern(pattern.constant, fixed_escape)
            if regex is None:
                self.fail(pattern, "the LIKE pattern ends with its escape character")
            return self._combine(node, [operand], _matcher(regex, negated), is_condition=True)

        def dynamic(text: Any, pattern_text: Any, escape_text: Any = None) -> Truth:
            if not isinstance(pattern_text, str):
                return None
            if escape_text is not None and not (
                isinstance(escape_text, str) and len(escape_text) == 1
            ):
                return None
            regex = like_pattern(pattern_text, escape_text)
            return None if regex is None else _matcher(regex, negated)(text)

        parts = [operand, pattern] if escape is None else [operand, pattern, escape]
        return self._combine(node, parts, dynamic, is_condition=True)

    def _like(self, node: Tree[Token]) -> Compiled:
        return self._like_test(node, negated=False)

    def _not_like(self, node: Tree[Token]) -> Compiled:
        return self._like_test(node, negated=True)

    def _exists(self, node: Tree[Token]) -> Compiled:
        operand = self.value(node.children[0])
        reference = operand.reference
        assert reference is not None
        line, column = _position(node)
        if reference.scope == "sys":
            run = operand.run
            return Compiled(lambda m: run(m) is not None, True, line, column)
        key = reference.key
        folded = key.casefold()

        def exists(message: Message) -> bool:
            props = message.application_properties
            return key in props or any(k.casefold() == folded for k in props)

        return Compiled(exists, True, line, column)

    # --- values ----------------------------------------------------------------------

    def _arithmetic(self, node: Tree[Token]) -> Compiled:
        left_node, symbol, right_node = node.children
        operation = ARITHMETIC[str(symbol)]
        return self._combine(node, [self.value(left_node), self.value(right_node)], operation,
                             is_condition=False)

    def _sign(self, node: Tree[Token]) -> Compiled:
        symbol, operand_node = node.children
        text = str(symbol)
        return self._combine(node, [self.value(operand_node)], lambda v: sign(text, v),
                             is_condition=False)

    def _function(self, node: Tree[Token]) -> Compiled:
        name_token, argument_node = node.children
        assert isinstance(name_token, Token)
        name = str(name_token).lower()
        line, column = _position(node)
        if name == "newid":
            if argument_node is not None:
                self.fail(node, "newid() takes no argument")
            return Compiled(lambda _m: uuid.uuid4(), False, line, column, is_function=True)
        if name in ("property", "p"):
            if argument_node is None:
                self.fail(node, f"{name_token}() needs a property name")
            argument = self.value(argument_node).run
            return Compiled(lambda m: resolve_dynamic(m, argument(m)), False, line, column,
                            is_function=True)
        self.fail(name_token, f"unknown function {name_token}()")

    def _name(self, token: Token) -> str:
        text = str(token)
        if token.type == "DELIMITED_NAME":
            return _unescape(text, "]")
        if token.type == "QUOTED_NAME":
            return _unescape(text, '"')
        if text.lower() in _RESERVED:
            self.fail(token, f"{text!r} is a reserved word; write [{text}] for a property "
                             "of that name")
        return text

    def reference(self, node: Tree[Token]) -> PropertyRef:
        """The property a ``property`` node names (``sys.`` ones are checked to exist)."""
        tokens = [child for child in node.children if isinstance(child, Token)]
        if len(tokens) == 1:
            name = self._name(tokens[0])
            return PropertyRef("user", name, name)
        scope_token, name_token = tokens
        scope = self._name(scope_token).lower()
        name = self._name(name_token)
        if scope == "user":
            return PropertyRef("user", name, f"user.{name}")
        if scope != "sys":
            self.fail(scope_token, f"unknown scope {str(scope_token)!r}: use sys. or user.")
        field = system_field(name)
        if field is None:
            self.fail(name_token, f"unknown system property sys.{name}")
        return PropertyRef("sys", field, f"sys.{name}")

    def _property(self, node: Tree[Token]) -> Compiled:
        reference = self.reference(node)
        key = reference.key
        line, column = _position(node)
        if reference.scope == "sys":
            return Compiled(lambda m: read_system(m, key), False, line, column,
                            reference=reference)
        return Compiled(lambda m: read_user(m.application_properties, key), False, line,
                        column, reference=reference)

    # --- literals --------------------------------------------------------------------

    def _string(self, node: Tree[Token]) -> Compiled:
        return _constant(_unescape(str(node.children[0]), "'"), False, *_position(node))

    def _integer(self, node: Tree[Token]) -> Compiled:
        value = int(str(node.children[0]))
        if value > _INT64_MAX:
            self.fail(node.children[0], "integer constant out of the Int64 range")
        return _constant(value, False, *_position(node))

    def _decimal(self, node: Tree[Token]) -> Compiled:
        return _constant(float(str(node.children[0])), False, *_position(node))

    def _true(self, node: Tree[Token]) -> Compiled:
        return _constant(True, False, *_position(node))

    def _false(self, node: Tree[Token]) -> Compiled:
        return _constant(False, False, *_position(node))

    def _null(self, node: Tree[Token]) -> Compiled:
        return _constant(None, False, *_position(node))


def _matcher(regex: re.Pattern[str], negated: bool) -> Callable[[Any], Truth]:
    fullmatch = regex.fullmatch

    def match(text: Any) -> Truth:
        if not isinstance(text, str):
            return None
        return (fullmatch(text) is None) if negated else (fullmatch(text) is not None)

    return match
