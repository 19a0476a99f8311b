"""Compiled SQL filters and rule actions, and the cached functions that build them."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from lark import Token, Tree

from sbmgmt.message import Message

from ._compiler import Compiler, PropertyRef
from ._grammar import parse_tree
from ._properties import SETTABLE_SYSTEM_PROPERTIES, find_user_key
from ._values import Truth, is_number

__all__ = ["SqlActionProgram", "SqlFilterProgram", "Statement", "parse_action", "parse_filter"]

_CACHE_SIZE = 4096

#: One compiled statement of a rule action (SET or REMOVE): a message in, its changed copy out.
Statement = Callable[[Message], Message]


class SqlFilterProgram:
    """A compiled SQL filter: :meth:`matches` tells whether a message passes it."""

    __slots__ = ("_run", "expression")

    def __init__(self, expression: str, run: Callable[[Message], Truth]) -> None:
        self.expression = expression
        self._run = run

    def evaluate(self, message: Message) -> Truth:
        """The filter's three-valued result on ``message``.

        Args:
            message: A message (system properties from its fields, user properties from
                its application properties).

        Returns:
            ``True``, ``False`` or ``None`` (unknown: a missing property, NULL, a type
            mismatch).

        Raises nothing: an operator on values it does not take gives unknown.
        """
        result: Truth = self._run(message)
        return result

    def matches(self, message: Message) -> bool:
        """Whether the filter is TRUE for ``message`` (unknown does not match), as a
        subscription rule decides.

        Args:
            message: A message.

        Returns:
            True when the filter is TRUE.

        Raises nothing.
        """
        return self._run(message) is True

    def __repr__(self) -> str:
        return f"SqlFilterProgram({self.expression!r})"


class SqlActionProgram:
    """A compiled SQL rule action: :meth:`apply` runs its statements in order."""

    __slots__ = ("_statements", "expression")

    def __init__(self, expression: str, statements: tuple[Statement, ...]) -> None:
        self.expression = expression
        self._statements = statements

    def apply(self, message: Message) -> Message:
        """A copy of ``message`` with the action's SET and REMOVE statements applied.

        Each statement sees the result of the ones before it.

        Args:
            message: The message (left untouched).

        Returns:
            The modified copy.

        Raises nothing.
        """
        for statement in self._statements:
            message = statement(message)
        return message

    def __repr__(self) -> str:
        return f"SqlActionProgram({self.expression!r})"


@lru_cache(maxsize=_CACHE_SIZE)
def parse_filter(expression: str) -> SqlFilterProgram:
    """Parse and compile a SQL filter (cached: the same text is compiled once).

    Args:
        expression: The filter, as a subscription rule's ``SqlFilter`` takes it.

    Returns:
        The compiled filter.

    Raises:
        SqlSyntaxError: ``expression`` is not a valid filter (the line, the column and
            the token are in it).
    """
    tree = parse_tree(expression, "filter")
    compiled = Compiler(expression).condition(tree.children[0])
    return SqlFilterProgram(expression, compiled.run)


@lru_cache(maxsize=_CACHE_SIZE)
def parse_action(expression: str) -> SqlActionProgram:
    """Parse and compile a SQL rule action (cached: the same text is compiled once).

    Args:
        expression: The action, as a rule's ``SqlRuleAction`` takes it.

    Returns:
        The compiled action.

    Raises:
        SqlSyntaxError: ``expression`` is not a valid action.
    """
    tree = parse_tree(expression, "action")
    compiler = Compiler(expression)
    statements = tuple(_statement(compiler, child) for child in tree.children
                       if isinstance(child, Tree))
    return SqlActionProgram(expression, statements)


def _statement(compiler: Compiler, node: Tree[Token]) -> Statement:
    target_node = node.children[0]
    assert isinstance(target_node, Tree)
    target = compiler.reference(target_node)
    if target.scope == "sys" and _system_name(target) not in SETTABLE_SYSTEM_PROPERTIES:
        compiler.fail(target_node, f"{target.written} cannot be changed by a rule action")
    if node.data == "remove_statement":
        return _remove(target)
    _, operator, value_node = node.children
    if str(operator) != "=":
        compiler.fail(operator, "SET needs '='")
    return _set(target, compiler.value(value_node).run)


def _system_name(target: PropertyRef) -> str:
    return target.written.partition(".")[2].lower()


def _set(target: PropertyRef, value: Callable[[Message], Any]) -> Statement:
    if target.scope == "sys":
        field = target.key

        def set_system(message: Message) -> Message:
            return message.model_copy(update={field: _text(value(message))})

        return set_system
    name = target.key

    def set_user(message: Message) -> Message:
        props = dict(message.application_properties)
        key = find_user_key(props, name) or name
        props[key] = _converted(value(message), props.get(key))
        return message.model_copy(update={"application_properties": props})

    return set_user


def _remove(target: PropertyRef) -> Statement:
    if target.scope == "sys":
        field = target.key
        return lambda message: message.model_copy(update={field: None})
    name = target.key

    def remove_user(message: Message) -> Message:
        props = dict(message.application_properties)
        key = find_user_key(props, name)
        if key is None:
            return message
        del props[key]
        return message.model_copy(update={"application_properties": props})

    return remove_user


def _text(value: Any) -> str | None:
    """A value stored into a string system property (.NET ``ToString`` spelling of bools)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _converted(value: Any, existing: Any) -> Any:
    """C#'s implicit conversion to the existing property's type, where there is one."""
    if isinstance(existing, float) and is_number(value):
        return float(value)
    return value
