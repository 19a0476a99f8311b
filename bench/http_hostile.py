"""What hostile clients can hold of the fake's HTTP port (issue 39), and what keep-alive buys.

The fake runs in its own process (``python -m fakes --port 0 --http-port 0``); this process
attacks its HTTP port on 127.0.0.1 and reads the fake's threads, open descriptors and
resident memory from /proc. Scenarios:

- ``slow``: N connections (3,000 by default) each send a partial request and then one header
  byte at a time, one a second, for the attack's duration (a connection the fake cuts at its
  header time-out is opened again at once, so N stay open). Meanwhile ``GET /health`` and an
  authorized administration GET are timed on fresh connections. Then every attacking
  connection is closed, and the time until the fake's threads and descriptors are back near
  their start is measured, with its memory.
- ``bodies``: 8 clients at once each PUT a 50 MB body without a token, with its
  ``Content-Length`` (413 from the head) and then chunked (401 from the head): how much
  memory that costs the fake, and how much each client got to send before it was cut.
- ``xml``: an entity-expansion body (a "billion laughs") and a UTF-16 body with a DTD, each
  three times: their statuses and the memory they cost.
- ``keepalive``: requests per second of ``GET /health`` and of an authorized queue GET, on
  one kept-alive connection against a new connection per request.

    .venv/bin/python bench/http_hostile.py --connections 3000 --duration 20
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sbmgmt.auth import generate_sas_token  # noqa: E402

__all__ = ["main"]

_KEY_NAME = "RootManageSharedAccessKey"
_KEY = "SAS_KEY_VALUE"
_QUEUE_ENTRY = (b'<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">'
                b'<QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/'
                b'servicebus/connect"/></content></entry>')


class _Fake:
    """``python -m fakes`` in a child process, with a queue ``q``."""

    def __init__(self, log: Path) -> None:
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fakes", "--host", "127.0.0.1", "--port", "0",
             "--http-port", "0"],
            stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert self.process.stdout is not None
        self.process.stdout.readline()  # the connection string
        self.http_port = int(self.process.stdout.readline().rsplit(":", 1)[1])
        status, _ = self.request("PUT", "/q?api-version=2021-05", _QUEUE_ENTRY)
        assert status == 201, status

    def token(self) -> str:
        return generate_sas_token(f"https://127.0.0.1:{self.http_port}", _KEY_NAME, _KEY,
                                  int(time.time()) + 3600)

    def request(self, method: str, path: str, body: bytes | None = None, *,
                authorized: bool = True, timeout: float = 30) -> tuple[int, float]:
        """One request on a new connection: its status and how long it took."""
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=timeout)
        try:
            headers = {"Authorization": self.token()} if authorized else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            return response.status, time.perf_counter() - started
        finally:
            connection.close()

    def _status(self, field: str) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
        return 0

    def rss_mb(self) -> float:
        return self._status("VmRSS:") / 1024

    def threads(self) -> int:
        return self._status("Threads:")

    def descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


def _state(fake: _Fake) -> dict[str, float]:
    return {"threads": fake.threads(), "fds": fake.descriptors(),
            "rss_mb": round(fake.rss_mb(), 1)}


def _slow(fake: _Fake, connections: int, duration: float) -> dict[str, Any]:
    start = _state(fake)
    socks: list[socket.socket | None] = [None] * connections
    reopened = 0

    def opened() -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", fake.http_port), timeout=5)
        sock.setblocking(False)
        sock.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        return sock

    for index in range(connections):
        socks[index] = opened()
    health: list[float] = []
    admin: list[float] = []
    peak = dict(start)
    failures = [0]
    stop = threading.Event()

    def probe() -> None:
        """On a thread of its own, so that probes land during the attack's bursts too."""
        while not stop.is_set():
            try:
                status, took = fake.request("GET", "/health", authorized=False, timeout=10)
                if status == 200:
                    health.append(took)
                status, took = fake.request("GET", "/q?api-version=2021-05", timeout=10)
                if status == 200:
                    admin.append(took)
            except OSError:
                failures[0] += 1
            now = _state(fake)
            for key in peak:
                peak[key] = max(peak[key], now[key])
            time.sleep(0.2)

    prober = threading.Thread(target=probe)
    prober.start()
    ends = time.monotonic() + duration
    while time.monotonic() < ends:
        tick = time.monotonic()
        for index, sock in enumerate(socks):
            try:
                assert sock is not None
                sock.send(b"a")
            except (OSError, AssertionError):
                if sock is not None:
                    sock.close()
                try:
                    socks[index] = opened()
                    reopened += 1
                except OSError:
                    socks[index] = None
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    stop.set()
    prober.join()
    closed_at = time.monotonic()
    for sock in socks:
        if sock is not None:
            sock.close()
    back_after = None
    while time.monotonic() - closed_at < 30:
        now = _state(fake)
        if now["threads"] <= start["threads"] + 2 and now["fds"] <= start["fds"] + 5:
            back_after = round(time.monotonic() - closed_at, 2)
            break
        time.sleep(0.1)
    return {"connections": connections, "duration_s": duration, "reopened": reopened,
            "start": start, "peak": peak, "after": _state(fake), "back_after_s": back_after,
            "health_max_s": round(max(health, default=-1), 3),
            "health_answers": len(health), "admin_max_s": round(max(admin, default=-1), 3),
            "admin_answers": len(admin), "probe_failures": failures[0]}


def _bodies(fake: _Fake, clients: int, megabytes: int, *, chunked: bool) -> dict[str, Any]:
    start = _state(fake)
    sent: list[int] = []
    statuses: list[str] = []
    peak = [start["rss_mb"]]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], fake.rss_mb())
            time.sleep(0.05)

    def client() -> None:
        size = megabytes * 1024 * 1024
        with socket.create_connection(("127.0.0.1", fake.http_port), timeout=10) as sock:
            framing = ("Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}")
            sock.sendall(b"PUT /big?api-version=2021-05 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         + f"{framing}\r\n\r\n".encode())
            chunk, count = (b"10000\r\n" + b"x" * 65536 + b"\r\n") if chunked else (
                b"x" * 65536), 0
            try:
                while count < size:
                    count += sock.send(chunk)
            except OSError:
                pass
            sent.append(count)
            try:
                statuses.append(sock.recv(64).split(b"\r\n", 1)[0].decode())
            except OSError as exc:
                statuses.append(type(exc).__name__)

    watcher = threading.Thread(target=watch)
    watcher.start()
    workers = [threading.Thread(target=client) for _ in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    watcher.join()
    return {"clients": clients, "body_mb": megabytes, "chunked": chunked, "start": start,
            "peak_rss_mb": round(peak[0], 1), "after": _state(fake),
            "sent_mb_each": [round(n / 2**20, 2) for n in sent], "answers": statuses}


def _xml(fake: _Fake) -> dict[str, Any]:
    start = _state(fake)
    entities = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 9))
    bomb = (f'<!DOCTYPE entry [<!ENTITY l0 "lol">{entities}]><entry xmlns="http://www.w3.org/'
            f'2005/Atom"><content><QueueDescription><UserMetadata>&l8;</UserMetadata>'
            f'</QueueDescription></content></entry>').encode()
    utf16 = ('<?xml version="1.0" encoding="utf-16"?><!DOCTYPE entry [<!ENTITY a "b">]>'
             '<entry xmlns="http://www.w3.org/2005/Atom">&a;</entry>').encode("utf-16")
    statuses = [fake.request("PUT", f"/x{n}?api-version=2021-05", body)[0]
                for n, body in enumerate([bomb, utf16] * 3)]
    return {"statuses": statuses, "start": start, "after": _state(fake)}


def _keepalive(fake: _Fake, requests: int) -> dict[str, Any]:
    def rate(path: str, reuse: bool, authorized: bool) -> float:
        headers = {"Authorization": fake.token()} if authorized else {}
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", fake.http_port, timeout=10)
        for _ in range(requests):
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            if not reuse:
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", fake.http_port,
                                                        timeout=10)
        connection.close()
        return round(requests / (time.perf_counter() - started), 1)

    return {"requests": requests,
            "health_keepalive_rps": rate("/health", True, False),
            "health_new_connection_rps": rate("/health", False, False),
            "admin_get_keepalive_rps": rate("/q?api-version=2021-05", True, True),
            "admin_get_new_connection_rps": rate("/q?api-version=2021-05", False, True)}


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios; print one JSON object of figures (with the load average)."""
    parser = argparse.ArgumentParser(prog="bench/http_hostile.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=3000)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--only", action="append",
                        choices=["slow", "bodies", "xml", "keepalive"])
    args = parser.parse_args(argv)
    only = set(args.only or ["slow", "bodies", "xml", "keepalive"])
    figures: dict[str, Any] = {"loadavg_before": os.getloadavg()}
    # The fake's log goes to the temporary directory (it was written at the repository root).
    log = Path(tempfile.gettempdir()) / "bench-http-hostile.log"
    figures["fake_log"] = str(log)
    fake = _Fake(log)
    try:
        if "keepalive" in only:
            figures["keepalive"] = _keepalive(fake, args.requests)
        if "slow" in only:
            figures["slow"] = _slow(fake, args.connections, args.duration)
        if "bodies" in only:
            figures["bodies"] = _bodies(fake, 8, 50, chunked=False)
            figures["chunked_bodies"] = _bodies(fake, 8, 50, chunked=True)
        if "xml" in only:
            figures["xml"] = _xml(fake)
    finally:
        fake.stop()
    figures["loadavg_after"] = os.getloadavg()
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
