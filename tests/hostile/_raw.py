"""A hostile AMQP peer for the tests: proton's engine over a blocking socket, stepped by hand.

It sends what a well-behaved client never would: message bytes built section by
section (application properties that are a list, a reply-to that is a map...),
and plain bytes on the socket (a SASL frame with a null mechanism). Everything runs
on the calling thread; :meth:`RawPeer.pump` moves bytes both ways until a condition
holds or the time is up.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from proton import Collector, Connection, Link, Transport

from sbmgmt.amqp.encode import encode_value
from sbmgmt.auth import generate_sas_token

_HEADER = b"\x00\x53\x70\x45"
_PROPERTIES = b"\x00\x53\x73"
_APPLICATION_PROPERTIES = b"\x00\x53\x74"
_AMQP_VALUE = b"\x00\x53\x77"


def message_bytes(*, properties: list[Any] | None = None, application_properties: Any = None,
                  body: Any = None, with_application_properties: bool = True) -> bytes:
    """A message's bytes, each section holding whatever value it is given."""
    parts = [_HEADER]
    if properties is not None:
        parts.append(_PROPERTIES + encode_value(properties))
    if with_application_properties:
        parts.append(_APPLICATION_PROPERTIES + encode_value(application_properties))
    parts.append(_AMQP_VALUE + encode_value(body))
    return b"".join(parts)


class RawPeer:
    """One client connection to ``host:port`` (SASL ANONYMOUS), driven by :meth:`pump`."""

    def __init__(self, host: str, port: int, *, open_connection: bool = True) -> None:
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.settimeout(0.05)
        self.collector = Collector()
        self.connection = Connection()
        self.connection.collect(self.collector)
        self.transport = Transport()
        self.transport.sasl().allowed_mechs("ANONYMOUS")
        self.transport.bind(self.connection)
        self.peer_closed = False
        self.session: Any = None
        if open_connection:
            self.connection.hostname = host
            self.connection.open()
            self.session = self.connection.session()
            self.session.open()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pump(self, until: Callable[[], bool] = lambda: False, timeout: float = 2.0) -> bool:
        """Move bytes until ``until()`` holds (True) or ``timeout`` passes (False)."""
        end = time.monotonic() + timeout
        while True:
            # A step waits for bytes at most 50 ms, and never past ``timeout``.
            self.sock.settimeout(min(0.05, max(0.001, end - time.monotonic())))
            self._step()
            if until():
                return True
            if time.monotonic() > end or self.peer_closed:
                return until()

    def _step(self) -> None:
        transport = self.transport
        transport.tick(time.monotonic())  # heartbeats, while the peer is pumped
        pending = transport.pending()
        if pending > 0:
            try:
                transport.pop(self.sock.send(transport.peek(pending) or b""))
            except OSError:
                self.peer_closed = True
                return
        capacity = transport.capacity()
        try:
            data = self.sock.recv(capacity) if capacity > 0 else None
        except TimeoutError:
            data = None
        except OSError:
            data = b""
        if data == b"":
            self.peer_closed = True
            transport.close_tail()
        elif data is not None:
            transport.push(data)
        while self.collector.peek() is not None:
            self.collector.pop()

    def sender(self, address: str) -> Link:
        link = self.session.sender(f"raw-sender-{uuid.uuid4()}")
        link.target.address = address
        link.open()
        return link

    def receiver(self, address: str, target: str, credit: int = 100) -> Link:
        link = self.session.receiver(f"raw-receiver-{uuid.uuid4()}")
        link.source.address = address
        link.target.address = target
        link.open()
        if credit:
            link.flow(credit)
        return link

    def send(self, link: Link, data: bytes) -> Any:
        """Send ``data`` as one (unsettled) message on ``link``; its delivery."""
        delivery = link.delivery(str(uuid.uuid4()))
        link.send(data)
        link.advance()
        return delivery

    def received(self, link: Link) -> list[bytes]:
        """The complete messages waiting on a receiver link (accepted and settled)."""
        out: list[bytes] = []
        while True:
            delivery = link.current
            if delivery is None or delivery.partial or not delivery.readable:
                return out
            out.append(bytes(link.recv(delivery.pending) or b""))
            link.advance()
            delivery.update(delivery.ACCEPTED)
            delivery.settle()


def authorize(peer: RawPeer, host: str, port: int, key_name: str, key: str) -> None:
    """Put a valid namespace token on ``peer``'s connection (its links may then attach)."""
    audience = f"sb://{host}:{port}"
    token = generate_sas_token(audience, key_name, key, int(time.time()) + 3600)
    sender = peer.sender("$cbs")
    receiver = peer.receiver("$cbs", "$cbs/raw-reply")
    peer.send(sender, message_bytes(
        properties=[uuid.uuid4(), None, None, None, "$cbs/raw-reply"],
        application_properties={"operation": "put-token", "name": audience,
                                "type": "servicebus.windows.net:sastoken"},
        body=token))
    replies: list[bytes] = []
    if not peer.pump(lambda: bool(replies.extend(peer.received(receiver)) or replies)):
        raise AssertionError("the put-token was not answered")
    sender.close()
    receiver.close()
