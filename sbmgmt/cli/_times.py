"""Times on the command line: ISO 8601, ``now``, or relative to now (``+10m``, ``-1h30m``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from ._exit import UsageProblem

__all__ = ["parse_time"]

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_RELATIVE = re.compile(r"([+-])((?:\d+[smhdw])+)")
_PART = re.compile(r"(\d+)([smhdw])")


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def parse_time(text: str, *, now: Callable[[], datetime] = _utc_now) -> datetime:
    """A timezone-aware UTC datetime from ISO 8601, ``now`` or ``[+-]N{s,m,h,d,w}...``.

    An ISO time without an offset is taken as UTC.
    """
    value = text.strip()
    if value.lower() == "now":
        return now()
    relative = _RELATIVE.fullmatch(value)
    if relative:
        parts = _PART.findall(relative.group(2))
        units = [unit for _, unit in parts]
        if len(units) != len(set(units)):
            raise UsageProblem(f"invalid time {text!r}: a unit appears twice")
        delta = timedelta(**{_UNITS[unit]: int(amount) for amount, unit in parts})
        return now() + (delta if relative.group(1) == "+" else -delta)
    iso = value[:-1] + "+00:00" if value[-1:] in ("Z", "z") else value
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        raise UsageProblem(
            f"invalid time {text!r}: use ISO 8601 (2025-01-31T12:00:00Z), 'now', "
            "or a relative time such as +10m, -1h, +1d2h"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)
