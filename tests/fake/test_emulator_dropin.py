"""``python -m fakes`` where the emulator's container was: its Config.json (from CONFIG_PATH),
its health check, and its installer's Python sample program's flow (wait for ``/health``, then
send and receive on ``localhost``) with azure-servicebus. The tests run the fake on ports the
system picks (``--port 0 --http-port 0``): they never bind 5672 or 5300. That a connection
string without a port means 5672 is the SDK's reading of it, tested on its own below.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import URLError

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusConnectionError

from tests._waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).parent / "configs" / "every_form.json"
EMULATOR_CONNECTION_STRING = (
    "Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;"
    "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")


class Served:
    """A ``python -m fakes`` process and the two lines it printed."""

    def __init__(self, process: subprocess.Popen[str], connection_string: str,
                 http: str) -> None:
        self.process = process
        self.connection_string = connection_string
        self.http = http


def start_fakes(*args: str, env: dict[str, str] | None = None) -> Served:
    """``python -m fakes`` with ``args`` (and the environment ``env`` adds), once it printed
    its connection string and HTTP base URL."""
    process = subprocess.Popen([sys.executable, "-m", "fakes", *args], cwd=ROOT,
                               env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    connection_string = process.stdout.readline().strip()
    http = process.stdout.readline().strip()
    if not http:
        process.kill()
        _, stderr = process.communicate(timeout=30)
        pytest.fail(f"python -m fakes did not start: {stderr}")
    return Served(process, connection_string, http)


def stop(served: Served) -> int:
    served.process.send_signal(signal.SIGTERM)
    try:
        served.process.communicate(timeout=30)  # reads and closes the pipes
        return served.process.returncode
    finally:
        if served.process.poll() is None:
            served.process.kill()
            served.process.communicate()


@pytest.fixture
def emulator() -> Iterator[Served]:
    """The fake as a new user starts it: the config from CONFIG_PATH, every default but
    the ports (which the tests leave to the system)."""
    served = start_fakes("--port", "0", "--http-port", "0", env={"CONFIG_PATH": str(CONFIG)})
    yield served
    assert stop(served) == 0


def wait_for_health(base: str, timeout: float = 30.0) -> dict[str, Any]:
    """Poll ``GET /health`` until it answers 200, as the emulator's samples do first."""
    answers: list[dict[str, Any]] = []

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as response:
                if response.status == 200:
                    answers.append(json.loads(response.read()))
        except URLError:
            return False
        return bool(answers)

    assert wait_until(healthy, timeout), f"{base}/health did not answer 200 in {timeout} s"
    return answers[0]


def test_the_installer_sample_flow_health_then_send_and_receive_on_localhost(
        emulator: Served) -> None:
    assert emulator.connection_string.startswith("Endpoint=sb://localhost:")
    assert emulator.http.startswith("http://localhost:")
    assert wait_for_health(emulator.http) == {"status": "healthy",
                                              "message": "Service is healthy."}
    with ServiceBusClient.from_connection_string(emulator.connection_string) as client:
        with client.get_queue_sender(queue_name="queue.1") as sender:
            sender.send_messages(ServiceBusMessage("Hello, Azure Service Bus!"))
        with client.get_queue_receiver(queue_name="queue.1") as receiver:
            received = receiver.receive_messages(max_message_count=1, max_wait_time=5)
            for message in received:
                receiver.complete_message(message)
    assert [str(m) for m in received] == ["Hello, Azure Service Bus!"]


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
def test_localhost_is_served_on_both_loopbacks(emulator: Served, family: int) -> None:
    if family == socket.AF_INET6 and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine: the fake serves 127.0.0.1 alone")
    address = "127.0.0.1" if family == socket.AF_INET else "::1"
    amqp = int(emulator.connection_string.split(";")[0].rsplit(":", 1)[1])
    http = int(emulator.http.rsplit(":", 1)[1])
    for port in (amqp, http):
        with socket.socket(family) as probe:
            probe.settimeout(5)
            probe.connect((address, port))
    url_host = "127.0.0.1" if family == socket.AF_INET else "[::1]"
    assert wait_for_health(f"http://{url_host}:{http}")["status"] == "healthy"


def test_the_emulator_environment_variables_set_the_ports(tmp_path: Path) -> None:
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        amqp, http = one.getsockname()[1], two.getsockname()[1]
    served = start_fakes("--host", "127.0.0.1", env={
        "EMULATOR_AMQP_PORT": str(amqp), "EMULATOR_HTTP_PORT": str(http),
        "CONFIG_PATH": str(CONFIG)})
    try:
        assert served.connection_string.startswith(f"Endpoint=sb://127.0.0.1:{amqp};")
        assert served.http == f"http://127.0.0.1:{http}"
        assert wait_for_health(served.http)["status"] == "healthy"
    finally:
        assert stop(served) == 0


@pytest.mark.parametrize("which", ["--port", "--http-port"])
def test_a_port_already_taken_is_one_line_and_exit_2(which: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        ports = {"--port": "0", "--http-port": "0", which: port}
        done = subprocess.run([sys.executable, "-m", "fakes", "--host", "127.0.0.1",
                               *[x for pair in ports.items() for x in pair]], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot listen")
    assert port in lines[0] and "already in use" in lines[0]


def test_help_is_plain_text() -> None:
    done = subprocess.run([sys.executable, "-m", "fakes", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    assert "``" not in done.stdout
    for default in ("5672", "5300", "CONFIG_PATH", "EMULATOR_HTTP_PORT", "EMULATOR_AMQP_PORT"):
        assert default in done.stdout


def test_a_connection_string_without_a_port_means_5672_to_the_sdk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator's own connection string names no port: the SDK connects to 5672. The test
    does not bind 5672: it records where the SDK's socket connects, and refuses it."""
    tried: list[tuple[Any, ...]] = []

    def refuse(self: socket.socket, address: Any) -> None:
        tried.append(tuple(address))
        raise ConnectionRefusedError("refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    client = ServiceBusClient.from_connection_string(EMULATOR_CONNECTION_STRING,
                                                     retry_total=0)
    with client, pytest.raises(ServiceBusConnectionError):
        client.get_queue_sender("queue.1").__enter__()
    assert tried
    assert {address[1] for address in tried} == {5672}


def test_on_amqps_own_port_the_fake_prints_the_emulators_connection_string() -> None:
    from fakes import FakeNamespace

    # not started: nothing binds 5672; the string is what start would print
    assert FakeNamespace(host="localhost", port=5672).connection_string == \
        EMULATOR_CONNECTION_STRING
    assert FakeNamespace(host="::1", port=1234).connection_string.startswith(
        "Endpoint=sb://[::1]:1234;")
