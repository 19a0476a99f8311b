"""The fake reads what the topology file keeps beyond the emulator's format (``x-sbmgmt``)
and takes the file's text in ``CONFIG_JSON`` as well as a path in ``CONFIG_PATH``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes import ConfigError, FakeNamespace
from fakes.__main__ import _config
from sbmgmt.actions.entities import admin_client

ROOT = Path(__file__).resolve().parents[2]


def _config_with(queue: dict[str, Any], subscription: dict[str, Any] | None = None,
                 topic: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns", "Queues": [{"Name": "q", **queue}],
        "Topics": [{"Name": "t", **(topic or {}),
                    "Subscriptions": [{"Name": "s", **(subscription or {})}]}]}],
        "Logging": {"Type": "File"}}}


EXTENDED = _config_with(
    {"Properties": {"MaxDeliveryCount": 10},
     "x-sbmgmt": {"MaxDeliveryCount": 500, "MaxSizeInMegabytes": 2048, "Status": "Disabled",
                  "UserMetadata": "kept", "EnablePartitioning": True,
                  "AuthorizationRules": [{"KeyName": "app", "Rights": ["Send"]}]}},
    {"x-sbmgmt": {"MaxDeliveryCount": 42, "DeadLetteringOnFilterEvaluationExceptions": False,
                  "Status": "ReceiveDisabled"}},
    {"x-sbmgmt": {"SupportOrdering": False, "EnableBatchedOperations": False}})


def _read_back(namespace: FakeNamespace) -> tuple[Any, Any, Any]:
    client = admin_client(connection_string=namespace.connection_string,
                          http_port=namespace.http_port, timeout=10)
    with client:
        return client.get_queue("q"), client.get_topic("t"), client.get_subscription("t", "s")


def test_the_extension_is_read_back_through_the_administration_api() -> None:
    with FakeNamespace(json.dumps(EXTENDED), http_port=0) as namespace:
        queue, topic, subscription = _read_back(namespace)
    assert (queue.max_delivery_count, queue.max_size_in_megabytes, queue.status,
            queue.user_metadata, queue.enable_partitioning) == (500, 2048, "Disabled", "kept",
                                                                 True)
    assert (topic.support_ordering, topic.enable_batched_operations) == (False, False)
    assert (subscription.max_delivery_count,
            subscription.dead_lettering_on_filter_evaluation_exceptions,
            subscription.status) == (42, False, "ReceiveDisabled")


@pytest.mark.parametrize(("extension", "said"), [
    ({"Status": "Sleeping"}, "Status must be one of Active"),
    ({"MaxSizeInMegabytes": "big"}, "MaxSizeInMegabytes must be a whole number"),
    ({"MaxDeliveryCount": 0}, "x-sbmgmt.MaxDeliveryCount: must be a whole number"),
    ({"LockDuration": "PT1M"}, "x-sbmgmt.LockDuration: not a property the fake reads"),
])
def test_a_bad_extension_is_refused_naming_the_path(extension: dict[str, Any],
                                                    said: str) -> None:
    with pytest.raises(ConfigError, match=r"UserConfig\.Namespaces\[0\]\.Queues\[0\]") as refused:
        FakeNamespace(json.dumps(_config_with({"x-sbmgmt": extension})))
    assert said in str(refused.value)


def test_config_json_is_the_file_text_config_path_the_file(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CONFIG_PATH", raising=False)
    monkeypatch.setenv("CONFIG_JSON", json.dumps(EXTENDED))
    assert _config(None) == EXTENDED
    assert _config("given.json") == "given.json"  # --config wins
    path = tmp_path / "Config.json"
    monkeypatch.setenv("CONFIG_PATH", str(path))
    with pytest.raises(ConfigError, match="CONFIG_JSON and CONFIG_PATH are both set"):
        _config(None)
    monkeypatch.delenv("CONFIG_JSON")
    assert _config(None) == str(path)
    monkeypatch.setenv("CONFIG_JSON", "{not json")
    monkeypatch.delenv("CONFIG_PATH")
    with pytest.raises(ConfigError, match="CONFIG_JSON is not JSON"):
        _config(None)


def test_python_m_fakes_serves_the_entities_of_config_json(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CONFIG_PATH"}
    env["CONFIG_JSON"] = json.dumps(EXTENDED)
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes", "--host", "127.0.0.1", "--port", "0",
         "--http-port", "0"], cwd=tmp_path, env=env | {"PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        http_port = int(process.stdout.readline().strip().rsplit(":", 1)[1].strip("/"))
        client = admin_client(connection_string=connection_string, http_port=http_port,
                              timeout=10)
        with client:
            assert client.get_queue("q").max_delivery_count == 500
            assert [s.name for s in client.list_subscriptions("t")] == ["s"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)
