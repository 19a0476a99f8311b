"""SQL filter and action parameters (``@name`` values given beside the expression).

The fake's SQL engine has no parameters, so a parameterised expression is bound before it is
stored for evaluation: each ``@name`` outside a string literal becomes the literal of its
value (a string quoted with ``''`` escapes, a number, ``TRUE`` / ``FALSE``). The rule is still
reported as it was sent, expression and parameters (see :mod:`._rule_xml`).
"""

from __future__ import annotations

import re

from sbmgmt.rules import PropertyValue

from .._errors import ArgumentError

__all__ = ["bind_parameters"]

#: A string literal (skipped) or a parameter reference.
_TOKENS = re.compile(r"'(?:[^']|'')*'|@[A-Za-z_][A-Za-z0-9_]*")


def _literal(name: str, value: PropertyValue) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise ArgumentError(f"The SQL parameter {name!r} is a {type(value).__name__}; the fake "
                        "namespace binds strings, numbers and booleans only.")


def bind_parameters(expression: str, parameters: dict[str, PropertyValue]) -> str:
    """``expression`` with every ``@name`` replaced by its value's literal (400 for a name
    with no value)."""
    if not parameters:
        return expression
    values = {name if name.startswith("@") else f"@{name}": value
              for name, value in parameters.items()}

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token
        if token not in values:
            raise ArgumentError(f"The SQL expression uses {token}, which has no parameter.")
        return _literal(token, values[token])

    return _TOKENS.sub(replace, expression)
