"""A first connection that cannot be opened fails the waiting calls at once, naming the
host, the port and the cause; a connection that was open once is reconnected instead.

Every peer here is on loopback (a port bound then closed, a plain TCP listener where TLS
is expected) or a name under ``.invalid``, which resolves nowhere without any traffic.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._client.client_core import ClientCore
from sbmgmt._drivers.io_thread import Endpoint, IOThread
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.auth import SasKeyTokenProvider
from sbmgmt.client import EntityClient
from sbmgmt.errors import ConnectCause, ConnectFailedError, OperationTimeoutError

from .test_protocol_mismatch import HeaderServer

# Far beyond what a prompt failure takes: reaching it would be the old 30 s hang.
LONG_TIMEOUT = 60.0
KEY = "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def emulator_string(host: str, port: int) -> str:
    return f"Endpoint=sb://{host}:{port};{KEY};UseDevelopmentEmulator=true"


@pytest.fixture
def garbage() -> Iterator[HeaderServer]:
    """Plain TCP on loopback: answers whatever comes (a TLS hello) with text, and closes."""
    listener = HeaderServer(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    yield listener
    listener.stop()


def test_refused_port_fails_at_once_naming_host_port_and_cause() -> None:
    port = closed_port()
    with (ManagementClient.from_connection_string(
            emulator_string("127.0.0.1", port), timeout=LONG_TIMEOUT) as client,
          pytest.raises(ConnectFailedError) as failed):
        client.entity("q").peek_messages()
    error = failed.value
    assert error.cause is ConnectCause.REFUSED
    assert (error.host, error.port) == ("127.0.0.1", port)
    assert f"cannot connect to 127.0.0.1:{port}: connection refused" in str(error)
    assert error.retryable and not error.may_have_been_applied


def connection_attempts(caplog: pytest.LogCaptureFixture) -> int:
    """Connections that failed (the engine logs each loss once)."""
    return sum("connection lost" in record.getMessage() for record in caplog.records)


def test_refused_port_is_retried_by_the_policy_then_raised(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "sbmgmt.io")
    attempts = 3
    policy = RetryPolicy(max_attempts=attempts, initial_backoff=0.01, max_backoff=0.02)
    port = closed_port()
    with ManagementClient.from_connection_string(
            emulator_string("127.0.0.1", port), timeout=LONG_TIMEOUT, retry=policy) as client:
        with pytest.raises(ConnectFailedError):
            client.entity("q").peek_messages()
        assert connection_attempts(caplog) == attempts
        with pytest.raises(ConnectFailedError):  # the client stays usable, and fails again
            client.entity("q").peek_messages()
        assert connection_attempts(caplog) == 2 * attempts


def test_unresolvable_name_fails_at_once_and_is_not_retried(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "sbmgmt.io")
    with (ManagementClient.from_connection_string(
            f"Endpoint=sb://nohost.invalid/;{KEY}", timeout=LONG_TIMEOUT) as client,
          pytest.raises(ConnectFailedError) as failed):
        client.entity("q").peek_messages()
    error = failed.value
    assert error.cause is ConnectCause.NAME_NOT_FOUND
    assert "cannot connect to nohost.invalid:5671: the host name was not found" in str(error)
    assert not error.retryable
    assert connection_attempts(caplog) == 1


def test_tls_handshake_with_a_plain_listener_fails_at_once(garbage: HeaderServer) -> None:
    tokens = SasKeyTokenProvider("RootManageSharedAccessKey", "SAS_KEY_VALUE")
    core = ClientCore(Endpoint("localhost", garbage.port, tls=True), tokens,
                      timeout=LONG_TIMEOUT, window=8, retry=None, driver=IOThread)
    try:
        with pytest.raises(ConnectFailedError) as failed:
            EntityClient(core, "q").peek_messages()
    finally:
        core.close()
    error = failed.value
    assert error.cause is ConnectCause.TLS
    assert f"cannot connect to localhost:{garbage.port}: the TLS handshake failed" in str(error)
    assert "SSL" in str(error)  # the handshake's own reason follows
    assert not error.retryable


def test_asyncio_client_fails_at_once_too() -> None:
    port = closed_port()

    async def peek() -> None:
        async with AsyncManagementClient.from_connection_string(
                emulator_string("127.0.0.1", port), timeout=LONG_TIMEOUT) as client:
            await client.entity("q").peek_messages()

    with pytest.raises(ConnectFailedError) as failed:
        asyncio.run(peek())
    assert failed.value.cause is ConnectCause.REFUSED


def test_a_connection_that_was_open_once_is_waited_for_not_failed_at_once() -> None:
    fake = FakeNamespace()
    with fake:
        fake.add_queue("q")
        client = ManagementClient.from_connection_string(fake.connection_string, timeout=1.0)
        assert client.entity("q").peek_messages() == []
    # the fake is gone: its port refuses, as a restarting service's would
    with client, pytest.raises(OperationTimeoutError) as timed_out:
        client.entity("q").peek_messages()
    assert not isinstance(timed_out.value, ConnectFailedError)
    assert "ECONNREFUSED" in str(timed_out.value)  # the last connection problem, named


def test_locking_a_session_fails_at_once_too() -> None:
    with (ManagementClient.from_connection_string(
            f"Endpoint=sb://nohost.invalid/;{KEY}", timeout=LONG_TIMEOUT) as client,
          pytest.raises(ConnectFailedError) as failed,
          client.entity("q").session("s1")):
        pass
    assert failed.value.cause is ConnectCause.NAME_NOT_FOUND
    assert str(failed.value).startswith("locking session 's1' of 'q': cannot connect to ")


def test_declaring_a_transaction_fails_at_once_too() -> None:
    port = closed_port()
    with (ManagementClient.from_connection_string(
            emulator_string("127.0.0.1", port), timeout=LONG_TIMEOUT) as client,
          pytest.raises(ConnectFailedError) as failed,
          client.transaction()):
        pass
    assert failed.value.cause is ConnectCause.REFUSED
    assert str(failed.value).startswith(f"declare: cannot connect to 127.0.0.1:{port}")
