"""What the administration API needs of the namespace it serves."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .._store import Store

__all__ = ["AdminNamespace"]


@dataclass(frozen=True)
class AdminNamespace:
    """The namespace's store and the lock that guards it, its clock, keys and name, and the
    two hooks of a change: ``changed`` wakes the AMQP server (new entities, new settings),
    ``detach`` closes the AMQP links to deleted entity paths (called without the lock)."""

    store: Store
    lock: threading.RLock
    now: Callable[[], float]
    keys: Mapping[str, str]
    name: str
    accept_any_token: bool
    changed: Callable[[], None]
    detach: Callable[[list[str]], object]
