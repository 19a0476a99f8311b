"""The fake's plain-HTTP port: ``GET /health`` as the emulator answers it."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from fakes import FakeNamespace


def _get(port: int, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        connection.close()


def test_health_answers_as_the_emulator_while_the_namespace_serves() -> None:
    with FakeNamespace(http_port=0) as fake:
        assert fake.http_port not in (None, 0)
        status, content_type, body = _get(fake.http_port, "/health")
    assert status == 200
    assert content_type.startswith("application/json")
    assert json.loads(body) == {"status": "healthy", "message": "Service is healthy."}


def test_unknown_paths_are_not_found() -> None:
    with FakeNamespace(http_port=0) as fake:
        assert fake.http_port is not None
        status, _, _ = _get(fake.http_port, "/nothing-here")
    assert status == 404


def test_no_http_side_unless_asked_for() -> None:
    with FakeNamespace() as fake:
        assert fake.http_port is None


def test_a_taken_http_port_fails_start_and_leaves_nothing_listening() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        fake = FakeNamespace(http_port=taken.getsockname()[1])
        with pytest.raises(OSError):
            fake.start()
        assert "stopped" in repr(fake)


def test_stop_closes_the_http_port() -> None:
    fake = FakeNamespace(http_port=0).start()
    port = fake.http_port
    assert port is not None
    fake.stop()
    with pytest.raises(OSError):
        _get(port, "/health")
