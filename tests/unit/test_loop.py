"""The engine's drivers on their own: timers, wake-ups, refused connections, a server and a
client. Every scenario runs on both drivers: the selector loop on a thread of its own
(``EngineLoop``, the sync client's) and the running asyncio event loop (``AsyncioLoop``,
the asyncio client's)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from proton import Message

from sbmgmt._engine.open_links import create_receiver, create_sender
from sbmgmt.transport.asyncio_loop import AsyncioLoop
from sbmgmt.transport.proton_loop import EngineEvent, ProtonLoop
from sbmgmt.transport.selector_loop import EngineLoop
from sbmgmt.transport.server_loop import ServerLoop
from tests._waiting import wait_until, wait_until_async

DRIVERS = ["selector", "asyncio"]


class _Recorder:
    """A handler that notes what happened and stops the loop when told to."""

    def __init__(self) -> None:
        self.loop: ProtonLoop | None = None
        self.seen: list[str] = []
        self.wakes = 0

    def on_wake(self) -> None:
        self.wakes += 1
        self.seen.append("wake")
        assert self.loop is not None
        self.loop.stop()

    def on_transport_error(self, event: EngineEvent) -> None:
        self.seen.append(f"error: {event.transport.condition.description}")

    def on_transport_closed(self, event: EngineEvent) -> None:
        self.seen.append("closed")
        assert self.loop is not None
        self.loop.stop()


def _run(handler: Any, start: Any, driver: str = "selector") -> ProtonLoop:
    """Run ``handler`` on a loop of the driver until it stops; ``start(loop)`` first (on
    the loop's thread for asyncio, before the thread starts for the selector loop)."""
    if driver == "asyncio":
        return asyncio.run(_run_on_event_loop(handler, start))
    loop = EngineLoop(handler, container_id="test")
    handler.loop = loop
    start(loop)
    thread = threading.Thread(target=loop.run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    return loop


async def _run_on_event_loop(handler: Any, start: Any) -> AsyncioLoop:
    failures: list[Exception] = []
    loop = AsyncioLoop(handler, container_id="test", loop=asyncio.get_running_loop(),
                       failed=failures.append)
    handler.loop = loop
    start(loop)
    assert await wait_until_async(lambda: loop.ended), "the driver did not stop"
    assert failures == []
    return loop


@pytest.mark.parametrize("driver", DRIVERS)
def test_timers_run_in_deadline_order_and_cancelled_ones_do_not(driver: str) -> None:
    recorder = _Recorder()
    order: list[str] = []

    def start(loop: ProtonLoop) -> None:
        loop.schedule(0.02, lambda: order.append("second"))
        loop.schedule(0.0, lambda: order.append("first"))
        loop.schedule(0.01, lambda: order.append("never")).cancel()
        loop.schedule(0.03, loop.stop)

    _run(recorder, start, driver)
    assert order == ["first", "second"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_far_off_timer_does_not_break_the_wait(driver: str) -> None:
    recorder = _Recorder()

    def start(loop: ProtonLoop) -> None:
        loop.schedule(10 ** 10, lambda: None)   # e.g. a message scheduled for 2099
        threading.Timer(0.05, loop.wake).start()

    _run(recorder, start, driver)
    assert recorder.seen == ["wake"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_burst_of_wake_ups_calls_on_wake_once(driver: str) -> None:
    # from another thread for the selector loop (start runs before its thread does), from
    # the event loop's own thread for asyncio (as the asyncio client hands work over)
    recorder = _Recorder()

    def start(loop: ProtonLoop) -> None:
        for _ in range(100):
            loop.wake()

    _run(recorder, start, driver)
    assert recorder.wakes == 1


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_refused_connection_ends_in_a_transport_error_and_close(driver: str) -> None:
    with socket.socket() as probe:   # a port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    recorder = _Recorder()
    _run(recorder, lambda loop: loop.connect("127.0.0.1", port), driver)
    assert recorder.seen[-1] == "closed"
    assert any(s.startswith("error: connection failed: ECONNREFUSED") for s in recorder.seen)


class _Echo:
    """Server side: open what the peer opens, answer every message with its body."""

    def __init__(self) -> None:
        self.replies: dict[str, Any] = {}

    def on_connection_remote_open(self, event: EngineEvent) -> None:
        event.connection.open()

    def on_session_remote_open(self, event: EngineEvent) -> None:
        event.session.open()

    def on_connection_remote_close(self, event: EngineEvent) -> None:
        event.connection.close()

    def on_link_remote_open(self, event: EngineEvent) -> None:
        link = event.link
        if link.is_receiver:
            link.target.address = link.remote_target.address
            link.flow(10)
        else:
            link.source.address = link.remote_source.address
            self.replies[link.remote_target.address] = link
        link.open()

    def on_delivery(self, event: EngineEvent) -> None:
        link = event.link
        if not link.is_receiver:
            return
        delivery = event.delivery
        request = Message()
        request.decode(link.recv(delivery.pending))
        link.advance()
        delivery.update(delivery.ACCEPTED)
        delivery.settle()
        sender = self.replies[str(request.reply_to)]
        sender.send(Message(correlation_id=request.id, body=request.body))


class _Client:
    """Client side: one request over a link pair, stop on the reply."""

    def __init__(self) -> None:
        self.loop: ProtonLoop | None = None
        self.reply: Message | None = None

    def on_link_remote_open(self, event: EngineEvent) -> None:
        if event.link.is_sender:
            event.link.send(Message(id=7, reply_to="me", body="ping"))

    def on_delivery(self, event: EngineEvent) -> None:
        link = event.link
        if link.is_receiver:
            self.reply = Message()
            self.reply.decode(link.recv(event.delivery.pending))
            assert self.loop is not None
            self.loop.stop()


@contextlib.contextmanager
def _serving(handler: Any) -> Iterator[int]:
    """A server loop for ``handler`` on its own thread; its port."""
    server = ServerLoop(handler, container_id="server")
    port = server.listen("127.0.0.1", 0)
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        yield port
    finally:
        server.stop()
        server.wake()
        thread.join(10)


def _echo_links(host: str, port: int) -> Callable[[ProtonLoop], None]:
    """What starts a client on ``host:port``: a connection, a sender to the echo node and a
    receiver of its replies with one credit."""

    def start(loop: ProtonLoop) -> None:
        connection = loop.connect(host, port)
        create_sender(connection, target="node", name="s")
        create_receiver(connection, source="node", target="me", name="r").flow(1)

    return start


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_client_loop_and_a_server_loop_exchange_a_request_and_reply(driver: str) -> None:
    client = _Client()
    with _serving(_Echo()) as port:

        _run(client, _echo_links("127.0.0.1", port), driver)
    assert client.reply is not None
    assert (client.reply.correlation_id, client.reply.body) == (7, "ping")


class _AsksForHeartbeats(_Echo):
    """A server whose AMQP idle-time-out (1 s) asks peers for a frame every 0.5 s."""

    def on_connection_bound(self, event: EngineEvent) -> None:
        event.transport.idle_timeout = 1.0


class _Idle:
    """Client side: open a connection, then send nothing; count the frames written."""

    def __init__(self) -> None:
        self.loop: ProtonLoop | None = None
        self.lost = False
        self.frames_at_open = 0
        self.frames_while_idle = 0

    def on_connection_remote_open(self, event: EngineEvent) -> None:
        transport = event.transport
        self.frames_at_open = transport.frames_output
        assert self.loop is not None
        self.loop.schedule(2.0, lambda: self._done(transport))

    def on_connection_remote_close(self, event: EngineEvent) -> None:
        self.lost = True

    def _done(self, transport: Any) -> None:
        self.frames_while_idle = transport.frames_output - self.frames_at_open
        assert self.loop is not None
        self.loop.stop()


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_idle_connection_sends_heartbeats(driver: str) -> None:
    """The loop ticks its transport, so a connection with nothing to say still writes the
    empty frames the peer's idle time-out asks for (one per 0.5 s here) and stays open."""
    client = _Idle()
    with _serving(_AsksForHeartbeats()) as port:
        _run(client, lambda loop: loop.connect("127.0.0.1", port), driver)
    assert not client.lost
    assert client.frames_while_idle >= 2


class _OpenThenLeave:
    """Client side: once the peer has opened the connection, close it and stop (the
    loop writes the close frame and closes the socket)."""

    def __init__(self) -> None:
        self.loop: ProtonLoop | None = None

    def on_connection_remote_open(self, event: EngineEvent) -> None:
        event.connection.close()
        assert self.loop is not None
        self.loop.stop()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_server_loop_closes_the_socket_of_every_finished_connection(driver: str) -> None:
    """Twenty clients connect and leave; the server's descriptors go back to where they
    were (a closed transport's socket is found again and closed, not leaked)."""
    with _serving(_Echo()) as port:
        before = _open_descriptors()
        for _ in range(20):
            _run(_OpenThenLeave(), lambda loop: loop.connect("127.0.0.1", port), driver)
        assert wait_until(lambda: _open_descriptors() <= before)


def test_an_asyncio_driver_resolves_a_host_name_off_the_event_loop() -> None:
    """A name (not an IP literal) is looked up in the event loop's executor; the request
    and reply then go as with an address."""
    client = _Client()
    with _serving(_Echo()) as port:

        _run(client, _echo_links("localhost", port), "asyncio")
    assert client.reply is not None and client.reply.body == "ping"


class _Raises(_Echo):
    def on_connection_remote_open(self, event: EngineEvent) -> None:
        raise KeyError("a handler bug")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_what_a_handler_raises_ends_the_asyncio_driver_and_closes_its_sockets() -> None:
    """Without on_handler_error, an exception ends the driver: ``failed`` gets it and
    every socket is closed (as the selector loop ends its ``run``)."""
    with _serving(_Echo()) as port:
        before = _open_descriptors()

        async def main() -> tuple[AsyncioLoop, list[Exception]]:
            failures: list[Exception] = []
            loop = AsyncioLoop(_Raises(), container_id="test",
                               loop=asyncio.get_running_loop(), failed=failures.append)
            loop.connect("127.0.0.1", port)
            await wait_until_async(lambda: loop.ended)
            return loop, failures

        loop, failures = asyncio.run(main())
    assert loop.ended
    assert [type(error) for error in failures] == [KeyError]
    assert _open_descriptors() <= before


class _AlwaysHandedWork:
    """A gate whose owner is handed new work in every round (a caller that never pauses)."""

    def __init__(self) -> None:
        self.rounds = 0

    def sleep(self) -> bool:
        self.rounds += 1
        return False

    def awake(self) -> None:
        raise AssertionError("the loop never waits with this gate")


def test_work_handed_over_in_every_round_does_not_starve_the_sockets_or_the_timers() -> None:
    # the loop then takes the work without waiting, but still reads what the sockets hold
    # and runs the timers that are due, without blocking
    client, gate, fired = _Client(), _AlwaysHandedWork(), threading.Event()
    with _serving(_Echo()) as port:
        loop = EngineLoop(client, container_id="test", gate=gate)
        client.loop = loop
        _echo_links("127.0.0.1", port)(loop)
        loop.schedule(0.0, fired.set)
        thread = threading.Thread(target=loop.run, daemon=True)
        thread.start()
        thread.join(10)
        if thread.is_alive():
            loop.stop()
            thread.join(10)
    assert fired.is_set(), "a due timer never ran"
    assert client.reply is not None, "the reply was never read"
    assert (client.reply.correlation_id, client.reply.body) == (7, "ping")
    assert gate.rounds > 0


class _SlowFirstEcho(_Echo):
    """An echo node whose first request takes a while after its reply is made (as a
    page of a thousand messages does), and whose second waits until the client has the
    first reply: which it can only have if the loop wrote it before the run of events
    that brought both requests ended."""

    def __init__(self, first_reply_read: threading.Event) -> None:
        super().__init__()
        self.first_reply_read = first_reply_read
        self.handled = 0
        self.first_reply_left_early: bool | None = None

    def on_delivery(self, event: EngineEvent) -> None:
        if not event.link.is_receiver:
            return
        self.handled += 1
        super().on_delivery(event)
        if self.handled == 1:
            time.sleep(0.01)  # longer than the loop lets a run go unwritten (2 ms)
        elif self.handled == 2:
            self.first_reply_left_early = self.first_reply_read.wait(5)


class _TwoRequests:
    """Client side: two requests written together; stop when both replies came."""

    def __init__(self, first_reply_read: threading.Event) -> None:
        self.loop: ProtonLoop | None = None
        self.first_reply_read = first_reply_read
        self.replies: list[Any] = []

    def on_link_remote_open(self, event: EngineEvent) -> None:
        if event.link.is_sender:
            for number in (1, 2):
                event.link.send(Message(id=number, reply_to="me", body="ping"))

    def on_delivery(self, event: EngineEvent) -> None:
        link = event.link
        if link.is_receiver:
            reply = Message()
            reply.decode(link.recv(event.delivery.pending))
            link.advance()
            self.replies.append(reply.correlation_id)
            self.first_reply_read.set()
            if len(self.replies) == 2:
                assert self.loop is not None
                self.loop.stop()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_reply_made_early_in_a_long_run_of_events_leaves_before_the_run_ends(
        driver: str) -> None:
    first_reply_read = threading.Event()
    server = _SlowFirstEcho(first_reply_read)
    client = _TwoRequests(first_reply_read)

    def start(loop: ProtonLoop) -> None:
        connection = loop.connect("127.0.0.1", port)
        create_sender(connection, target="node", name="s")
        create_receiver(connection, source="node", target="me", name="r").flow(2)

    with _serving(server) as port:
        _run(client, start, driver)
    assert client.replies == [1, 2]
    assert server.first_reply_left_early is True
