"""Fixtures for client tests: a server that never answers. The fake namespace (``fake``)
and the client on it (``client``) are the suite's (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._silent_server import SilentServer


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.stop()
