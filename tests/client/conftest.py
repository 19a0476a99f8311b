"""Fixtures for client tests: a fake namespace on loopback and clients bound to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient

from ._silent_server import SilentServer


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("q")
        namespace.add_queue("sq", requires_session=True)
        namespace.add_topic("t")
        namespace.add_subscription("t", "s")
        yield namespace


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
        yield c


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.stop()
