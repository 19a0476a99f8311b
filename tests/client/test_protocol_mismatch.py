"""A peer that speaks an older AMQP gets a clear, prompt error — not a hang."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from sbmgmt import ManagementClient
from sbmgmt.errors import ProtocolMismatchError


class HeaderServer:
    """Answers every connection with a fixed protocol header, then closes it."""

    def __init__(self, header: bytes) -> None:
        self._header = header
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._stopped = threading.Event()
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="header-server")
        self._thread.start()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(8)
                    conn.sendall(self._header)
                except OSError:
                    pass

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(5)
        self._listener.close()


@pytest.fixture(params=[(b"AMQP\x00\x00\x09\x01", "AMQP 0-9-1"),
                        (b"AMQP\x01\x01\x08\x00", "AMQP 0-8")], ids=["0-9-1", "0-8"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[HeaderServer, str]]:
    header, version = request.param
    peer = HeaderServer(header)
    yield peer, version
    peer.stop()


def test_older_amqp_peer_is_named_and_not_retried(server: tuple[HeaderServer, str]) -> None:
    peer, version = server
    conn_str = (f"Endpoint=sb://127.0.0.1:{peer.port};SharedAccessKeyName=k;"
                "SharedAccessKey=v;UseDevelopmentEmulator=true")
    started = time.monotonic()
    with ManagementClient.from_connection_string(conn_str, timeout=30) as client, \
            pytest.raises(ProtocolMismatchError, match=f"{version} protocol header"):
        client.entity("q").peek_messages()
    # Failed on the first answer, not after the 30 s timeout (a generous bound, not a timing).
    assert time.monotonic() - started < 25
