"""Starting and stopping the fake namespace: real port, prompt stop, no leaked threads."""

from __future__ import annotations

import threading

from fakes import FakeNamespace


def test_port_zero_binds_a_real_port_and_stop_joins_the_thread() -> None:
    before = set(threading.enumerate())
    with FakeNamespace() as namespace:
        assert namespace.port > 0
        assert f"127.0.0.1:{namespace.port};" in namespace.connection_string
        assert "SAS_KEY_VALUE" not in repr(namespace)
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert leaked == []
