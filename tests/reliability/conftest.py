"""Fixtures of the reliability suite: a fresh fake per test, and a thread-leak check."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from fakes import FakeNamespace
from tests import _waiting

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

    def leaked() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in before and t.is_alive()]

    _waiting.wait_until(lambda: not leaked(), _THREAD_DEADLINE)
    assert leaked() == [], f"threads left running: {[t.name for t in leaked()]}"


def wait_until(condition: Callable[[], bool], what: str, deadline: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``deadline`` seconds."""
    if not _waiting.wait_until(condition, deadline):
        pytest.fail(f"timed out waiting for {what}")
