"""bench/_delay.py's proxy: every byte arrives, in order, and no earlier than its delay
(chunks written together when due are coalesced: that must change neither)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from bench._delay import delayed


def _echo_server() -> tuple[socket.socket, int]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


@pytest.mark.timeout(60)
def test_every_byte_comes_back_in_order_and_a_round_trip_takes_the_latency() -> None:
    server, port = _echo_server()
    with server, delayed(f"Endpoint=sb://127.0.0.1:{port}/;x=y", 40) as conn:
        proxied = int(conn.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", proxied)) as client:
            started = time.monotonic()
            client.sendall(b"ping")
            assert client.recv(4) == b"ping"
            assert time.monotonic() - started >= 0.039
            sent = b"".join(i.to_bytes(4, "big") for i in range(20_000))
            for at in range(0, len(sent), 37):  # many small writes, as AMQP frames come
                client.sendall(sent[at:at + 37])
            got = b""
            while len(got) < len(sent):
                got += client.recv(65536)
            assert got == sent
