"""The ceilings: a bare proton request loop, with no sbmgmt runtime in the way.

One handler, written against proton's engine events only (no MessagingHandler), opens
one connection, sends one CBS put-token, attaches one management link pair and keeps
``window`` requests in flight (the client's default, with its reply credit) until every
reply has arrived. A reply is decoded by proton's ``Message``, correlated by its
``correlation-id`` and its status checked; its body is copied out of proton's buffer but
not decoded into models. What the client
does on top of this (typed requests, futures, reply models, retries, timeouts) is its
overhead.

The same handler runs on two drivers:

- ``container``: proton's own ``Container`` (the usual way to write a proton program);
- ``engine``: :class:`sbmgmt.transport.selector_loop.EngineLoop`, the selector loop sbmgmt's client
runs
  on, so that the client's overhead is measured against the same I/O path.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from proton import Delivery, Message
from proton.reactor import Container

from sbmgmt._engine.deliveries import reply_credit
from sbmgmt._engine.open_links import create_receiver, create_sender
from sbmgmt._protocol.dispatcher import DEFAULT_WINDOW
from sbmgmt.auth import audience_for, parse_connection_string, token_provider_from_connection_string
from sbmgmt.transport.selector_loop import EngineLoop

__all__ = ["DRIVERS", "BareResult", "run_bare_loop"]

DRIVERS = ("container", "engine")
"""The loops the bare handler can run on."""

RequestFactory = Callable[[int], Message]
"""Builds request number ``i`` (its ``reply_to`` and ``id`` are filled in by the loop)."""

_CBS_REPLY_TO = "$cbs/bare-reply"


class BareResult:
    """How many requests were answered with 2xx, and in how many seconds."""

    def __init__(self, ok: int, failed: int, seconds: float) -> None:
        self.ok = ok
        self.failed = failed
        self.seconds = seconds


class _Bare:
    """The request loop, as proton engine event callbacks."""

    def __init__(self, conn_str: str, entity: str, count: int, window: int,
                 make: RequestFactory) -> None:
        address = parse_connection_string(conn_str).amqp_address()
        self.host, self.port = address.host, address.port
        self.audience = audience_for(address.host, entity)
        self.token = token_provider_from_connection_string(
            parse_connection_string(conn_str)).get_token(self.audience)
        self.node = f"{entity}/$management"
        self.reply_to = f"{self.node}/bare-{uuid.uuid4()}"
        self.count, self.window, self.make = count, window, make
        self.sent = self.ok = self.failed = 0
        self.waiting: set[str] = set()
        self.started = self.finished = 0.0
        self.connection: Any = None
        self.cbs_receiver: Any = None
        self.sender: Any = None
        self.receiver: Any = None
        self.stop: Callable[[], None] = lambda: None

    def opened(self, connection: Any) -> None:
        """The connection exists: put the token on ``$cbs``."""
        self.connection = connection
        cbs_sender = create_sender(connection, target="$cbs", name="bare-cbs-s")
        self.cbs_receiver = create_receiver(connection, source="$cbs", target=_CBS_REPLY_TO,
                                            name="bare-cbs-r")
        self.cbs_receiver.flow(1)
        cbs_sender.send(Message(
            id=uuid.uuid4(), reply_to=_CBS_REPLY_TO,
            properties={"operation": "put-token", "type": self.token.token_type,
                        "name": self.audience},
            body=self.token.token,
        ))

    def on_link_remote_open(self, event: Any) -> None:
        sender, receiver = self.sender, self.receiver
        if (sender is not None and not self.started and sender.state & sender.REMOTE_ACTIVE
                and receiver.state & receiver.REMOTE_ACTIVE):
            self.started = time.perf_counter()
            self._fill()

    def on_link_flow(self, event: Any) -> None:
        if self.started and event.link.is_sender and event.link.name == self.sender.name:
            self._fill()

    def on_delivery(self, event: Any) -> None:
        link = event.link
        if not link.is_receiver:
            delivery = event.delivery
            if delivery.settled:
                delivery.settle()
            return
        delivery = link.current
        while delivery is not None and delivery.readable and not delivery.partial:
            message = Message()
            message.decode(link.recv(delivery.pending))
            link.advance()
            delivery.update(Delivery.ACCEPTED)
            delivery.settle()
            if link is self.cbs_receiver or link.name == "bare-cbs-r":
                self._authorized(message)
            else:
                self._reply(message)
            delivery = link.current
        if self.started and self.ok + self.failed < self.count:
            self._fill()

    def _authorized(self, message: Message) -> None:
        properties: dict[Any, Any] = message.properties or {}
        status = properties.get("status-code", properties.get("statusCode"))
        if status is None or not 200 <= int(status) < 300:
            raise RuntimeError(f"put-token refused: {status}")
        self.sender = create_sender(self.connection, target=self.node,
                                    name=f"bare-s-{uuid.uuid4()}")
        self.receiver = create_receiver(self.connection, source=self.node,
                                        target=self.reply_to, name=f"bare-r-{uuid.uuid4()}")
        self.receiver.flow(reply_credit(self.window))

    def _reply(self, message: Message) -> None:
        key = str(message.correlation_id)
        if key not in self.waiting:
            return
        self.waiting.discard(key)
        properties: dict[Any, Any] = message.properties or {}
        if 200 <= int(properties.get("statusCode", 0)) < 300:
            self.ok += 1
            if message.body is not None:
                _own(message.body)
        else:
            self.failed += 1
        if self.ok + self.failed == self.count:
            self.finished = time.perf_counter()
            self.connection.close()
            self.stop()

    def _fill(self) -> None:
        sender = self.sender
        while self.sent < self.count and len(self.waiting) < self.window and sender.credit > 0:
            message = self.make(self.sent)
            message.id = uuid.uuid4()
            message.reply_to = self.reply_to
            self.waiting.add(str(message.id))
            sender.send(message)
            self.sent += 1
        receiver = self.receiver
        if receiver.credit <= self.window:
            receiver.flow(reply_credit(self.window) - receiver.credit)


class _OnContainer(_Bare):
    """The handler on proton's Container (it connects when the reactor starts)."""

    def on_reactor_init(self, event: Any) -> None:
        container = event.container
        self.stop = container.stop
        self.opened(container.connect(f"amqp://{self.host}:{self.port}", sasl_enabled=True,
                                      allowed_mechs="ANONYMOUS", reconnect=False))


def _own(value: Any) -> None:
    """Copy binary values out of proton's buffer, as any real client must."""
    if isinstance(value, memoryview):
        bytes(value)
    elif isinstance(value, dict):
        for item in value.values():
            _own(item)
    elif isinstance(value, list):
        for item in value:
            _own(item)


def run_bare_loop(
    conn_str: str, entity: str, count: int, make: RequestFactory, *, window: int = DEFAULT_WINDOW,
    driver: str = "container",
) -> BareResult:
    """Send ``count`` requests built by ``make`` with ``window`` in flight on ``driver``
    (one of :data:`DRIVERS`); time the run from the attach to the last reply."""
    if driver == "container":
        bare: _Bare = _OnContainer(conn_str, entity, count, window, make)
        Container(bare).run()
    elif driver == "engine":
        bare = _Bare(conn_str, entity, count, window, make)
        loop = EngineLoop(bare, container_id="bare")
        bare.stop = loop.stop
        bare.opened(loop.connect(bare.host, bare.port))
        loop.run()
    else:
        raise ValueError(f"driver must be one of {DRIVERS}, not {driver!r}")
    if bare.ok + bare.failed != count:
        raise RuntimeError(f"bare loop ended after {bare.ok + bare.failed} of {count} replies")
    return BareResult(bare.ok, bare.failed, bare.finished - bare.started)
