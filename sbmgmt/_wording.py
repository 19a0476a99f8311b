"""Counts and times in words, for what the CLI and the explorer tell a person: "1 message",
"2 messages", "2026-11-26 09:30:00" (one wording for both front ends)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

__all__ = ["counted", "tally", "utc_time"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural (``plural``, else ``noun`` + "s")
    unless the count is exactly one."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def tally(counts: Mapping[str, int]) -> str:
    """A long action's counts by outcome as its progress shows them: ``moved 1,298 · failed
    2`` (the words as the action names them, underscores as spaces; zeros left out)."""
    return " · ".join(f"{name.replace('_', ' ')} {count:,}"
                      for name, count in counts.items() if count)


def utc_time(value: datetime, *, milliseconds: bool = False) -> str:
    """A time as people read it: ``2026-11-26 09:30:00`` in UTC (which the column header or
    the sentence says), to the second, or to the millisecond with ``milliseconds``; a naive
    datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    text = value.astimezone(timezone.utc).isoformat(
        sep=" ", timespec="milliseconds" if milliseconds else "seconds")
    return text.removesuffix("+00:00")
