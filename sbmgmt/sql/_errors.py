"""The one error a SQL filter or action expression can raise when it is parsed."""

from __future__ import annotations

__all__ = ["SqlSyntaxError"]


class SqlSyntaxError(ValueError):
    """An expression that is not valid Service Bus SQL.

    ``line`` and ``column`` are 1-based and point at the offending token (``token``),
    or at the start of the construct that is wrong when the error is not lexical
    (an unknown system property, a condition where a value is needed, ...).
    """

    def __init__(
        self, reason: str, *, expression: str, line: int, column: int, token: str | None = None
    ) -> None:
        where = f"line {line}, column {column}"
        near = f" near {token!r}" if token is not None else ""
        super().__init__(f"SQL syntax error at {where}{near}: {reason}")
        self.reason = reason
        self.expression = expression
        self.line = line
        self.column = column
        self.token = token
