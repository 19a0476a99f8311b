"""The engine loop hands what a timer or a wake-up raises to ``on_handler_error`` when the
handler has one (the fake's server goes on), and ends otherwise (the client's I/O thread
fails its requests, as before)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sbmgmt.transport.selector_loop import EngineLoop


class _Contained:
    def __init__(self) -> None:
        self.loop: EngineLoop | None = None
        self.errors: list[tuple[Any, str]] = []

    def on_wake(self) -> None:
        raise KeyError("from a wake-up")

    def on_handler_error(self, event: Any, error: Exception) -> None:
        self.errors.append((event, str(error)))


def _boom() -> None:
    raise RuntimeError("from a timer")


def test_a_failing_timer_or_wake_up_goes_to_on_handler_error_and_the_loop_goes_on() -> None:
    handler = _Contained()
    loop = EngineLoop(handler, container_id="test")
    loop.schedule(0.0, _boom)
    loop.schedule(0.05, loop.wake)
    loop.schedule(0.2, loop.stop)  # runs only if the loop survived both
    thread = threading.Thread(target=loop.run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    assert handler.errors == [(None, "from a timer"), (None, "'from a wake-up'")]


def test_without_on_handler_error_a_failing_timer_ends_the_loop() -> None:
    loop = EngineLoop(object(), container_id="test")
    loop.schedule(0.0, _boom)
    with pytest.raises(RuntimeError, match="from a timer"):
        loop.run()
