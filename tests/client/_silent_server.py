"""A tiny AMQP server for the tests the fake namespace cannot stage.

It accepts any CBS token (status 202), attaches every link, grants credit, and
holds management requests without answering them until a test calls
:meth:`SilentServer.reply_to_held` — so requests stay in flight, time out, or are
cut off by :meth:`SilentServer.stop`. Its transaction coordinator declares
transactions (txn-id :data:`TXN_ID`; or rejects each declare with the condition
``refuse_declares``, when set) and never answers a discharge.
"""

from __future__ import annotations

import threading
from typing import Any

from proton import Condition, Delivery, Described, Message, Terminus, int32
from proton.handlers import MessagingHandler
from proton.reactor import ApplicationEvent, Container, EventInjector

TXN_ID = b"txn-silent-0001"
_DECLARE = 0x31
_DECLARED = 0x33


class SilentServer(MessagingHandler):  # type: ignore[misc]
    def __init__(self, port: int = 0) -> None:
        super().__init__(prefetch=100, auto_accept=False)
        self.held: list[Message] = []
        #: (delivery state type, its data) of each held request's transfer
        self.states: list[tuple[int, list[bytes]]] = []
        #: the body of each message sent to the coordinator (declare, discharge)
        self.controls: list[Any] = []
        #: reject declares with this error condition (None: declare them)
        self.refuse_declares: str | None = None
        self.received = threading.Event()
        self._senders: dict[str, Any] = {}
        self._connections: list[Any] = []
        self._container = Container(self)
        self._injector = EventInjector()
        self._container.selectable(self._injector)
        self._acceptor = self._container.acceptor("127.0.0.1", port)
        self.port: int = self._acceptor._selectable._delegate.getsockname()[1]
        self._thread = threading.Thread(target=self._container.run, name="silent-server",
                                        daemon=True)
        self._thread.start()

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        if link.remote_source.address:
            link.source.address = link.remote_source.address
        if link.remote_target.address:
            link.target.address = link.remote_target.address
        if link.remote_target.type == Terminus.COORDINATOR:
            link.target.type = Terminus.COORDINATOR
        if link.is_sender:
            self._senders[link.remote_target.address] = link

    def on_message(self, event: Any) -> None:
        message = event.message
        delivery = event.delivery
        if event.link.remote_target.type == Terminus.COORDINATOR:
            body = message.body
            if isinstance(body, Described) and isinstance(body.value, list):
                body = Described(body.descriptor, [  # proton's binaries point into its buffer
                    bytes(v) if isinstance(v, memoryview) else v for v in body.value])
            self.controls.append(body)
            if isinstance(body, Described) and body.descriptor == _DECLARE:
                if self.refuse_declares is None:
                    delivery.local.data = [TXN_ID]
                    delivery.update(_DECLARED)
                else:
                    delivery.local.condition = Condition(self.refuse_declares, "refused")
                    delivery.update(Delivery.REJECTED)
                delivery.settle()
            return  # a discharge is never answered
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        if (event.link.remote_target.address or "").startswith("$cbs"):
            self._send(message, {"status-code": int32(202)})
            return
        self.held.append(message)
        remote = event.delivery.remote
        self.states.append((remote.type, [bytes(v) for v in remote.data or []]))
        self.received.set()

    def _send(self, request: Message, properties: dict[str, Any]) -> None:
        link = self._senders.get(request.reply_to)
        if link is not None:
            link.send(Message(correlation_id=request.id, properties=properties, body=None))

    def on_reply_held(self, event: Any) -> None:
        for request in self.held:
            self._send(request, {"statusCode": int32(200)})
        self.held.clear()

    def reply_to_held(self) -> None:
        """Answer every held request with an empty 200 (from the server's thread)."""
        self._injector.trigger(ApplicationEvent("reply_held"))

    def on_stop(self, event: Any) -> None:
        self._acceptor.close()
        for connection in self._connections:
            connection.close()
        self._container.schedule(0.2, self)  # let the close frames go out

    def on_timer_task(self, event: Any) -> None:
        self._injector.close()
        self._container.stop()

    def on_connection_opening(self, event: Any) -> None:
        self._connections.append(event.connection)

    def stop(self) -> None:
        """Close every connection and the listener, and join the server thread."""
        if self._thread.is_alive():
            self._injector.trigger(ApplicationEvent("stop"))
            self._thread.join(10)
