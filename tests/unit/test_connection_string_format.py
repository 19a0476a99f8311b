"""One function writes connection strings (sbmgmt.auth.format_connection_string, with
url_host bracketing an IPv6 address): what it writes reads back as it was, with IPv4, IPv6
and names, by our parser and by both official SDKs' (Python's parse_connection_string and
administration client; JavaScript's parseServiceBusConnectionString, tests/js/)."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit

import pytest
from azure.servicebus import parse_connection_string as sdk_parse
from azure.servicebus.management import ServiceBusAdministrationClient

from sbmgmt.actions.entities import admin_connection_string
from sbmgmt.auth import (
    ConnectionString,
    format_connection_string,
    parse_connection_string,
    url_host,
)
from tests.js._node import run_script

HOSTS = ["127.0.0.1", "::1", "fe80::1:2", "localhost", "contoso.servicebus.windows.net"]


def _emulator(host: str, port: int | None) -> ConnectionString:
    return ConnectionString(host, port, shared_access_key_name="RootManageSharedAccessKey",
                            shared_access_key="SAS_KEY_VALUE", use_development_emulator=True)


@pytest.mark.parametrize(("host", "expected"), [
    ("127.0.0.1", "127.0.0.1"), ("::1", "[::1]"), ("fe80::1:2", "[fe80::1:2]"),
    ("[::1]", "[::1]"), ("localhost", "localhost"), ("ns.servicebus.windows.net",
                                                     "ns.servicebus.windows.net")])
def test_url_host_brackets_ipv6_addresses_only(host: str, expected: str) -> None:
    assert url_host(host) == expected


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("port", [None, 5300])
def test_what_is_written_reads_back_as_it_was(host: str, port: int | None) -> None:
    emulator = _emulator(host, port) if host in ("127.0.0.1", "::1", "localhost") else None
    signed = ConnectionString(host, port, shared_access_signature="SharedAccessSignature "
                              "sr=a&sig=b&se=1&skn=k", entity_path="q")
    for written in (emulator, signed):
        if written is not None:
            assert parse_connection_string(format_connection_string(written)) == written


def test_the_written_form_is_the_emulators() -> None:
    assert format_connection_string(_emulator("::1", 5672)) == (
        "Endpoint=sb://[::1]:5672;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true")


@pytest.mark.parametrize("host", HOSTS)
def test_the_python_sdk_reads_the_host_and_port(host: str) -> None:
    text = format_connection_string(dataclasses.replace(_emulator("127.0.0.1", 5300),
                                                        fully_qualified_namespace=host,
                                                        use_development_emulator=False))
    endpoint = urlsplit(sdk_parse(text).endpoint)
    assert (endpoint.hostname, endpoint.port) == (host.lower(), 5300)
    with ServiceBusAdministrationClient.from_connection_string(text) as admin:
        assert admin.fully_qualified_namespace == f"{url_host(host)}:5300"


def test_the_clis_admin_string_moves_only_the_port() -> None:
    amqp = format_connection_string(_emulator("::1", 5672))
    assert admin_connection_string(amqp, 5300) == format_connection_string(_emulator("::1", 5300))


def test_the_javascript_sdk_reads_the_host_and_port() -> None:
    texts = [format_connection_string(_emulator(host, 5300)) for host in HOSTS]
    unbracketed = "Endpoint=sb://::1:5300;SharedAccessKeyName=k;SharedAccessKey=v"
    parsed = run_script("connection_strings.mjs", *texts, unbracketed)["parsed"]
    assert [(entry.get("hostname"), entry.get("port")) for entry in parsed] == [
        (url_host(host), "5300") for host in HOSTS] + [(None, None)]
    assert parsed[-1] == {"error": "Invalid URL"}  # what the fake's HTTP string used to be
