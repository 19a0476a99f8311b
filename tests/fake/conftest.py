"""The fake namespace's fixtures, imported here while the package is not pip-installed, and
the official SDK's client on the fake that the SDK peer tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.servicebus import ServiceBusClient

from fakes import FakeNamespace
from fakes.pytest_plugin import fake_namespace, fake_namespace_factory

__all__ = ["fake_namespace", "fake_namespace_factory", "sdk"]


@pytest.fixture
def sdk(fake_namespace: FakeNamespace) -> Iterator[ServiceBusClient]:
    """The official SDK's client on the test's fake namespace, without retries (a refusal
    is raised at once)."""
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as client:
        yield client
