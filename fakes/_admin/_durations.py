"""Durations as the administration API writes them: XML Schema ``xs:duration``, from a .NET
``TimeSpan`` (``PT1M``, ``P14D``, ``P10675199DT2H48M5.4775807S`` for ``TimeSpan.MaxValue``,
which the service reports for "never").

The store keeps seconds (``None`` for never); the XML has 100-nanosecond ticks at most.
"""

from __future__ import annotations

import re

__all__ = ["NEVER", "format_duration", "parse_duration"]

_TICKS_PER_SECOND = 10_000_000
#: ``TimeSpan.MaxValue`` in ticks: what the service reports for no time to live, no auto-delete.
_MAX_TICKS = 2**63 - 1
#: ``TimeSpan.MaxValue`` as the service writes it.
NEVER = "P10675199DT2H48M5.4775807S"

_DURATION = re.compile(
    r"P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?")
#: Seconds per unit, as .NET's XmlConvert.ToTimeSpan counts a year and a month.
_UNITS = {"years": 365 * 86400, "months": 30 * 86400, "days": 86400, "hours": 3600,
          "minutes": 60}


def parse_duration(text: str) -> float | None:
    """Seconds of an ``xs:duration``; ``None`` for ``TimeSpan.MaxValue`` (or beyond).

    :class:`ValueError` names a malformed or negative one."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or text.strip() in ("P", "PT") or text.strip().endswith("T"):
        raise ValueError(f"{text!r} is not an ISO 8601 duration")
    ticks = 0
    for unit, seconds in _UNITS.items():
        value = match.group(unit)
        if value is not None:
            ticks += int(value) * seconds * _TICKS_PER_SECOND
    fraction = match.group("seconds")
    if fraction is not None:
        whole, _, digits = fraction.partition(".")
        ticks += int(whole) * _TICKS_PER_SECOND + int((digits + "0" * 7)[:7])
    if ticks >= _MAX_TICKS:
        return None
    return ticks / _TICKS_PER_SECOND


def format_duration(seconds: float | None) -> str:
    """An ``xs:duration`` as the service writes it (``None``: ``TimeSpan.MaxValue``)."""
    if seconds is None:
        return NEVER
    ticks = round(seconds * _TICKS_PER_SECOND)
    if ticks >= _MAX_TICKS:
        return NEVER
    days, ticks = divmod(ticks, 86400 * _TICKS_PER_SECOND)
    hours, ticks = divmod(ticks, 3600 * _TICKS_PER_SECOND)
    minutes, ticks = divmod(ticks, 60 * _TICKS_PER_SECOND)
    whole, fraction = divmod(ticks, _TICKS_PER_SECOND)
    time = "".join(f"{value}{unit}" for value, unit in ((hours, "H"), (minutes, "M")) if value)
    if whole or fraction:
        time += f"{whole}.{fraction:07d}".rstrip("0").rstrip(".") + "S"
    text = "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")
    return text if text != "P" else "PT0S"
