"""Make the fake refuse one schedule-message request (the fake runs in the test process)."""

from __future__ import annotations

from typing import Any

import pytest

import fakes._management as management
from fakes._errors import ArgumentError
from sbmgmt.ops import schedule_message


class FailOnce:
    """Fails the ``nth`` schedule-message request with a 400, then lets all others pass."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, nth: int) -> None:
        self.calls = 0
        self.failed = False
        self._nth = nth
        self._handler = management._HANDLERS[schedule_message.OPERATION]
        monkeypatch.setitem(management._HANDLERS, schedule_message.OPERATION, self)

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.calls == self._nth and not self.failed:
            self.failed = True
            raise ArgumentError("injected schedule failure")
        return self._handler(*args)
