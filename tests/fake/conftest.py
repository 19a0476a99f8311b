"""The official SDK's client on the fake that the SDK peer tests share (the fake namespace's
fixtures are the plugin's, imported in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.servicebus import ServiceBusClient

from fakes import FakeNamespace

__all__ = ["sdk"]


@pytest.fixture
def sdk(fake_namespace: FakeNamespace) -> Iterator[ServiceBusClient]:
    """The official SDK's client on the test's fake namespace, without retries (a refusal
    is raised at once)."""
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as client:
        yield client
