"""Counts in words, for what the CLI and the explorer tell a person: "1 message", "2
messages" (one wording for both front ends)."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural (``plural``, else ``noun`` + "s")
    unless the count is exactly one."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"
