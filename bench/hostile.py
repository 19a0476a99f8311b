"""What hostile clients can hold of the fake namespace: the figures of docs/reliability.md.

The fake runs in its own process (``python -m fakes`` with short time-outs); this
process attacks it and reads the fake's resident memory and open descriptors from
/proc. Scenarios:

- ``silent``: N TCP connections that never send a byte (the handshake time-out);
- ``idle``: N connections that open AMQP, then fall silent (the idle time-out);
- ``flood``: one connection sends peek requests as fast as the fake grants credit
  while its reply link has no credit (the replies it may make the fake hold);
- ``reply-to``: M requests, each with a new reply-to (the reply-address cache);
- ``no-reply-link``: M requests on a connection with no reply link (the warnings
  written to the fake's log).

    .venv/bin/python bench/hostile.py --connections 350 --requests 20000
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.hostile._raw import RawPeer, authorize, message_bytes  # noqa: E402

__all__ = ["main"]

_KEY_NAME = "RootManageSharedAccessKey"
_KEY = "SAS_KEY_VALUE"
_PEEK = {"operation": "com.microsoft:peek-message", "from-sequence-number": 1,
         "message-count": 1}


class _Fake:
    """``python -m fakes`` in a child process, with a queue ``q``."""

    def __init__(self, handshake: float, idle: float, log: Path) -> None:
        config = ROOT / "bench" / "_hostile_config.json"
        config.write_text(json.dumps({"UserConfig": {"Namespaces": [
            {"Name": "sbemulatorns", "Queues": [{"Name": "q"}], "Topics": []}],
            "Logging": {"Type": "Console"}}}))
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fakes", "--config", str(config), "--port", "0",
             "--http-port", "0",
             "--handshake-timeout", str(handshake), "--idle-timeout", str(idle)],
            stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.port = int(line.split("sb://", 1)[1].split(";", 1)[0].rsplit(":", 1)[1])
        config.unlink()

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


def _open_after(socks: list[socket.socket]) -> int:
    """How many of ``socks`` the fake has not closed."""
    open_ = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            while sock.recv(65536):  # what the fake wrote last (a close frame)
                pass
        except BlockingIOError:
            open_ += 1
        except OSError:
            pass
    return open_


def silent(fake: _Fake, count: int, handshake: float) -> dict[str, Any]:
    socks = [socket.create_connection(("127.0.0.1", fake.port)) for _ in range(count)]
    time.sleep(0.5)
    before, fds_before = _open_after(socks), fake.descriptors()
    time.sleep(handshake + 1.5)
    after, fds_after = _open_after(socks), fake.descriptors()
    for sock in socks:
        sock.close()
    return {"connections": count, "open_at_0.5s": before, "fake_fds_at_0.5s": fds_before,
            f"open_at_{handshake + 2:g}s": after, f"fake_fds_at_{handshake + 2:g}s": fds_after}


def idle(fake: _Fake, count: int, idle_timeout: float) -> dict[str, Any]:
    peers = [RawPeer("127.0.0.1", fake.port) for _ in range(count)]
    for peer in peers:
        peer.pump(lambda p=peer: not p.connection.state & p.connection.REMOTE_UNINIT)
    fds_before = fake.descriptors()
    time.sleep(idle_timeout + 1.5)  # no pumping: no heartbeats
    after = _open_after([p.sock for p in peers])
    fds_after = fake.descriptors()
    for peer in peers:
        peer.close()
    return {"connections": count, "fake_fds_opened": fds_before,
            f"open_at_{idle_timeout + 1.5:g}s": after, f"fake_fds_at_{idle_timeout + 1.5:g}s":
            fds_after}


def _request(reply_to: str) -> bytes:
    return message_bytes(properties=[uuid.uuid4(), None, None, None, reply_to],
                         application_properties=_PEEK, body={})


def flood(fake: _Fake, seconds: float) -> dict[str, Any]:
    rss_before = fake.rss_kb()
    with RawPeer("127.0.0.1", fake.port) as peer:
        authorize(peer, "127.0.0.1", fake.port, _KEY_NAME, _KEY)
        sender = peer.sender("q/$management")
        peer.receiver("q/$management", "q/$management/r", credit=0)
        peer.pump(lambda: sender.credit > 0)
        sent, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            while sender.credit > 0:
                peer.send(sender, _request("q/$management/r"))
                sent += 1
            peer.pump(timeout=0.05)
        rss_after = fake.rss_kb()
    return {"seconds": seconds, "requests_sent": sent, "fake_rss_kb_before": rss_before,
            "fake_rss_kb_after": rss_after}


def _answered(fake: _Fake, count: int, reply_to: Any, with_reply_link: bool) -> dict[str, Any]:
    rss_before = fake.rss_kb()
    with RawPeer("127.0.0.1", fake.port) as peer:
        authorize(peer, "127.0.0.1", fake.port, _KEY_NAME, _KEY)
        sender = peer.sender("q/$management")
        receiver = peer.receiver("q/$management", "q/$management/r", credit=1000) \
            if with_reply_link else None
        peer.pump(lambda: sender.credit > 0)
        settled = 0
        for n in range(count):
            while sender.credit <= 0:
                peer.pump(timeout=0.01)
                if receiver is not None and peer.received(receiver):
                    receiver.flow(1000 - receiver.credit)
            peer.send(sender, _request(reply_to(n)))
            settled += 1
        peer.pump(timeout=0.5)
    return {"requests": settled, "fake_rss_kb_before": rss_before,
            "fake_rss_kb_after": fake.rss_kb()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--connections", type=int, default=350)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--handshake-timeout", type=float, default=3.0)
    parser.add_argument("--idle-timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    log = ROOT / "bench" / "_hostile_fake.log"
    fake = _Fake(args.handshake_timeout, args.idle_timeout, log)
    try:
        results = {
            "silent": silent(fake, args.connections, args.handshake_timeout),
            "idle": idle(fake, min(args.connections, 100), args.idle_timeout),
            "flood": flood(fake, 3.0),
            "reply-to": _answered(fake, args.requests, lambda n: f"q/$management/r-{n}", True),
            "no-reply-link": _answered(fake, args.requests, lambda n: "q/$management/r",
                                       False),
        }
    finally:
        fake.stop()
    results["fake_log_lines"] = [line for line in log.read_text().splitlines() if line]
    log.unlink()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
