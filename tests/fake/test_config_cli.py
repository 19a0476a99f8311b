"""Config.json loading and errors, and the ``python -m fakes`` command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from fakes import ConfigError, FakeNamespace
from fakes._config import load_config, parse_duration
from sbmgmt import ManagementClient
from sbmgmt.errors import TransactionDeclareError
from sbmgmt.message import Message

ROOT = Path(__file__).resolve().parents[2]

CONFIG = {
    "UserConfig": {
        "Namespaces": [{
            "Name": "sbemulatorns",
            "Queues": [
                {"Name": "orders", "Properties": {"LockDuration": "PT30S", "MaxDeliveryCount": 3}},
                {"Name": "sessions", "Properties": {"RequiresSession": True}},
            ],
            "Topics": [{
                "Name": "events",
                "Properties": {},
                "Subscriptions": [{
                    "Name": "red",
                    "Properties": {},
                    "Rules": [{"Name": "only-red", "Properties": {
                        "FilterType": "Correlation",
                        "CorrelationFilter": {"Properties": {"color": "red"}}}}],
                }],
            }],
        }],
        "Logging": {"Type": "File"},
    }
}


def test_durations() -> None:
    assert parse_duration("PT1M") == timedelta(minutes=1)
    assert parse_duration("P1DT2H") == timedelta(days=1, hours=2)
    assert parse_duration("PT0.5S") == timedelta(seconds=0.5)
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_duration("1 minute")


def test_config_creates_entities_and_rules(tmp_path: Path) -> None:
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(CONFIG))
    namespace = FakeNamespace(str(path))
    namespace.send("events", Message(body=b"r", application_properties={"color": "red"}),
                   Message(body=b"b", application_properties={"color": "blue"}))
    assert namespace.accounting("events/Subscriptions/red")["active"] == 1
    assert namespace.accounting("events") == {"accepted": 2, "fanned_out": 1, "unmatched": 1,
                                            "duplicate": 0}
    namespace.send("orders", Message(body=b"x"))
    assert namespace.receive_and_lock("orders", 1)[0].body == b"x"
    with pytest.raises(ValueError, match="requires sessions"):
        namespace.receive_and_lock("sessions", 1)


def test_config_errors_name_the_json_path() -> None:
    bad = json.loads(json.dumps(CONFIG))
    bad["UserConfig"]["Namespaces"][0]["Queues"][1]["Properties"]["LockDuration"] = "soon"
    with pytest.raises(ConfigError, match=r"UserConfig\.Namespaces\[0\]\.Queues\[1\]\.Properties"
                                          r"\.LockDuration"):
        load_config(bad)
    unknown = json.loads(json.dumps(CONFIG))
    unknown["UserConfig"]["Namespaces"][0]["Queues"][0]["Properties"]["Colour"] = 1
    with pytest.raises(ConfigError, match=r"Queues\[0\]\.Properties\.Colour"):
        load_config(unknown)
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config("{nope")


def test_command_line_prints_connection_string_and_stops_on_sigterm(tmp_path: Path) -> None:
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(CONFIG))
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes", "--config", str(path), "--host", "127.0.0.1",
         "--port", "0", "--http-port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Endpoint=sb://127.0.0.1:")
        assert "UseDevelopmentEmulator=true" in first
        port = int(first.split(";")[0].rsplit(":", 1)[1])
        assert port > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)  # reads and closes the pipes: no unclosed file


def test_no_transactions_on_the_command_line_refuses_every_declare() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes", "--no-transactions", "--host", "127.0.0.1",
         "--port", "0", "--http-port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        with ManagementClient.from_connection_string(connection_string, timeout=10) as client, \
                pytest.raises(TransactionDeclareError) as refused, client.transaction():
            pass
        assert refused.value.error_condition == "amqp:not-allowed"
        assert "'Basic' tier" in str(refused.value)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)
