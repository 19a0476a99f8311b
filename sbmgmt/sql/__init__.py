"""The Service Bus SQL filter and rule-action language, evaluated on the client.

The service's subscription rules are written in a SQL dialect (Microsoft's "Subscription
Rule SQL Filter Syntax" and "SQL Action Syntax" pages; docs/sql-filters.md says what is
supported). This package parses an expression once (cached) and compiles it to Python
closures: :func:`parse_filter` gives a :class:`SqlFilterProgram` that tells whether a
[Message][sbmgmt.Message] passes the filter, :func:`parse_action` a
:class:`SqlActionProgram` that returns the message with the action applied. An invalid
expression raises :class:`SqlSyntaxError` (a ``ValueError``) naming the line, the column
and the offending token; :func:`check_rule` checks a rule's filter and action before
``add_rule`` sends it. The fake namespace evaluates its subscriptions' rules with this
package, and the search (:mod:`sbmgmt.actions.search`) its ``where`` condition.

May import: ``message``, ``rules``, ``lark``; nothing that does I/O (a contract in
``pyproject.toml``).
"""

from __future__ import annotations

from ._check import check_rule
from ._errors import SqlSyntaxError
from ._programs import SqlActionProgram, SqlFilterProgram, parse_action, parse_filter

__all__ = [
    "SqlActionProgram",
    "SqlFilterProgram",
    "SqlSyntaxError",
    "check_rule",
    "parse_action",
    "parse_filter",
]
