"""The asyncio client's engine runs on the event loop it is used from: no thread of its
own, futures of that loop, and the rules for other threads and other loops
(sbmgmt/_drivers/event_loop.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from fakes import FakeNamespace
from sbmgmt import ops
from sbmgmt._drivers.event_loop import EARLY_TURN
from sbmgmt._engine.engine import Engine
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.errors import ClientClosedError, ConnectionLostError
from sbmgmt.message import Message
from tests._waiting import wait_until

from ._silent_server import SilentServer

NO_RETRY = RetryPolicy(max_attempts=1)
PEEK = ops.peek_message.Request(from_sequence_number=1, message_count=1)


def _emulator(port: int) -> str:
    return (f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true")


@pytest.fixture
def loop_in_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running on a thread of its own (as another part of an application
    might run one)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="other-loop")
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def test_awaited_requests_resolve_on_the_loop_with_no_thread_of_the_clients(
        fake: FakeNamespace) -> None:
    fake.send("q", Message(body=b"m0"))
    before = {thread.name for thread in threading.enumerate()}

    async def main() -> tuple[list[bytes], set[str]]:
        async with AsyncManagementClient.from_connection_string(fake.connection_string) as c:
            peeked = await c.entity("q").peek_messages(1, 1)
            during = {thread.name for thread in threading.enumerate()}
            assert c.io_thread_name.startswith("sbmgmt-aio-")
            return [m.body for m in peeked], during

    bodies, during = asyncio.run(main())
    assert bodies == [b"m0"]
    assert not {name for name in during - before if name.startswith("sbmgmt")}


def test_a_large_gathers_first_requests_are_sent_while_the_rest_are_being_built(
        fake: FakeNamespace) -> None:
    """A turn queued with call_soon runs after every task of the pass: without the early
    turns, nothing of a gather would be on the wire until all of it was built."""
    fake.send("q", Message(body=b"m0"))
    calls = EARLY_TURN * 3

    async def main() -> tuple[int, int]:
        async with AsyncManagementClient.from_connection_string(fake.connection_string) as c:
            q = c.entity("q")
            await q.peek_messages(1, 1)
            before = c.stats.sent
            sent_when_all_were_built: list[int] = []

            async def after_the_others_were_built() -> None:
                sent_when_all_were_built.append(c.stats.sent - before)

            peeked = await asyncio.gather(*(q.peek_messages(1, 1) for _ in range(calls)),
                                          after_the_others_were_built())
            assert all(p is None or [m.body for m in p] == [b"m0"] for p in peeked)
            return sent_when_all_were_built[0], c.stats.sent - before

    sent_early, sent_in_all = asyncio.run(main())
    assert sent_early >= calls - EARLY_TURN + 1
    assert sent_in_all == calls


def test_made_outside_any_loop_then_used_from_two_event_loops_in_turn(
        fake: FakeNamespace) -> None:
    """asyncio.run twice (a test framework's loop per test): the client follows the new
    loop once the old one has closed, and its counters keep growing."""
    fake.send("q", Message(body=b"m0"))
    client = AsyncManagementClient.from_connection_string(fake.connection_string)
    q = client.entity("q")

    async def peek() -> list[bytes]:
        return [m.body for m in await q.peek_messages(1, 1)]

    assert asyncio.run(peek()) == [b"m0"]
    assert asyncio.run(peek()) == [b"m0"]
    assert client.stats.completed == 2

    async def close() -> None:
        await client.close()

    asyncio.run(close())


def test_with_no_event_loop_at_all_a_call_is_a_runtime_error(fake: FakeNamespace) -> None:
    client = AsyncManagementClient.from_connection_string(fake.connection_string)
    with pytest.raises(RuntimeError, match="no running event loop"):
        client.entity("q").submit(PEEK)


def test_a_thread_hands_requests_to_the_clients_event_loop(fake: FakeNamespace) -> None:
    """``submit`` from another thread (a LockRenewer thread, a worker) while the client's
    loop runs: its concurrent future resolves on that loop."""
    fake.send("q", Message(body=b"m0"))

    async def main() -> list[bytes]:
        async with AsyncManagementClient.from_connection_string(fake.connection_string) as c:
            q = c.entity("q")
            await q.peek_messages(1, 1)  # bound to this loop

            def from_a_thread() -> list[bytes]:
                future = q.submit(PEEK)
                return [m.body for m in future.result(10).messages]

            return await asyncio.to_thread(from_a_thread)

    assert asyncio.run(main()) == [b"m0"]


def test_awaited_from_another_running_loop_it_goes_through_the_clients_loop(
        fake: FakeNamespace, loop_in_thread: asyncio.AbstractEventLoop) -> None:
    fake.send("q", Message(body=b"m0"))
    client = AsyncManagementClient.from_connection_string(fake.connection_string)
    q = client.entity("q")

    async def peek() -> list[bytes]:
        return [m.body for m in await q.peek_messages(1, 1)]

    # bound to the loop of the thread, which keeps running
    assert asyncio.run_coroutine_threadsafe(peek(), loop_in_thread).result(10) == [b"m0"]
    assert asyncio.run(peek()) == [b"m0"]  # another loop, here

    async def close() -> None:
        await client.close()

    asyncio.run(close())  # from the other loop: done by the client's loop
    with pytest.raises(ClientClosedError):
        asyncio.run_coroutine_threadsafe(peek(), loop_in_thread).result(10)


def test_close_fails_what_is_pending_at_once(silent: SilentServer) -> None:
    async def main() -> tuple[list[BaseException | None], float]:
        client = AsyncManagementClient.from_connection_string(
            _emulator(silent.port), timeout=60, retry=NO_RETRY)
        q = client.entity("q")
        waiting = [asyncio.ensure_future(q.peek_messages(1, 1)) for _ in range(20)]
        while not silent.held:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await client.close()
        outcomes = await asyncio.gather(*waiting, return_exceptions=True)
        return [o if isinstance(o, BaseException) else None for o in outcomes], (
            time.monotonic() - started)

    outcomes, took = asyncio.run(main())
    assert all(isinstance(o, ClientClosedError) for o in outcomes)
    assert took < 5.0


def test_what_was_pending_when_the_old_loop_stopped_fails_as_a_lost_connection(
        silent: SilentServer, loop_in_thread: asyncio.AbstractEventLoop) -> None:
    client = AsyncManagementClient.from_connection_string(
        _emulator(silent.port), timeout=60, retry=NO_RETRY)
    q = client.entity("q")

    async def bind() -> None:
        q.submit(PEEK)  # binds the client to the thread's loop

    asyncio.run_coroutine_threadsafe(bind(), loop_in_thread).result(10)
    pending: Future[ops.peek_message.Response] = q.submit(PEEK)  # from this thread
    assert wait_until(lambda: len(silent.held) >= 2)
    loop_in_thread.call_soon_threadsafe(loop_in_thread.stop)
    assert wait_until(lambda: not loop_in_thread.is_running())

    async def use_again() -> None:
        q.submit(PEEK)  # binds the client to this loop: the old connection is dropped
        with pytest.raises(ConnectionLostError, match="event loop the client ran on"):
            await asyncio.wait_for(asyncio.wrap_future(pending), 10)
        await client.close()

    asyncio.run(use_again())


def test_an_engine_that_raises_fails_everything_and_closes_the_client(
        fake: FakeNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Engine, event: object) -> None:
        raise KeyError("an engine bug")

    monkeypatch.setattr(Engine, "on_delivery", broken)

    async def main() -> None:
        client = AsyncManagementClient.from_connection_string(
            fake.connection_string, timeout=10, retry=NO_RETRY)
        with pytest.raises(ClientClosedError):
            await client.entity("q").peek_messages(1, 1)
        with pytest.raises(ClientClosedError):
            await client.entity("q").peek_messages(1, 1)

    asyncio.run(main())
