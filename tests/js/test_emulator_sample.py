"""The emulator installer's sample flow with the official JavaScript SDK against
``python -m fakes`` started as a new user would (its config from ``CONFIG_PATH``; ports picked
by the system, never 5672 / 5300): wait for ``/health``, send and receive on ``localhost``
(Node may resolve it to ::1 first: the fake listens on both loopbacks); the next available
session when none has messages (the service's time-out, ``ServiceTimeout``); and where the SDK
connects for the emulator's port-less connection string (5672)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fake.test_emulator_dropin import (
    CONFIG,
    EMULATOR_CONNECTION_STRING,
    start_fakes,
    stop,
)
from tests.js._node import node_with_the_pinned_sdk, run_script


@pytest.fixture(scope="module")
def observed() -> dict[str, Any]:
    node_with_the_pinned_sdk()  # before the fake starts: a missing peer skips (fails in CI)
    served = start_fakes("--port", "0", "--http-port", "0", env={"CONFIG_PATH": str(CONFIG)})
    try:
        return run_script("emulator_sample.mjs", served.connection_string, served.http,
                          EMULATOR_CONNECTION_STRING, timeout=120)
    finally:
        assert stop(served) == 0


def test_health_then_send_and_receive_on_localhost(observed: dict[str, Any]) -> None:
    assert observed["health"] == {"status": "healthy", "message": "Service is healthy."}
    assert observed["received"] == ["Hello, Azure Service Bus!"]


def test_next_available_session_times_out_as_the_service(observed: dict[str, Any]) -> None:
    next_session = observed["nextSession"]
    assert next_session["code"] == "ServiceTimeout"
    # the fake waited for the link's com.microsoft:timeout (1.5 s less a jitter and buffer)
    assert next_session["waitedMs"] >= 1300


def test_the_emulators_connection_string_connects_to_5672(observed: dict[str, Any]) -> None:
    assert observed["emulatorPorts"] == [5672]
