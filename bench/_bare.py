"""The ceiling: a bare proton request loop, with no sbmgmt runtime in the way.

It opens one connection, sends one CBS put-token, attaches one management link pair
and keeps ``window`` requests in flight until every reply has arrived. A reply is
correlated by its ``correlation-id`` and its status checked; the body is copied out
of proton's buffer but not decoded into models. What the client does on top of this
(typed requests, futures, reply decoding, retries) is its overhead.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from sbmgmt.auth import audience_for, parse_connection_string, token_provider_from_connection_string

__all__ = ["BareResult", "run_bare_loop"]

_CBS_RECEIVER = "bare-cbs-r"

RequestFactory = Callable[[int], Message]
"""Builds request number ``i`` (its ``reply_to`` and ``id`` are filled in by the loop)."""


class BareResult:
    """How many requests were answered with 2xx, and in how many seconds."""

    def __init__(self, ok: int, failed: int, seconds: float) -> None:
        self.ok = ok
        self.failed = failed
        self.seconds = seconds


class _Loop(MessagingHandler):
    def __init__(
        self, conn_str: str, entity: str, count: int, window: int, make: RequestFactory
    ) -> None:
        super().__init__(prefetch=0, auto_accept=True, auto_settle=True)
        parsed = parse_connection_string(conn_str)
        address = parsed.amqp_address()
        self.url = f"amqp://{address.host}:{address.port}"
        self.audience = audience_for(address.host, entity)
        self.token = token_provider_from_connection_string(parsed).get_token(self.audience)
        self.entity = entity
        self.node = f"{entity}/$management"
        self.reply_to = f"{self.node}/bare-{uuid.uuid4()}"
        self.count = count
        self.window = window
        self.make = make
        self.sent = 0
        self.ok = 0
        self.failed = 0
        self.waiting: set[str] = set()
        self.started = 0.0
        self.finished = 0.0
        self.connection: Any = None
        self.sender: Any = None
        self.receiver: Any = None
        self.cbs_receiver: Any = None

    def on_start(self, event: Any) -> None:
        container = event.container
        self.connection = container.connect(
            self.url, sasl_enabled=True, allowed_mechs="ANONYMOUS", reconnect=False
        )
        cbs_sender = container.create_sender(self.connection, target="$cbs", name="bare-cbs-s")
        self.cbs_receiver = container.create_receiver(
            self.connection, source="$cbs", target="$cbs/bare-reply", name=_CBS_RECEIVER
        )
        self.cbs_receiver.flow(1)
        cbs_sender.send(Message(
            id=uuid.uuid4(),
            reply_to="$cbs/bare-reply",
            properties={"operation": "put-token", "type": self.token.token_type,
                        "name": self.audience},
            body=self.token.token,
        ))

    def on_message(self, event: Any) -> None:
        message = event.message
        properties = message.properties or {}
        if event.receiver.name == _CBS_RECEIVER:
            status = properties.get("status-code", properties.get("statusCode"))
            if status is None or not 200 <= int(status) < 300:
                raise RuntimeError(f"put-token refused: {status}")
            self._attach(event.container)
            return
        key = str(message.correlation_id)
        if key in self.waiting:
            self.waiting.discard(key)
            if 200 <= int(properties.get("statusCode", 0)) < 300:
                self.ok += 1
                if message.body is not None:
                    _own(message.body)
            else:
                self.failed += 1
        if self.ok + self.failed == self.count:
            self.finished = time.perf_counter()
            event.connection.close()
            return
        self._fill()

    def _attach(self, container: Any) -> None:
        self.sender = container.create_sender(self.connection, target=self.node,
                                              name=f"bare-s-{uuid.uuid4()}")
        self.receiver = container.create_receiver(self.connection, source=self.node,
                                                  target=self.reply_to,
                                                  name=f"bare-r-{uuid.uuid4()}")
        self.receiver.flow(self.window)

    def on_link_opened(self, event: Any) -> None:
        if self.sender is None or self.started:
            return
        if self.sender.state & self.sender.REMOTE_ACTIVE and (
            self.receiver.state & self.receiver.REMOTE_ACTIVE
        ):
            self.started = time.perf_counter()
            self._fill()

    def on_sendable(self, event: Any) -> None:
        if self.started and event.link.name == self.sender.name:
            self._fill()

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
        if receiver.credit < self.window // 2:
            receiver.flow(self.window - receiver.credit)


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
    conn_str: str, entity: str, count: int, make: RequestFactory, *, window: int = 64
) -> BareResult:
    """Send ``count`` requests built by ``make`` with ``window`` in flight; time the run."""
    loop = _Loop(conn_str, entity, count, window, make)
    Container(loop).run()
    if loop.ok + loop.failed != count:
        raise RuntimeError(f"bare loop ended after {loop.ok + loop.failed} of {count} replies")
    return BareResult(loop.ok, loop.failed, loop.finished - loop.started)
