"""A fake namespace on ::1: its connection strings (sbmgmt.auth.format_connection_string)
take our client to its AMQP port and the official Python administration client to its HTTP
port, whose SAS check reads the IPv6 host in brackets as the SDK signs it. (The official
SDKs' own transports cannot reach an IPv6 literal: the Python SDK's AMQP transport looks up
``:``, and the JavaScript SDK's HTTP client ``[::1]``; their parsing is in
tests/unit/test_connection_string_format.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.servicebus.management import ServiceBusAdministrationClient

from fakes import FakeNamespace
from fakes._loopback import ipv6_loopback
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.entities import plain_http_transport
from sbmgmt.auth import parse_connection_string


@pytest.fixture
def fake_on_ipv6() -> Iterator[FakeNamespace]:
    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    with FakeNamespace(host="::1", http_port=0) as namespace:
        yield namespace


def test_both_connection_strings_name_the_ipv6_host(fake_on_ipv6: FakeNamespace) -> None:
    http = fake_on_ipv6.http_connection_string
    assert http is not None
    for text, port in ((fake_on_ipv6.connection_string, fake_on_ipv6.port),
                       (http, fake_on_ipv6.http_port)):
        assert text.startswith(f"Endpoint=sb://[::1]:{port};")
        parsed = parse_connection_string(text)
        assert (parsed.fully_qualified_namespace, parsed.port) == ("::1", port)


def test_the_administration_client_and_ours_reach_it(fake_on_ipv6: FakeNamespace) -> None:
    http = fake_on_ipv6.http_connection_string
    assert http is not None
    with ServiceBusAdministrationClient.from_connection_string(
            http, transport=plain_http_transport(), retry_total=0) as admin:
        admin.create_queue("q")
        assert [queue.name for queue in admin.list_queues()] == ["q"]
    fake_on_ipv6.send("q", Message(body=b"over ::1"))
    with ManagementClient.from_connection_string(fake_on_ipv6.connection_string) as client:
        assert [m.body for m in client.entity("q").peek_messages(0, 10)] == [b"over ::1"]
