"""Deprecated: the SQL filter and action language moved to :mod:`sbmgmt.sql`.

This module re-exports it for one release (the fake evaluates rules with
:mod:`sbmgmt.sql` itself); import from :mod:`sbmgmt.sql` instead.
"""

from __future__ import annotations

from sbmgmt.sql import (
    SqlActionProgram,
    SqlFilterProgram,
    SqlSyntaxError,
    parse_action,
    parse_filter,
)

__all__ = [
    "SqlActionProgram",
    "SqlFilterProgram",
    "SqlSyntaxError",
    "parse_action",
    "parse_filter",
]
