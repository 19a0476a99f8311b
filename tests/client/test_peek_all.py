"""peek_all against the fake namespace: every message once, in order, with several pages in
flight, under holes (completed and expired messages), concurrent sends, dead-lettering
during the read and a connection lost mid-read; sync and asyncio."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import FakeClock, FakeNamespace
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message, ReceivedMessage

_DEAD_LETTER = "/$DeadLetterQueue"


@pytest.fixture
def clocked() -> Iterator[FakeNamespace]:
    with FakeNamespace(clock=FakeClock()) as namespace:
        yield namespace


def _numbers(messages: list[ReceivedMessage]) -> list[int]:
    return [m.sequence_number for m in messages]  # type: ignore[misc]


def _queue(fake: FakeNamespace) -> str:
    name = f"q-{uuid.uuid4().hex[:8]}"
    fake.add_queue(name)
    return name


def _fill(fake: FakeNamespace, queue: str, count: int, ttl: timedelta | None = None) -> None:
    fake.send(queue, *(Message(body=str(i).encode(), time_to_live=ttl) for i in range(count)))


async def _read_async(conn_str: str, queue: str, **options: int) -> list[ReceivedMessage]:
    async with AsyncManagementClient.from_connection_string(conn_str, timeout=10) as client:
        return [m async for m in client.entity(queue).peek_all(**options)]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from("kce"), min_size=0, max_size=120),
       page_size=st.integers(1, 25), in_flight=st.integers(1, 6))
def test_every_message_once_in_order_whatever_the_holes(
    clocked: FakeNamespace, kinds: list[str], page_size: int, in_flight: int
) -> None:
    """Each message is kept (k), completed (c) or expired (e): holes of any pattern."""
    fake = clocked
    queue = _queue(fake)
    for kind in kinds:
        fake.send(queue, Message(body=kind.encode(), time_to_live=(
            timedelta(seconds=5) if kind == "e" else None)))
    locked = fake.receive_and_lock(queue, len(kinds))
    completed = [m.lock_token for m, kind in zip(locked, kinds, strict=True) if kind == "c"]
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        entity = client.entity(queue)
        if completed:
            entity.update_disposition(completed, "completed")
        fake.clock.advance(120)  # past the locks and the "e" messages' time to live
        kept = [m.sequence_number for m, kind in zip(locked, kinds, strict=True) if kind == "k"]
        read = _numbers(list(entity.peek_all(page_size=page_size, pages_in_flight=in_flight)))
    assert read == kept
    assert _numbers(asyncio.run(_read_async(
        fake.connection_string, queue, page_size=page_size, pages_in_flight=in_flight))) == kept


def test_a_range_and_a_start_after_a_long_hole(fake: FakeNamespace,
                                               client: ManagementClient) -> None:
    _fill(fake, "q", 300)
    entity = client.entity("q")
    assert _numbers(list(entity.peek_all(40, 77, page_size=8))) == list(range(40, 78))
    assert _numbers(list(entity.peek_all(301))) == []
    locked = fake.receive_and_lock("q", 250)
    entity.update_disposition([m.lock_token for m in locked], "completed")  # type: ignore[misc]
    assert _numbers(list(entity.peek_all(page_size=10, pages_in_flight=4))) == list(
        range(251, 301))


def test_concurrent_sends_are_seen_at_most_once_in_order(
        fake: FakeNamespace, client: ManagementClient) -> None:
    _fill(fake, "q", 500)
    stop = threading.Event()

    def send() -> None:  # 500 more, 5 at a time, while the read goes on (a bounded chase)
        for _ in range(100):
            if stop.is_set():
                return
            _fill(fake, "q", 5)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        read = _numbers(list(client.entity("q").peek_all(page_size=7, pages_in_flight=5)))
    finally:
        stop.set()
        sender.join()
    assert read == sorted(set(read))  # in order, no duplicates
    assert read[:500] == list(range(1, 501))  # what was there before the read, all of it
    assert set(read) <= set(range(1, 1001))


def test_dead_lettering_during_the_read(fake: FakeNamespace, client: ManagementClient) -> None:
    _fill(fake, "q", 400)
    locked = fake.receive_and_lock("q", 400)
    entity = client.entity("q")
    moved = {m.sequence_number for m in locked[::3]}
    read: list[int] = []
    for message in entity.peek_all(page_size=9, pages_in_flight=4):
        read.append(message.sequence_number)  # type: ignore[arg-type]
        if len(read) == 100:  # some behind the cursor, some in flight, most ahead
            entity.update_disposition([m.lock_token for m in locked[::3]],  # type: ignore[misc]
                                      "suspended", dead_letter_reason="test")
    assert read == sorted(set(read))
    stayed = [n for n in range(1, 401) if n not in moved]
    assert [n for n in read if n not in moved] == stayed
    assert set(read) - set(stayed) <= moved
    dead = _numbers(list(client.entity("q" + _DEAD_LETTER).peek_all(page_size=11)))
    assert len(dead) == len(moved)


def test_a_connection_lost_mid_read(fake: FakeNamespace, client: ManagementClient) -> None:
    _fill(fake, "q", 600)
    read: list[int] = []
    for message in client.entity("q").peek_all(page_size=20, pages_in_flight=8):
        read.append(message.sequence_number)  # type: ignore[arg-type]
        if len(read) == 100:
            assert fake.faults.close_connections() == 1
    assert read == list(range(1, 601))


def test_a_connection_lost_mid_read_asyncio(fake: FakeNamespace) -> None:
    _fill(fake, "q", 600)

    async def main() -> list[int]:
        async with AsyncManagementClient.from_connection_string(
                fake.connection_string, timeout=10) as client:
            read: list[int] = []
            async for message in client.entity("q").peek_all(page_size=20, pages_in_flight=8):
                read.append(message.sequence_number)  # type: ignore[arg-type]
                if len(read) == 100:
                    assert fake.faults.close_connections() == 1
            return read

    assert asyncio.run(main()) == list(range(1, 601))


def test_pages_are_in_flight_together(fake: FakeNamespace, client: ManagementClient) -> None:
    _fill(fake, "q", 1000)
    fake.faults.latency(0.02)  # each reply 20 ms late: pages asked together overlap
    read = _numbers(list(client.entity("q").peek_all(page_size=50, pages_in_flight=6)))
    assert read == list(range(1, 1001))
    assert client.stats.max_in_flight >= 2


def test_stopping_early_cancels_the_pages_in_flight(fake: FakeNamespace,
                                                    client: ManagementClient) -> None:
    _fill(fake, "q", 200)
    pages = client.entity("q").peek_all(page_size=10, pages_in_flight=4)
    assert next(pages).sequence_number == 1
    pages.close()
    assert _numbers(client.entity("q").peek_messages(1, 3)) == [1, 2, 3]
