"""Fixtures for the administration API: a fake namespace with its HTTP port, and
azure-servicebus's administration clients (sync and asyncio) pointed at that plain port.

azure-servicebus 7.15 builds ``https://`` URLs whatever the connection string says; the
transports here send them as ``http://`` (the sync one is the CLI's, the asyncio one the same
on azure-core's aiohttp transport, the asyncio client's default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from azure.core.pipeline.transport import AioHttpTransport
from azure.servicebus import ServiceBusClient
from azure.servicebus.aio.management import (
    ServiceBusAdministrationClient as AsyncAdministrationClient,
)
from azure.servicebus.management import ServiceBusAdministrationClient

from fakes import FakeNamespace
from fakes.pytest_plugin import FakeEntities, declared
from sbmgmt.cli._entities import plain_http_transport


class AsyncPlainHttpTransport(AioHttpTransport):  # type: ignore[misc]
    """azure-core's asyncio transport, sending ``https://`` URLs as ``http://``."""

    async def send(self, request: Any, **kwargs: Any) -> Any:
        request.url = request.url.replace("https://", "http://", 1)
        return await super().send(request, **kwargs)


@pytest.fixture
def fake(request: pytest.FixtureRequest,
         fake_namespace_factory: Callable[..., FakeNamespace]) -> FakeNamespace:
    """A namespace with its HTTP (administration) port on, and no entity unless the test
    declares some (the plugin's ``fake_namespace`` marker)."""
    return fake_namespace_factory(**{"http_port": 0, **declared(request, FakeEntities())})


@pytest.fixture
def admin(fake: FakeNamespace) -> Iterator[ServiceBusAdministrationClient]:
    assert fake.http_connection_string is not None
    with ServiceBusAdministrationClient.from_connection_string(
            fake.http_connection_string, transport=plain_http_transport(),
            retry_total=0) as client:
        yield client


def async_admin(fake: FakeNamespace) -> AsyncAdministrationClient:
    """The asyncio administration client (no pytest asyncio plugin here: tests run their
    coroutine with ``asyncio.run`` and use this as an async context manager in it)."""
    assert fake.http_connection_string is not None
    return AsyncAdministrationClient.from_connection_string(
        fake.http_connection_string, transport=AsyncPlainHttpTransport(), retry_total=0)


@pytest.fixture
def messaging(fake: FakeNamespace) -> Iterator[ServiceBusClient]:
    """The official messaging client (AMQP) on the same namespace."""
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as client:
        yield client
