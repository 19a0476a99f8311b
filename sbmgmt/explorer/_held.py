"""What a confirmation refers to, held between the question and the answer.

A destructive action that is planned first (a purge's plan, a resubmit's or a move's plan,
an uploaded file to import, a settlement of deferred messages) asks before it acts; the
second click must act on exactly what the question described, which may be too large for
the confirmation form to carry (and must not be changed by it). The first
request keeps it here under a random key that the form carries back; the second takes it
(once). At most :data:`KEPT` are held: an older one is dropped (with ``drop`` called on
it, which removes an uploaded file) and its confirmation answers "no longer held".
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["KEPT", "Held"]

#: The most confirmations waiting at once.
KEPT = 20

_T = TypeVar("_T")


class Held(Generic[_T]):
    """Values waiting for their confirmation, by random key."""

    def __init__(self, drop: Callable[[_T], None] = lambda _value: None) -> None:
        self._values: OrderedDict[str, _T] = OrderedDict()
        self._drop = drop
        self._lock = threading.Lock()

    def put(self, value: _T) -> str:
        """Hold ``value`` until its confirmation.

        Args:
            value: What the confirmation will act on.

        Returns:
            Its key (for the confirmation's form).
        """
        key = secrets.token_urlsafe(12)
        with self._lock:
            self._values[key] = value
            dropped = [self._values.popitem(last=False)[1]
                       for _ in range(len(self._values) - KEPT)]
        for old in dropped:
            self._drop(old)
        return key

    def take(self, key: str) -> _T | None:
        """The value held under ``key``, no longer held (None: unknown or dropped).

        Args:
            key: What :meth:`put` returned.

        Returns:
            The value, or None.
        """
        with self._lock:
            return self._values.pop(key, None)
