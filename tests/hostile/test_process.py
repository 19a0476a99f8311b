"""Attacks on the fake's process, each against a fake in a subprocess (so that a
regression kills that process, not the test run): SASL frames that crash proton-c,
and running out of file descriptors."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator

import pytest

from sbmgmt import ManagementClient
from tests._waiting import wait_until

from ._raw import RawPeer

_SASL_HEADER = b"AMQP\x03\x01\x00\x00"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Served:
    """The fake's subprocess: its port, and its answers to ``state``."""

    def __init__(self, nofile: int | None = None) -> None:
        args = [sys.executable, "-m", "tests.hostile._serve"]
        if nofile is not None:
            args.append(str(nofile))
        env = {**os.environ, "PYTHONPATH": _ROOT}
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, cwd=_ROOT, env=env)
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def state(self) -> tuple[bool, int]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("state\n")
        self.process.stdin.flush()
        accepting, sockets = self.process.stdout.readline().split()
        return accepting == "True", int(sockets)

    def alive(self) -> bool:
        return self.process.poll() is None

    def served(self) -> bool:
        conn_str = (f"Endpoint=sb://127.0.0.1:{self.port};SharedAccessKeyName="
                    "RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;"
                    "UseDevelopmentEmulator=true")
        with ManagementClient.from_connection_string(conn_str, timeout=5) as client:
            return client.entity("q").peek_messages() == []

    def stop(self) -> None:
        if self.alive():
            assert self.process.stdin is not None
            self.process.stdin.write("stop\n")
            self.process.stdin.flush()
        # communicate closes stdin and reads and closes stdout: no unclosed file
        self.process.communicate(timeout=10)


@pytest.fixture
def served_process() -> Iterator[Served]:
    served = Served()
    try:
        yield served
    finally:
        served.stop()


def _sasl_frame(body: bytes) -> bytes:
    return struct.pack(">IBBH", 8 + len(body), 2, 1, 0) + body


# Each crashed proton-c 0.40 (SIGSEGV) when read by an unscreened server transport.
SASL_INITS = {
    "null mechanism (list0)": b"\x00\x53\x41\x45",
    "null mechanism": b"\x00\x53\x41\xc0\x02\x01\x40",
    "empty mechanism": b"\x00\x53\x41\xc0\x02\x01\xa3\x00",
    "mechanism a string": b"\x00\x53\x41\xc0\x0c\x01\xa1\x09ANONYMOUS",
    "list size wrong": b"\x00\x53\x41\xc0\x0b\x01\xa3\x09ANONYMOUS",
    "mechanism a list": b"\x00\x53\x41\xc0\x02\x01\x45",
}


def test_malformed_sasl_init_frames_close_only_their_connection(
        served_process: Served) -> None:
    for name, body in SASL_INITS.items():
        with socket.create_connection(("127.0.0.1", served_process.port), timeout=5) as sock:
            sock.sendall(_SASL_HEADER + _sasl_frame(body))
            received = b""
            while chunk := sock.recv(4096):  # the fake closes the connection
                received += chunk
        assert served_process.alive(), f"the fake's process died on a sasl-init with {name}"
        assert not received.endswith(b"\x00\x53\x44"), name  # no sasl-outcome after it
    assert served_process.served()


def test_an_undecodable_frame_after_open_closes_the_socket(served_process: Served) -> None:
    for _ in range(5):
        peer = RawPeer("127.0.0.1", served_process.port)
        assert peer.pump(lambda p=peer: bool(p.connection.state & p.connection.REMOTE_ACTIVE))
        peer.sock.sendall(struct.pack(">IBBH", 11, 2, 0, 0) + b"\xff\xff\xff")
        peer.sock.settimeout(5)
        # The fake closes its end although this peer stays (no descriptor kept for it).
        while peer.sock.recv(4096):
            pass
        peer.close()
    wait_until(lambda: served_process.state()[1] == 0, 5)
    assert served_process.state()[1] == 0
    assert served_process.served()


def test_out_of_descriptors_the_fake_stops_polling_its_listener_until_one_frees() -> None:
    served = Served(nofile=48)
    held: list[socket.socket] = []
    try:
        for _ in range(80):  # more than the fake's process may hold
            held.append(socket.create_connection(("127.0.0.1", served.port), timeout=5))
        wait_until(lambda: not served.state()[0], 5)
        accepting, sockets = served.state()
        assert not accepting, "the listener is still polled without a descriptor to accept"
        assert sockets < 48
        for sock in held[:60]:
            sock.close()
        del held[:60]
        assert served.served()  # descriptors freed: accepting again
        assert served.state()[0]
    finally:
        for sock in held:
            sock.close()
        served.stop()
