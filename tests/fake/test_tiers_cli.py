"""``python -m fakes --tier / --throttle / --link-idle-timeout``: the flags reach the
namespace (each checked with a client against the process)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusServerBusyError
from proton import Message
from proton.utils import BlockingConnection, LinkDetached

from sbmgmt import ManagementClient
from sbmgmt.auth import generate_sas_token, parse_connection_string
from sbmgmt.errors import TransactionDeclareError

ROOT = Path(__file__).resolve().parents[2]
_CONFIG = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [{"Name": "q"}],
                                          "Topics": []}],
                          "Logging": {"Type": "Console"}}}


@contextmanager
def _fake(tmp_path: Path, *flags: str) -> Iterator[str]:
    """``python -m fakes`` with a queue ``q`` and ``flags``; its connection string."""
    config = tmp_path / "Config.json"
    config.write_text(json.dumps(_CONFIG))
    with (tmp_path / "stderr").open("w") as log:  # its log, which no pipe may hold up
        process = subprocess.Popen(
            [sys.executable, "-m", "fakes", "--config", str(config), "--host", "127.0.0.1",
             "--port", "0", "--http-port", "0", *flags],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            assert process.stdout is not None
            yield process.stdout.readline().strip()
        finally:
            process.terminate()
            process.communicate(timeout=10)


def test_basic_on_the_command_line_refuses_transactions(tmp_path: Path) -> None:
    with _fake(tmp_path, "--tier", "basic") as connection_string, \
            ManagementClient.from_connection_string(connection_string, timeout=10) as client, \
            pytest.raises(TransactionDeclareError, match="'Basic' tier"), client.transaction():
        pass


def test_premium_on_the_command_line_takes_large_messages(tmp_path: Path) -> None:
    with _fake(tmp_path, "--tier", "premium") as connection_string:
        with ServiceBusClient.from_connection_string(connection_string) as client, \
                client.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage(b"x" * 300 * 1024))  # past Standard's 256 KB
        with ManagementClient.from_connection_string(connection_string, timeout=10) as client:
            assert client.entity("q").delete_messages(4000) == 1  # Premium's quota


def test_throttle_and_idle_timeout_on_the_command_line(tmp_path: Path) -> None:
    with _fake(tmp_path, "--throttle", "--link-idle-timeout", "2") as connection_string:
        with ServiceBusClient.from_connection_string(connection_string, retry_total=0) as client, \
                client.get_queue_sender("q") as sender, \
                pytest.raises(ServiceBusServerBusyError, match="Error code: 50009"):
            # more than a second's 1,000 credits in one batch: never let through
            sender.send_messages([ServiceBusMessage(b"") for _ in range(1001)])
        port = connection_string.split("127.0.0.1:", 1)[1].split(";", 1)[0]
        connection = BlockingConnection(f"amqp://127.0.0.1:{port}", allowed_mechs="ANONYMOUS",
                                        timeout=10)
        try:
            replies = connection.create_receiver("$cbs", name="cbs-replies")
            connection.create_sender("$cbs", name="cbs-requests").send(Message(
                body=_token(connection_string), reply_to="cbs-reply",
                properties={"operation": "put-token", "name": "sb://127.0.0.1/q",
                            "type": "servicebus.windows.net:sastoken"}))
            replies.receive()
            connection.create_sender("q")
            with pytest.raises(LinkDetached, match="amqp:link:detach-forced"):
                connection.wait(lambda: False, timeout=10, msg="the idle link's detach")
        finally:
            connection.close()


def _token(connection_string: str) -> str:
    """A SAS token for ``q`` with the key of ``connection_string``."""
    parsed = parse_connection_string(connection_string)
    assert parsed.shared_access_key_name and parsed.shared_access_key
    return generate_sas_token("sb://127.0.0.1/q", parsed.shared_access_key_name,
                              parsed.shared_access_key, int(time.time()) + 3600)
