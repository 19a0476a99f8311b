"""Durations as the administration API writes them: XML Schema ``xs:duration``, from a .NET
``TimeSpan`` (``PT1M``, ``P14D``, ``P10675199DT2H48M5.4775807S`` for ``TimeSpan.MaxValue``,
which the service reports for "never").

The store keeps seconds (``None`` for never); the XML has 100-nanosecond ticks at most. A
rule's duration-typed property (``d6p1:duration``) is read and written by its ticks, sign
included (:func:`duration_ticks`, :func:`ticks_duration`).
"""

from __future__ import annotations

import re

__all__ = ["NEVER", "duration_ticks", "format_duration", "parse_duration", "ticks_duration"]

_TICKS_PER_SECOND = 10_000_000
#: ``TimeSpan.MaxValue`` in ticks: what the service reports for no time to live, no auto-delete.
_MAX_TICKS = 2**63 - 1
#: ``TimeSpan.MaxValue`` as the service writes it.
NEVER = "P10675199DT2H48M5.4775807S"

_DURATION = re.compile(
    r"(?P<sign>-?)P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?")
#: Seconds per unit, as .NET's XmlConvert.ToTimeSpan counts a year and a month.
_UNITS = {"years": 365 * 86400, "months": 30 * 86400, "days": 86400, "hours": 3600,
          "minutes": 60}


def duration_ticks(text: str) -> int:
    """The ticks (100 ns) of an ``xs:duration``, negative after a leading ``-`` (as .NET
    writes a negative ``TimeSpan``). :class:`ValueError` names a malformed one."""
    stripped = text.strip()
    match = _DURATION.fullmatch(stripped)
    if match is None or stripped.lstrip("-") in ("P", "PT") or stripped.endswith("T"):
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
    return -ticks if match.group("sign") else ticks


def ticks_duration(ticks: int) -> str:
    """The ``xs:duration`` of a ``TimeSpan``'s ticks, as the service writes it."""
    sign, ticks = ("-", -ticks) if ticks < 0 else ("", ticks)
    days, ticks = divmod(ticks, 86400 * _TICKS_PER_SECOND)
    hours, ticks = divmod(ticks, 3600 * _TICKS_PER_SECOND)
    minutes, ticks = divmod(ticks, 60 * _TICKS_PER_SECOND)
    whole, fraction = divmod(ticks, _TICKS_PER_SECOND)
    time = "".join(f"{value}{unit}" for value, unit in ((hours, "H"), (minutes, "M")) if value)
    if whole or fraction:
        time += f"{whole}.{fraction:07d}".rstrip("0").rstrip(".") + "S"
    text = "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")
    return sign + text if text != "P" else "PT0S"


def parse_duration(text: str) -> float | None:
    """Seconds of an ``xs:duration``; ``None`` for ``TimeSpan.MaxValue`` (or beyond).

    :class:`ValueError` names a malformed or negative one."""
    ticks = duration_ticks(text)
    if ticks < 0:
        raise ValueError(f"{text!r} is not an ISO 8601 duration of zero or more")
    if ticks >= _MAX_TICKS:
        return None
    return ticks / _TICKS_PER_SECOND


def format_duration(seconds: float | None) -> str:
    """An ``xs:duration`` as the service writes it (``None``: ``TimeSpan.MaxValue``)."""
    if seconds is None:
        return NEVER
    ticks = round(seconds * _TICKS_PER_SECOND)
    return NEVER if ticks >= _MAX_TICKS else ticks_duration(ticks)
