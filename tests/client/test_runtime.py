"""Pipelining, timeouts, reconnects, authentication and close, on loopback."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest

from fakes import FakeNamespace
from sbmgmt import ops
from sbmgmt._client.client_core import ClientCore
from sbmgmt._drivers.io_thread import Endpoint, IOThread
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.auth import AccessToken, TokenProvider, generate_sas_token
from sbmgmt.client import EntityClient, ManagementClient
from sbmgmt.errors import (
    ClientClosedError,
    ConnectionLostError,
    OperationTimeoutError,
    UnauthorizedError,
)
from sbmgmt.message import Message
from sbmgmt.testing import MockManagementNode
from tests._waiting import wait_until

from ._silent_server import SilentServer

NO_RETRY = RetryPolicy(max_attempts=1)


def _emulator(port: int, key: str = "SAS_KEY_VALUE") -> str:
    return (f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={key};UseDevelopmentEmulator=true")


def test_1000_requests_from_8_threads(fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=f"m{i}".encode()) for i in range(20)))
    with ManagementClient.from_connection_string(
        fake.connection_string, timeout=30, window=16
    ) as client:
        q = client.entity("q")

        def work(start: int) -> list[tuple[int, int]]:
            out = []
            for i in range(125):
                seq = 1 + (start + i) % 20
                (message,) = q.peek_messages(from_sequence_number=seq, max_count=1)
                out.append((seq, message.sequence_number))
            return out

        with ThreadPoolExecutor(8) as pool:
            results = [r for chunk in pool.map(work, range(8)) for r in chunk]
        stats = client.stats
    assert len(results) == 1000
    assert all(asked == got for asked, got in results)
    assert stats.completed >= 1000 and stats.failed == 0
    assert 1 < stats.max_in_flight <= 16


def test_1000_requests_from_200_tasks(fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=f"m{i}".encode()) for i in range(10)))

    async def main() -> tuple[list[tuple[int, bytes]], int]:
        async with AsyncManagementClient.from_connection_string(
            fake.connection_string, timeout=30, window=32
        ) as client:
            q = client.entity("q")

            async def task(n: int) -> list[tuple[int, bytes]]:
                out = []
                for i in range(5):
                    seq = 1 + (n + i) % 10
                    (message,) = await q.peek_messages(seq, 1)
                    out.append((seq, message.body))
                return out

            chunks = await asyncio.gather(*(task(n) for n in range(200)))
            return [r for chunk in chunks for r in chunk], client.stats.max_in_flight

    results, max_in_flight = asyncio.run(main())
    assert len(results) == 1000
    assert all(body == f"m{seq - 1}".encode() for seq, body in results)
    assert 1 < max_in_flight <= 32


def test_async_submit_pipelines_without_awaiting(fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=f"m{i}".encode()) for i in range(3)))

    async def main() -> list[list[bytes]]:
        async with AsyncManagementClient.from_connection_string(
            fake.connection_string, timeout=30
        ) as client:
            q = client.entity("q")
            futures = [
                q.submit(ops.peek_message.Request(from_sequence_number=seq, message_count=1))
                for seq in (1, 2, 3)
            ]
            responses = await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
            return [[m.body for m in response.messages] for response in responses]

    assert asyncio.run(main()) == [[b"m0"], [b"m1"], [b"m2"]]


def test_no_reply_times_out_and_late_reply_is_dropped(silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(
        _emulator(silent.port), timeout=0.5, retry=NO_RETRY
    ) as client:
        started = time.monotonic()
        with pytest.raises(OperationTimeoutError, match="no reply within"):
            client.entity("q").peek_messages()
        assert time.monotonic() - started < 10.0
        silent.reply_to_held()
        assert wait_until(lambda: client.stats.late_replies == 1)
        assert client.stats.timed_out == 1


def test_idempotent_timeouts_are_retried_within_the_deadline(
        sbmgmt_mock: MockManagementNode) -> None:
    sbmgmt_mock.add(ops.peek_message, error=OperationTimeoutError)  # no reply, ever
    sbmgmt_mock.add(ops.schedule_message, error=OperationTimeoutError)
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.01, deadline=30)
    with ManagementClient.from_connection_string(
        sbmgmt_mock.connection_string, timeout=0.3, retry=policy
    ) as client:
        with pytest.raises(OperationTimeoutError):
            client.entity("q").peek_messages()
        assert client.stats.timed_out == 3
        when = datetime.now(timezone.utc) + timedelta(hours=1)
        with pytest.raises(OperationTimeoutError):
            client.entity("q").schedule_messages([Message(body=b"x")], when)
        assert client.stats.timed_out == 4  # not replayed
    assert [call.operation for call in sbmgmt_mock.calls] == (
        [ops.peek_message.OPERATION] * 3 + [ops.schedule_message.OPERATION])


def test_reconnect_fails_pending_fast_and_never_replays_a_schedule() -> None:
    silent = SilentServer()
    port = silent.port
    client = ManagementClient.from_connection_string(_emulator(port), timeout=30)
    try:
        q = client.entity("q")
        when = datetime.now(timezone.utc) + timedelta(hours=1)
        peek = q.submit(ops.peek_message.Request(from_sequence_number=1, message_count=1))
        with ThreadPoolExecutor(1) as pool:
            scheduled = pool.submit(q.schedule_messages, [Message(body=b"once")], when)
            assert wait_until(lambda: len(silent.held) == 2)
            silent.stop()
            with pytest.raises(ConnectionLostError) as lost:
                scheduled.result(10)
        assert lost.value.may_have_been_applied is True
        assert "may have applied" in str(lost.value)
        peek_error = peek.exception(10)
        assert isinstance(peek_error, ConnectionLostError)
        assert not peek_error.may_have_been_applied
        with FakeNamespace(port=port) as fake:
            fake.add_queue("q")
            assert q.peek_messages() == []  # reconnected; the schedule was not replayed
            assert fake.accounting("q").get("scheduled", 0) == 0
    finally:
        client.close()


def test_wrong_key_is_unauthorized(fake: FakeNamespace) -> None:
    conn = _emulator(fake.port, key="d3Jvbmc=")
    with ManagementClient.from_connection_string(conn, timeout=10) as client, \
            pytest.raises(UnauthorizedError):
        client.entity("q").peek_messages()


def test_expired_sas_token_is_unauthorized(fake: FakeNamespace) -> None:
    audience = f"sb://127.0.0.1:{fake.port}/q"
    token = generate_sas_token(audience, "RootManageSharedAccessKey", "SAS_KEY_VALUE",
                               int(time.time()) - 60)
    conn = (f"Endpoint=sb://127.0.0.1:{fake.port};SharedAccessSignature={token};"
            "UseDevelopmentEmulator=true")
    with ManagementClient.from_connection_string(conn, timeout=10) as client, \
            pytest.raises(UnauthorizedError):
        client.entity("q").peek_messages()


class _ShortLivedTokens(TokenProvider):
    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self.calls = 0

    def get_token(self, audience: str) -> AccessToken:
        self.calls += 1
        expires = time.time() + self.lifetime
        token = generate_sas_token(audience, "RootManageSharedAccessKey", "SAS_KEY_VALUE",
                                   int(expires) + 1)
        return AccessToken(token, expires, "servicebus.windows.net:sastoken")


def test_token_is_refreshed_before_expiry(fake: FakeNamespace) -> None:
    tokens = _ShortLivedTokens(lifetime=2.0)
    core = ClientCore(Endpoint("127.0.0.1", fake.port, tls=False), tokens,
                      timeout=10, window=8, retry=None, driver=IOThread)
    try:
        q = EntityClient(core, "q")
        assert q.peek_messages() == []
        assert tokens.calls == 1
        assert wait_until(lambda: tokens.calls >= 2, bound=20)
        assert q.peek_messages() == []
    finally:
        core.close()


def test_close_with_requests_in_flight(silent: SilentServer) -> None:
    client = ManagementClient.from_connection_string(_emulator(silent.port), timeout=60)
    q = client.entity("q")
    futures = [q.submit(ops.peek_message.Request(from_sequence_number=1, message_count=1))
               for _ in range(50)]
    assert wait_until(lambda: len(silent.held) > 0)
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 5.0
    for future in futures:
        assert isinstance(future.exception(5), ClientClosedError)
    assert client.io_thread_name not in {t.name for t in threading.enumerate()}
    with pytest.raises(ClientClosedError):
        q.peek_messages()
