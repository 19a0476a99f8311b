"""A TCP proxy that forwards AMQP frames whole and drops the connection before a chosen one.

The proxy sits between a client and the fake. It reads each direction frame by frame (the
8-byte protocol headers, then frames by their size field) and names every frame it forwards
by its direction, its performative (``open``, ``attach``, ``transfer``, ``disposition``...,
the SASL frames too) and its rank among the frames of that direction and performative:
``("to fake", "transfer", 3)`` is the fourth transfer the client sent. Empty frames
(heartbeats, sent on a timer) are forwarded unnamed.

Given ``cut``, the proxy closes both sockets instead of forwarding that frame, once: the fake
has every frame before it and none after it; the client loses every reply the fake had not
yet had forwarded. Connections made after the cut (the client reconnecting) are forwarded
untouched. Without ``cut``, ``frames`` records a run's frames: the cut points of the next.

Each frame is named and written under one lock, so ``frames`` is the order they crossed.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections import Counter
from collections.abc import Callable

__all__ = ["CuttingProxy", "FrameKey"]

FrameKey = tuple[str, str, int]
"""(direction: "to fake" / "to client", performative, rank among those)."""

_PERFORMATIVES = {0x10: "open", 0x11: "begin", 0x12: "attach", 0x13: "flow", 0x14: "transfer",
                  0x15: "disposition", 0x16: "detach", 0x17: "end", 0x18: "close",
                  0x40: "sasl-mechanisms", 0x41: "sasl-init", 0x42: "sasl-challenge",
                  0x43: "sasl-response", 0x44: "sasl-outcome"}
_PORT = re.compile(r"(Endpoint=sb://[^:;/]+):(\d+)")


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _name(frame: bytes) -> str | None:
    """The frame's performative; None for an empty frame (a heartbeat)."""
    if frame.startswith(b"AMQP"):
        return f"protocol header {frame[4]}"
    body = frame[frame[4] * 4:]
    if not body:
        return None
    # A performative is a described list: 0x00, then its code as a small ulong (0x53 code).
    if body[0] == 0x00 and body[1] == 0x53:
        return _PERFORMATIVES.get(body[2], f"performative {body[2]:#x}")
    return f"frame {body[:3].hex()}"


class CuttingProxy:
    """Listens on 127.0.0.1, port 0; forwards to ``upstream_port`` on 127.0.0.1."""

    def __init__(self, upstream_port: int, cut: FrameKey | None = None) -> None:
        self.cut = cut
        self.frames: list[FrameKey] = []
        self.cut_done = False
        self._upstream_port = upstream_port
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._spawn(self._accept, "proxy-accept")

    def connection_string(self, upstream: str) -> str:
        """``upstream`` (the fake's connection string) pointed at the proxy."""
        return _PORT.sub(lambda m: f"{m.group(1)}:{self.port}", upstream)

    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self._upstream_port))
            for sock in (client, upstream):  # a frame at a time: no Nagle's wait for more
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sockets += [client, upstream]
            pair = (client, upstream)
            self._spawn(self._pump, "proxy-to-fake", "to fake", client, upstream, pair)
            self._spawn(self._pump, "proxy-to-client", "to client", upstream, client, pair)

    def _pump(self, direction: str, source: socket.socket, sink: socket.socket,
              pair: tuple[socket.socket, socket.socket]) -> None:
        try:
            while True:
                head = _read_exactly(source, 8)
                if head is None:
                    break
                frame = head
                if not head.startswith(b"AMQP"):
                    rest = _read_exactly(source, int.from_bytes(head[:4], "big") - 8)
                    if rest is None:
                        break
                    frame += rest
                if not self._forward(direction, frame, sink, pair):
                    return
        except OSError:
            pass  # a socket shut by the cut or by close()
        for sock in pair:  # one side ended: end the other
            _shut(sock)

    def _forward(self, direction: str, frame: bytes, sink: socket.socket,
                 pair: tuple[socket.socket, socket.socket]) -> bool:
        with self._lock:
            name = _name(frame)
            if name is not None and not self.cut_done:
                key = (direction, name, self._counts[(direction, name)])
                self._counts[(direction, name)] += 1
                if key == self.cut:
                    self.cut_done = True
                    for sock in pair:
                        _shut(sock)
                    return False
                self.frames.append(key)
            sink.sendall(frame)
        return True

    def close(self) -> None:
        """Stop listening, close every connection and wait for the threads."""
        _shut(self._listener)  # shutdown wakes the blocked accept
        with self._lock:
            for sock in self._sockets:
                _shut(sock)
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> CuttingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
