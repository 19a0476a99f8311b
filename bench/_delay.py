"""A TCP proxy that delays every byte by the same time, in a process of its own.

The fake's injected latency (``fake.faults.latency``) delays management replies only; a
receive link's transfers and credit go undelayed. The purge scenario compares a batch
delete (management) with the official SDK's receive-and-delete loop (a receive link), so
both must meet the same round trip: this proxy sits between the client and the fake and
holds each chunk, in each direction, for half the latency (a round trip costs the whole of
it), in order. It runs in a child process so that the measured clients do not pay for it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import multiprocessing
import re
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection

__all__ = ["delayed"]

_START_TIMEOUT = 30.0
_CHUNK = 65536
_PORT = re.compile(r"(Endpoint=sb://[^:;/]+):(\d+)")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                delay: float) -> None:
    """Forward ``reader`` to ``writer``, each chunk ``delay`` seconds after it came.

    Every chunk already due when the writer wakes goes out in one write: AMQP's small
    frames come as many small chunks, and a write (and a wake) per chunk made this proxy
    take a fifth of the machine's CPU from the processes it measures at 20 ms."""
    pending: collections.deque[tuple[float, bytes]] = collections.deque()
    arrived = asyncio.Event()

    async def send() -> None:
        while True:
            while not pending:
                arrived.clear()
                await arrived.wait()
            wait = pending[0][0] - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            now = time.monotonic()
            due: list[bytes] = []
            while pending and pending[0][0] <= now:
                due.append(pending.popleft()[1])
            ended = b"" in due  # the end: what came before it, then close
            writer.write(b"".join(due))
            await writer.drain()
            if ended:
                break
        writer.close()

    sender = asyncio.ensure_future(send())
    try:
        while data := await reader.read(_CHUNK):
            pending.append((time.monotonic() + delay, data))
            arrived.set()
    except ConnectionError:
        pass
    pending.append((0.0, b""))
    arrived.set()
    with contextlib.suppress(ConnectionError):
        await sender


async def _proxy(target_port: int, one_way: float, control: Connection) -> None:
    async def handle(client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        # Cancelled when the proxy stops with the connection still open: nothing to report.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(_pipe(client_reader, server_writer, one_way),
                                 _pipe(server_reader, client_writer, one_way))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    control.send(server.sockets[0].getsockname()[1])
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, control.recv)  # any message: stop
    server.close()


def _serve(target_port: int, one_way: float, control: Connection) -> None:
    asyncio.run(_proxy(target_port, one_way, control))


@contextlib.contextmanager
def delayed(conn_str: str, round_trip_ms: float) -> Iterator[str]:
    """``conn_str`` through a proxy that adds ``round_trip_ms`` to every round trip (the
    same connection string when it is 0)."""
    if round_trip_ms <= 0:
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
