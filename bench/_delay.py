"""A TCP proxy that delays every byte by the same time, in a process of its own.

The fake's injected latency (``fake.faults.latency``) delays management replies only; a
receive link's transfers and credit go undelayed. The purge scenario compares a batch
delete (management) with the official SDK's receive-and-delete loop (a receive link), so
both must meet the same round trip: this proxy sits between the client and the fake and
holds each chunk, in each direction, for half the latency (a round trip costs the whole of
it), in order. It runs in a child process so that the measured clients do not pay for it,
in real time where the machine allows (:func:`_real_time`), so that it delivers on time.

What the proxy costs at 0 ms (``bench.repair``'s ``0p`` row) is the extra hop, not this
module's Python: a throw-away proxy in C (epoll, a timerfd, the same real-time priority;
not kept) made a 10,000-message resubmit at 0 ms as slow as this one does (medians of 6
interleaved rounds: 2,287 ms through this proxy, 2,292 ms through the C one, 2,073 ms
straight to the fake). On a 2-core machine that the client and the fake keep busy, each
chunk's second pass through the kernel and the wake-ups it takes fall on their cores.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import multiprocessing
import os
import re
import sys
from collections.abc import Iterator
from multiprocessing.connection import Connection

__all__ = ["delayed"]

_START_TIMEOUT = 30.0
_PORT = re.compile(r"(Endpoint=sb://[^:;/]+):(\d+)")


class _Delayed(asyncio.Protocol):
    """One direction's reading end: each chunk is written to ``peer`` ``delay`` seconds
    after it came, in order.

    One timer per direction, set for the oldest chunk not yet due; when it fires, every
    chunk due by then goes out in one write. AMQP's small frames come as many small chunks,
    and the proxy's CPU is taken from the processes it measures (the same cores): on asyncio
    protocols, with no stream, event or coroutine step per chunk, it takes a third less than
    its first form did (a 10,000-message resubmit at 20 ms: 0.25 -> 0.17 s)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.loop = asyncio.get_running_loop()
        #: Where the chunks go: the other connection's transport, once it is connected.
        self.peer: asyncio.Transport | None = None
        self.transport: asyncio.Transport | None = None
        #: (due on the loop's clock, chunk); ``b""`` is the end.
        self.pending: collections.deque[tuple[float, bytes]] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.pending.append((self.loop.time() + self.delay, data))
        self.arm()

    def eof_received(self) -> bool:
        self.connection_lost(None)
        return True  # the other side is closed when the end is due

    def connection_lost(self, exc: Exception | None) -> None:
        if not (self.pending and self.pending[-1][1] == b""):
            self.pending.append((self.loop.time() + self.delay, b""))
            self.arm()

    def arm(self) -> None:
        """Set the timer for the oldest chunk (once the peer is there to take it)."""
        if self.timer is None and self.pending and self.peer is not None:
            self.timer = self.loop.call_at(self.pending[0][0], self._flush)

    def _flush(self) -> None:
        self.timer = None
        peer = self.peer
        assert peer is not None
        now = self.loop.time()
        due: list[bytes] = []
        while self.pending and self.pending[0][0] <= now:
            due.append(self.pending.popleft()[1])
        if not peer.is_closing():
            peer.write(b"".join(due))
        if b"" in due:
            peer.close()
            self.pending.clear()
            return
        self.arm()


async def _proxy(target_port: int, one_way: float, control: Connection) -> None:
    loop = asyncio.get_running_loop()
    connecting: set[asyncio.Task[None]] = set()

    def accepted() -> _Delayed:
        """A client connected: the fake is connected to for it, and the two are joined."""
        from_client = _Delayed(one_way)
        from_fake = _Delayed(one_way)

        async def connect() -> None:
            try:
                to_fake, _ = await loop.create_connection(lambda: from_fake, "127.0.0.1",
                                                          target_port)
            except OSError:
                if from_client.transport is not None:
                    from_client.transport.close()
                return
            from_fake.peer = from_client.transport
            from_client.peer = to_fake
            from_client.arm()  # what the client sent meanwhile

        task = loop.create_task(connect())
        connecting.add(task)
        task.add_done_callback(connecting.discard)
        return from_client

    server = await loop.create_server(accepted, "127.0.0.1", 0)
    control.send(server.sockets[0].getsockname()[1])
    await loop.run_in_executor(None, control.recv)  # any message: stop
    server.close()


def _real_time() -> bool:
    """Run this process before every ordinary one whenever it is ready (SCHED_FIFO), as a
    network delivers on time whatever the machine's load; whether it could (it takes root
    or CAP_SYS_NICE).

    At normal priority each of the proxy's wake-ups waits for a core that the fake and the
    measured client keep busy (two cores, three processes): through it with no delay at all,
    a resubmit ran 9-24% slower than straight to the fake; in real time 0-16% (102% and
    84% of straight to the fake in two runs of two rounds: the machine's noise is as
    large). It takes about 0.17 s of CPU in a 20 ms resubmit, mostly asleep."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (AttributeError, OSError):
        return False
    return True


def _serve(target_port: int, one_way: float, control: Connection) -> None:
    if not _real_time():
        print("bench: the delay proxy runs at normal priority (no SCHED_FIFO here): under "
              "load its wake-ups wait for a core, and rates at latency come out low",
              file=sys.stderr)
    asyncio.run(_proxy(target_port, one_way, control))


@contextlib.contextmanager
def delayed(conn_str: str, round_trip_ms: float, *,
            proxy_at_zero: bool = False) -> Iterator[str]:
    """``conn_str`` through a proxy that adds ``round_trip_ms`` to every round trip (the
    same connection string when it is 0, unless ``proxy_at_zero``: then through the proxy
    with no delay, to tell what the proxy itself costs from what the latency does)."""
    if round_trip_ms <= 0 and not proxy_at_zero:
        yield conn_str
        return
    match = _PORT.search(conn_str)
    if match is None:
        raise ValueError("the connection string names no Endpoint port")
    context = multiprocessing.get_context("spawn")
    control, child_end = context.Pipe()
    process = context.Process(target=_serve, args=(int(match.group(2)),
                                                   round_trip_ms / 2000, child_end),
                              name="bench-delay", daemon=True)
    process.start()
    try:
        if not control.poll(_START_TIMEOUT):
            raise RuntimeError("the delay proxy did not start")
        port = control.recv()
        yield _PORT.sub(lambda m: f"{m.group(1)}:{port}", conn_str, count=1)
    finally:
        with contextlib.suppress(OSError):
            control.send("stop")
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)
