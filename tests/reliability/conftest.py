"""Fixtures of the reliability suite: a fresh fake per test, and a thread-leak check."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from fakes import FakeNamespace

from ._cases import new_namespace

_THREAD_DEADLINE = 10.0


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    namespace = new_namespace()
    try:
        yield namespace
    finally:
        namespace.stop()


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every thread a test starts (clients, the fake, workers) is gone soon after it ends."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + _THREAD_DEADLINE
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert leaked == [], f"threads left running: {[t.name for t in leaked]}"


def wait_until(condition: Callable[[], bool], what: str, deadline: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)
