"""Exact AMQP types on the way out, checked Python values on the way in.

proton encodes a Python ``int`` as AMQP long and a ``list`` as an AMQP list; the
service wants int32, uint, timestamp and typed arrays in specific places. The
helpers here produce exactly those types, and :class:`Fields` reads a decoded map
back, raising :class:`~sbmgmt.errors.ProtocolError` (never ``KeyError`` or
``TypeError``) when a value is missing or of the wrong type.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, NoReturn

from proton import UNDESCRIBED, Array, Data, Described, int32, symbol, timestamp, uint

from ..errors import ProtocolError

__all__ = [
    "MAX_TIMESTAMP_MS",
    "TIMESPAN_DESCRIPTOR",
    "Fields",
    "datetime_from_ms",
    "int32_value",
    "long_array",
    "ms_from_datetime",
    "string_array",
    "ticks_from_timedelta",
    "timedelta_from_ticks",
    "timespan_value",
    "timestamp_array",
    "timestamp_value",
    "uint_value",
    "uuid_array",
]

_UUID = uuid.UUID
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: .NET ``DateTime.MaxValue`` in milliseconds since the epoch (the page's "all sessions").
MAX_TIMESTAMP_MS = 253402300800000
_MAX_DATETIME = datetime.max.replace(tzinfo=timezone.utc)


def ms_from_datetime(value: datetime) -> int:
    """Milliseconds since the Unix epoch; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    if value >= _MAX_DATETIME:
        return MAX_TIMESTAMP_MS
    delta = value - _EPOCH
    return (delta.days * 86_400_000) + (delta.seconds * 1000) + (delta.microseconds // 1000)


def datetime_from_ms(ms: int) -> datetime:
    """A tz-aware UTC datetime; the .NET max value and beyond become ``datetime.max``."""
    if ms >= MAX_TIMESTAMP_MS:
        return _MAX_DATETIME
    return _EPOCH + timedelta(0, 0, 0, ms)  # (days, seconds, microseconds, milliseconds)


def timestamp_value(value: datetime) -> timestamp:
    return timestamp(ms_from_datetime(value))


#: A .NET ``TimeSpan`` in AMQP: "TimeSpan | DescribedType | Timespan.Ticks mapped to AMQP type
#: <type name="timespan" class=restricted source="long"> <descriptor
#: name="com.microsoft:timespan" /></type>" (learn.microsoft.com, service-bus-amqp-dotnet,
#: "Message serialization", the .NET-to-AMQP type mapping). A tick is 100 nanoseconds.
TIMESPAN_DESCRIPTOR = symbol("com.microsoft:timespan")
_TICKS_PER_MICROSECOND = 10


def ticks_from_timedelta(value: timedelta) -> int:
    """The .NET ``TimeSpan`` ticks (100 ns) of a duration (exact: a timedelta holds µs)."""
    return (value // timedelta(microseconds=1)) * _TICKS_PER_MICROSECOND


def timedelta_from_ticks(ticks: int) -> timedelta:
    """A duration from .NET ``TimeSpan`` ticks, to the nearest microsecond (a timedelta
    holds no finer); every ``long`` of ticks fits."""
    return timedelta(microseconds=(ticks + _TICKS_PER_MICROSECOND // 2) // _TICKS_PER_MICROSECOND)


def timespan_value(value: timedelta) -> Described:
    """A duration as the ``com.microsoft:timespan`` described long of its ticks."""
    return Described(TIMESPAN_DESCRIPTOR, ticks_from_timedelta(value))


def int32_value(value: int) -> int32:
    return int32(value)


def uint_value(value: int) -> uint:
    return uint(value)


def _array(type_code: int, values: Iterable[Any]) -> Array:
    # proton's stubs type the descriptor as data, but UNDESCRIBED is its documented marker.
    return Array(UNDESCRIBED, type_code, *values)  # type: ignore[arg-type]


def uuid_array(values: Iterable[uuid.UUID]) -> Array:
    return _array(Data.UUID, values)


def long_array(values: Iterable[int]) -> Array:
    return _array(Data.LONG, values)


def string_array(values: Iterable[str]) -> Array:
    return _array(Data.STRING, values)


def timestamp_array(values: Iterable[datetime]) -> Array:
    return _array(Data.TIMESTAMP, (timestamp(ms_from_datetime(v)) for v in values))


class Fields:
    """Typed reads from a decoded AMQP map, for one operation's error messages."""

    __slots__ = ("_map", "_where")

    def __init__(self, value: Any, where: builtins.str) -> None:
        if not isinstance(value, Mapping):
            raise ProtocolError(
                f"{where}: expected a map, got {type(value).__name__}", operation=where
            )
        self._map: Mapping[Any, Any] = value
        self._where = where

    @property
    def where(self) -> builtins.str:
        """The operation (and path inside its body) these fields belong to."""
        return self._where

    def _fail(self, key: builtins.str, expected: builtins.str, value: Any) -> NoReturn:
        got = "nothing" if value is None else type(value).__name__
        raise ProtocolError(
            f"{self._where}: field {key!r} must be {expected}, got {got}",
            operation=self._where,
        )

    def has(self, key: builtins.str) -> bool:
        return self._map.get(key) is not None

    def raw(self, key: builtins.str) -> Any:
        return self._map.get(key)

    def int(self, key: builtins.str, *, default: builtins.int | None = None) -> builtins.int:
        value = self._map.get(key)
        if value is None and default is not None:
            return default
        if isinstance(value, builtins.int) and not isinstance(value, bool):
            return builtins.int(value)
        self._fail(key, "an integer", value)

    def str(self, key: builtins.str) -> builtins.str:
        value = self._map.get(key)
        if isinstance(value, builtins.str):
            return builtins.str(value)
        self._fail(key, "a string", value)

    def optional_str(self, key: builtins.str) -> builtins.str | None:
        value = self._map.get(key)
        if value is None:
            return None
        if isinstance(value, builtins.str):
            return builtins.str(value)
        self._fail(key, "a string", value)

    def optional_bytes(self, key: builtins.str) -> builtins.bytes | None:
        value = self._map.get(key)
        if value is None:
            return None
        if isinstance(value, (builtins.bytes, bytearray, memoryview)):
            return builtins.bytes(value)
        self._fail(key, "binary", value)

    def bytes(self, key: builtins.str) -> builtins.bytes:
        value = self.optional_bytes(key)
        if value is None:
            self._fail(key, "binary", None)
        return value

    def uuid(self, key: builtins.str) -> _UUID:
        value = self._map.get(key)
        if isinstance(value, _UUID):
            return value
        self._fail(key, "a uuid", value)

    def timestamp(self, key: builtins.str) -> datetime:
        value = self._map.get(key)
        if isinstance(value, builtins.int) and not isinstance(value, bool):
            return _checked_datetime(value, self, key)
        self._fail(key, "a timestamp", value)

    def optional_timestamp(self, key: builtins.str) -> datetime | None:
        return None if self._map.get(key) is None else self.timestamp(key)

    def map(self, key: builtins.str) -> Fields:
        return Fields(self._map.get(key), f"{self._where}.{key}")

    def optional_mapping(self, key: builtins.str) -> Mapping[Any, Any] | None:
        value = self._map.get(key)
        if value is None:
            return None
        if isinstance(value, Mapping):
            return value
        self._fail(key, "a map", value)

    def sequence(self, key: builtins.str) -> list[Any]:
        """An AMQP array or list (both are accepted: peers differ)."""
        value = self._map.get(key)
        if isinstance(value, Array):
            return list(value.elements)
        if isinstance(value, list):
            return value
        self._fail(key, "an array", value)

    def items(self, key: builtins.str, kind: type, expected: builtins.str) -> list[Any]:
        values = self.sequence(key)
        for item in values:
            if not isinstance(item, kind) or isinstance(item, bool):
                self._fail(key, f"an array of {expected}", item)
        return values

    def timestamps(self, key: builtins.str) -> list[datetime]:
        # A renew-lock reply's expirations mostly repeat one millisecond value: each
        # distinct value becomes a datetime once.
        converted: dict[builtins.int, datetime] = {}
        result = []
        for ms in self.items(key, builtins.int, "timestamp"):
            value = converted.get(ms)
            if value is None:
                value = converted[ms] = _checked_datetime(ms, self, key)
            result.append(value)
        return result

    def uuids(self, key: builtins.str) -> list[_UUID]:
        return self.items(key, _UUID, "uuid")

    def longs(self, key: builtins.str) -> list[builtins.int]:
        return [builtins.int(v) for v in self.items(key, builtins.int, "long")]

    def strings(self, key: builtins.str) -> list[builtins.str]:
        return [builtins.str(v) for v in self.items(key, builtins.str, "string")]

    def maps(self, key: builtins.str) -> list[Fields]:
        return [Fields(item, f"{self._where}.{key}[{i}]") for i, item in
                enumerate(self.sequence(key))]


def _checked_datetime(ms: int, fields: Fields, key: str) -> datetime:
    try:
        return datetime_from_ms(ms)
    except (OverflowError, ValueError):
        fields._fail(key, "a timestamp in range", ms)
