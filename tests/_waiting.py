"""Waiting in real time for something another thread (or task) does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: How often a condition is checked.
POLL = 0.01


def wait_until(condition: Callable[[], bool], bound: float = 10.0) -> bool:
    """Poll ``condition`` every 10 ms until it holds or ``bound`` seconds pass; whether it
    holds."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(POLL)
    return condition()


async def wait_until_async(condition: Callable[[], bool], bound: float = 10.0) -> bool:
    """:func:`wait_until` on an event loop: the loop runs while it waits."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if condition():
            return True
        await asyncio.sleep(POLL)
    return condition()
