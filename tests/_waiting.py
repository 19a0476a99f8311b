"""Waiting in real time for something another thread does."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], bound: float = 10.0) -> bool:
    """Poll ``condition`` every 10 ms until it holds or ``bound`` seconds pass; whether it
    holds."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return condition()
