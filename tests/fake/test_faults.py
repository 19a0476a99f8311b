"""Fault injection through ``FakeNamespace.faults``, observed with sbmgmt's client."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from fakes import FakeNamespace, FaultHandle, FaultKind, Faults
from fakes._faults import NO_FAULTS
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.errors import (
    LinkDetachedError,
    OperationTimeoutError,
    ServerBusyError,
    UnauthorizedError,
)
from sbmgmt.message import Message
from sbmgmt.ops import peek_message

ROOT = Path(__file__).resolve().parents[2]
NO_RETRY = RetryPolicy(max_attempts=1)
FAST_RETRY = RetryPolicy(max_attempts=5, initial_backoff=0.01, max_backoff=0.1)


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("q")
        namespace.add_queue("other")
        namespace.send("q", *(Message(body=f"m{i}".encode()) for i in range(3)))
        yield namespace


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5,
                                                 retry=FAST_RETRY) as c:
        yield c


def test_latency_delays_replies_without_losing_them(fake: FakeNamespace,
                                                    client: ManagementClient) -> None:
    handle = fake.faults.latency(0.05, jitter=0.01, entity="q")
    futures = [client.entity("q").submit(peek_message.Request(from_sequence_number=1,
                                                              message_count=3))
               for _ in range(20)]
    results = [f.result(timeout=10) for f in futures]
    assert all(len(r.messages) == 3 for r in results)
    assert handle.hits == 20
    handle.remove()
    assert not handle.active


def test_latency_longer_than_the_timeout_times_out(fake: FakeNamespace) -> None:
    fake.faults.latency(30.0, operation=peek_message.OPERATION)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=0.5,
                                                 retry=NO_RETRY) as client:
        with pytest.raises(OperationTimeoutError):
            client.entity("q").peek_messages(max_count=1)
        fake.faults.clear()
        assert len(client.entity("q").peek_messages(max_count=1)) == 1


def test_latency_is_scoped_to_its_entity(fake: FakeNamespace) -> None:
    fake.faults.latency(30.0, entity="q")
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5,
                                                 retry=NO_RETRY) as client:
        assert client.entity("other").peek_messages(max_count=1) == []


def test_server_busy_answers_503_and_does_not_apply(fake: FakeNamespace) -> None:
    handle = fake.faults.server_busy(1, operation="com.microsoft:schedule-message")
    when = datetime.now(timezone.utc) + timedelta(hours=1)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5,
                                                 retry=NO_RETRY) as client:
        with pytest.raises(ServerBusyError) as caught:
            client.entity("q").schedule_messages([Message(body=b"x")], when)
        assert caught.value.error_condition == "com.microsoft:server-busy"
        assert fake.accounting("q")["scheduled"] == 0
        assert handle.hits == 1 and not handle.active
        assert len(client.entity("q").schedule_messages([Message(body=b"x")], when)) == 1
    assert fake.accounting("q")["scheduled"] == 1


def test_server_busy_is_retried_by_the_client(fake: FakeNamespace) -> None:
    handle = fake.faults.server_busy(2, entity="q")
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10,
                                                 retry=FAST_RETRY) as client:
        assert len(client.entity("q").peek_messages(max_count=2)) == 2
    assert handle.hits == 2


def test_dropped_reply_times_out_and_the_next_one_arrives(fake: FakeNamespace) -> None:
    fake.faults.drop_replies(1)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=0.5,
                                                 retry=NO_RETRY) as client:
        with pytest.raises(OperationTimeoutError):
            client.entity("q").peek_messages(max_count=1)
        assert len(client.entity("q").peek_messages(max_count=1)) == 1
        assert client.stats.late_replies == 0


def test_duplicate_and_foreign_replies_are_dropped_by_the_client(
        fake: FakeNamespace, client: ManagementClient) -> None:
    fake.faults.duplicate_replies(1)
    assert len(client.entity("q").peek_messages(max_count=1)) == 1
    fake.faults.wrong_correlation_id(1)
    with (ManagementClient.from_connection_string(fake.connection_string, timeout=0.5,
                                                  retry=NO_RETRY) as short,
          pytest.raises(OperationTimeoutError)):
        short.entity("q").peek_messages(max_count=1)
    assert len(client.entity("q").peek_messages(max_count=1)) == 1


def test_pause_holds_replies_until_removed(fake: FakeNamespace,
                                           client: ManagementClient) -> None:
    handle = fake.faults.pause(entity="q")
    futures = [client.entity("q").submit(peek_message.Request(from_sequence_number=1,
                                                              message_count=1))
               for _ in range(5)]
    assert client.entity("other").peek_messages(max_count=1) == []
    assert not any(f.done() for f in futures)
    handle.remove()
    assert all(len(f.result(timeout=5).messages) == 1 for f in futures)


def test_detach_fails_pending_then_reattaches(fake: FakeNamespace,
                                              client: ManagementClient) -> None:
    assert len(client.entity("q").peek_messages(max_count=1)) == 1
    fake.faults.pause(entity="q")
    pending = client.entity("q").submit(peek_message.Request(from_sequence_number=1,
                                                             message_count=1))
    assert fake.faults.detach_management_link("Q") >= 1
    with pytest.raises(LinkDetachedError):
        pending.result(timeout=5)
    fake.faults.clear()
    assert len(client.entity("q").peek_messages(max_count=1)) == 1


def test_close_connections_then_reconnect(fake: FakeNamespace,
                                          client: ManagementClient) -> None:
    assert len(client.entity("q").peek_messages(max_count=1)) == 1
    assert fake.faults.close_connections() == 1
    assert len(client.entity("q").peek_messages(max_count=1)) == 1
    assert fake.faults.close_connections() == 1


def test_expire_tokens_detaches_and_the_client_puts_a_new_token(
        fake: FakeNamespace, client: ManagementClient) -> None:
    assert len(client.entity("q").peek_messages(max_count=1)) == 1
    assert fake.faults.expire_tokens() == 2          # the request and the reply link
    assert len(client.entity("q").peek_messages(max_count=1)) == 1


def test_clock_past_token_expiry_detaches_links(fake: FakeNamespace,
                                                client: ManagementClient) -> None:
    assert len(client.entity("q").peek_messages(max_count=1)) == 1
    fake.clock.advance(10 * 24 * 3600)       # past the client's tokens, old and new
    with pytest.raises(UnauthorizedError):
        client.entity("q").peek_messages(max_count=1)


def test_faults_validate_their_arguments(fake: FakeNamespace) -> None:
    with pytest.raises(ValueError):
        fake.faults.drop_replies(0)
    with pytest.raises(ValueError):
        fake.faults.latency(-1)


def test_link_faults_need_a_running_namespace() -> None:
    namespace = FakeNamespace()
    with pytest.raises(RuntimeError):
        namespace.faults.close_connections()


def test_command_line_flags_inject_faults(tmp_path: Path) -> None:
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "orders", "Properties": {}}, {"Name": "other", "Properties": {}}],
        "Topics": []}], "Logging": {"Type": "File"}}}
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes", "--config", str(path), "--port", "0", "--http-port", "0",
         "--server-busy", "1",
         "--latency-ms", "1", "--jitter-ms", "1", "--fault-entity", "orders"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        with ManagementClient.from_connection_string(connection_string, timeout=10,
                                                     retry=NO_RETRY) as client:
            assert client.entity("other").peek_messages() == []
            with pytest.raises(ServerBusyError):
                client.entity("orders").peek_messages()
            assert client.entity("orders").peek_messages() == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)  # reads and closes the pipes: no unclosed file


def test_command_line_refuses_bad_fault_flags() -> None:
    done = subprocess.run([sys.executable, "-m", "fakes", "--port", "0", "--http-port", "0",
                           "--drop-replies", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "count must be at least 1" in done.stderr


#: One way to inject each kind of fault.
INJECT: dict[FaultKind, Callable[[Faults], FaultHandle]] = {
    FaultKind.LATENCY: lambda faults: faults.latency(0.5),
    FaultKind.DROP: lambda faults: faults.drop_replies(1),
    FaultKind.DUPLICATE: lambda faults: faults.duplicate_replies(1),
    FaultKind.WRONG_CORRELATION_ID: lambda faults: faults.wrong_correlation_id(1),
    FaultKind.SERVER_BUSY: lambda faults: faults.server_busy(1),
    FaultKind.MALFORMED: lambda faults: faults.malformed_replies(lambda message_id: None, 1),
    FaultKind.PAUSE: lambda faults: faults.pause(),
}


@pytest.mark.parametrize("kind", list(FaultKind), ids=lambda kind: kind.value)
def test_every_fault_kind_is_injected_and_planned(kind: FaultKind) -> None:
    faults = Faults()
    handle = INJECT[kind](faults)
    assert handle.kind is kind
    assert faults.plan("q", "peek-message") != NO_FAULTS
    assert handle.hits == 1


def test_a_fault_of_no_known_kind_is_an_error_not_latency() -> None:
    faults = Faults()
    handle = faults.latency(0.5)
    handle._rule.kind = "bogus"  # type: ignore[assignment]
    with pytest.raises(AssertionError):
        faults.plan("q", "peek-message")
