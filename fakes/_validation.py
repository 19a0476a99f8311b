"""Entity names and property ranges as the service documents them: the one rule that
Config.json, the administration API and the test-facing Python API all apply.

Names (Azure's naming rules for ``Microsoft.ServiceBus``; the emulator's Config.json schema
has the same pattern): a queue or topic has 1 to 260 letters, digits, ``.``, ``-``, ``_``
and ``/``, and starts and ends with a letter or digit; a subscription or rule has 1 to 50 of
the same but ``/``. The fake adds what keeps a path one path: no empty, ``.`` or ``..``
segment between slashes, and no ``Subscriptions`` segment in a queue or topic name (that is
where the service puts a topic's subscriptions). A rule may also be ``$Default``, the name
the service gives the rule a subscription is created with.

Ranges (the service's documentation of each property): ``LockDuration`` 5 s to 5 min,
``DuplicateDetectionHistoryTimeWindow`` 20 s to 7 days, ``MaxDeliveryCount`` at least 1 (a
32-bit integer), ``DefaultMessageTimeToLive`` not negative (0, Config.json's ``PT``, is the
emulator's), ``AutoDeleteOnIdle`` at least 5 min (the test-facing API: any positive time).
The longest time to live or idle time the fake dates is :data:`LONGEST`; a longer one is
"never", as ``TimeSpan.MaxValue`` is. The test-facing Python API
(``FakeNamespace.add_queue`` ...) takes shorter durations on purpose (``short=True``): any
positive lock duration and history window, so that a test need not wait seconds for a lock
or a window to pass; its maximums are the service's.

Every check raises :class:`ValueError` naming the property or name; the administration API
answers it 400, Config.json names its JSON path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._entity_state import EntitySettings

__all__ = ["LONGEST", "check_entity_name", "check_idle", "check_rule_name", "check_settings",
           "check_subscription_name", "check_topic_settings", "check_window", "dated"]

_ENTITY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_\-./]*[A-Za-z0-9])?")
_CHILD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_\-.]*[A-Za-z0-9])?")
_MAX_ENTITY_NAME = 260
_MAX_CHILD_NAME = 50
_DEFAULT_RULE = "$Default"
_DAY = 86400.0
#: The longest duration the fake dates (about 1,000 years); a longer time to live or idle
#: time is kept as "never". Past it, an expiry would fall beyond what a date can hold.
LONGEST = 1000 * 365 * _DAY


@dataclass(frozen=True)
class _Range:
    """A property's bounds in seconds (or a count): ``least`` for the service, ``short``
    for the test-facing API, ``most`` for both (None: no upper bound)."""

    name: str
    least: float
    short: float
    most: float | None
    #: Whether 0 is a value (a time to live of 0, as the emulator's Config.json allows).
    zero: bool = False

    def check(self, value: float | None, short: bool) -> None:
        if value is None:
            return
        least = self.short if short else self.least
        if value < least or (value <= 0 and not (self.zero and value == 0)):
            wanted = "positive" if least <= 0 else f"at least {least:g}"
            raise ValueError(f"{self.name} must be {wanted}, not {value:g}")
        if self.most is not None and value > self.most:
            raise ValueError(f"{self.name} must be at most {self.most:g}, not {value:g}")


_LOCK = _Range("LockDuration (seconds)", 5.0, 0.0, 300.0)
_WINDOW = _Range("DuplicateDetectionHistoryTimeWindow (seconds)", 20.0, 0.0, 7 * _DAY)
_TTL = _Range("DefaultMessageTimeToLive (seconds)", 0.0, 0.0, None, zero=True)
_IDLE = _Range("AutoDeleteOnIdle (seconds)", 300.0, 300.0, None)
_DELIVERIES = _Range("MaxDeliveryCount", 1, 1, 2**31 - 1)


def check_entity_name(name: str) -> str:
    """A queue or topic name (returned), or :class:`ValueError` saying what is wrong."""
    _check_name(name, _ENTITY, _MAX_ENTITY_NAME, "a queue or topic",
                "letters, digits, '.', '-', '_' and '/'")
    for segment in name.split("/"):
        if segment in ("", ".", "..") or segment.lower() == "subscriptions":
            raise ValueError(f"{name!r} is not a valid queue or topic name: no empty, '.', "
                             "'..' or 'Subscriptions' part between slashes")
    return name


def check_subscription_name(name: str) -> str:
    """A subscription name (returned), or :class:`ValueError`."""
    _check_name(name, _CHILD, _MAX_CHILD_NAME, "a subscription",
                "letters, digits, '.', '-' and '_'")
    return name


def check_rule_name(name: str, *, default: bool = True) -> str:
    """A rule name (returned; ``$Default`` too unless ``default`` is false, as in
    Config.json, whose schema's pattern refuses it), or :class:`ValueError`."""
    if not (default and name == _DEFAULT_RULE):
        _check_name(name, _CHILD, _MAX_CHILD_NAME, "a rule",
                    "letters, digits, '.', '-' and '_' (or $Default)")
    return name


def _check_name(name: str, pattern: re.Pattern[str], longest: int, what: str,
                allowed: str) -> None:
    if not isinstance(name, str) or not 1 <= len(name) <= longest:
        shown = repr(name) if not isinstance(name, str) else f"{name[:40]!r}"
        raise ValueError(f"{shown} is not a valid name for {what}: 1 to {longest} characters")
    if not pattern.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid name for {what}: {allowed}, starting and "
                         "ending with a letter or digit")


def dated(seconds: float | None) -> float | None:
    """A time to live or idle time as the fake keeps it: None ("never") past :data:`LONGEST`."""
    return None if seconds is None or seconds > LONGEST else seconds


def check_settings(settings: EntitySettings, *, short: bool = False) -> None:
    """A queue's or subscription's settings within the service's ranges (``short``: the
    test-facing API's shorter durations); :class:`ValueError` names the property."""
    _LOCK.check(settings.lock_duration, short)
    _DELIVERIES.check(settings.max_delivery_count, short)
    _TTL.check(settings.default_ttl, short)
    _WINDOW.check(settings.duplicate_detection_window, short)


def check_topic_settings(window: float | None, default_ttl: float | None, *,
                         short: bool = False) -> None:
    """A topic's history window and time to live within the ranges (as
    :func:`check_settings`)."""
    _WINDOW.check(window, short)
    _TTL.check(default_ttl, short)


def check_window(seconds: float | None) -> None:
    """``DuplicateDetectionHistoryTimeWindow`` within its range, set or not, as the service
    checks and keeps it with duplicate detection off too."""
    _WINDOW.check(seconds, False)


def check_idle(seconds: float | None) -> None:
    """``AutoDeleteOnIdle`` within its range (acted on: ``Store.set_auto_delete``)."""
    _IDLE.check(seconds, False)
