"""Service Bus SQL filters and rule actions, evaluated against messages in the fake.

:func:`parse_filter` and :func:`parse_action` parse an expression once (they are
cached) and compile it to Python closures; a :class:`SqlFilterProgram` then tells
whether a :class:`~sbmgmt.message.Message` passes the filter, and a
:class:`SqlActionProgram` returns the message with the action applied. An invalid
expression raises :class:`SqlSyntaxError` (a ``ValueError``) naming the line, the
column and the offending token. What is supported: ``docs/sql-filters.md``.
"""

from __future__ import annotations

from ._errors import SqlSyntaxError
from ._programs import SqlActionProgram, SqlFilterProgram, parse_action, parse_filter

__all__ = [
    "SqlActionProgram",
    "SqlFilterProgram",
    "SqlSyntaxError",
    "parse_action",
    "parse_filter",
]
