"""The renewer and the official SDK's own objects, in REAL time (no moved clock anywhere).

The SDK caches a message's and a session's lock expiry and refuses, on its own side,
to settle (or, for a session, to do anything) once that time has passed. Locks here
last 2 s (the fake's lock durations are settable; the renewer renews with a third left, but
at least a second: a renewal has a second to come back, as it would of a 3 s lock, and one
goes out every second); each scenario holds its locks for 3+ lock periods
while the renewer keeps them, then settles with the SDK. sbmgmt's own session lock
(``q.session``) is kept the same way. The six scenarios (sync and aio; messages, an SDK
session, our session) run concurrently, so the module takes about one hold period of
wall time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient

from fakes import FakeNamespace
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import ManagementClient
from sbmgmt.errors import UnsupportedLockTargetError
from sbmgmt.renewer import AsyncLockRenewer, LockLoss, LockRenewer

LOCK = timedelta(seconds=2)
HOLD = 3.4 * LOCK.total_seconds()  # more than three lock periods
COUNT = 6


@pytest.fixture(scope="module")
def namespace() -> Iterator[FakeNamespace]:
    with FakeNamespace() as ns:
        for name in ("sync-work", "aio-work"):
            ns.add_queue(name, lock_duration=LOCK)
        for name in ("sync-sessions", "aio-sessions", "sync-own", "aio-own"):
            ns.add_queue(name, lock_duration=LOCK, requires_session=True)
        yield ns


@dataclass
class Outcome:
    """What one scenario saw; asserted on the test's thread."""

    lost: list[LockLoss] = field(default_factory=list)
    completed: int = 0
    state: bytes | None = None
    held_for: float = 0.0
    renewals: int = 0
    error: BaseException | None = None


def _messages(count: int, session_id: str | None = None) -> list[ServiceBusMessage]:
    return [ServiceBusMessage(f"m{i}", session_id=session_id) for i in range(count)]


def sync_messages(conn_str: str, out: Outcome) -> None:
    with ServiceBusClient.from_connection_string(conn_str) as sdk, \
            ManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            LockRenewer(client, on_lock_lost=out.lost.append) as renewer:
        with sdk.get_queue_sender("sync-work") as sender:
            sender.send_messages(_messages(COUNT))
        with sdk.get_queue_receiver("sync-work") as receiver:
            received: list[Any] = []
            while len(received) < COUNT:
                received += receiver.receive_messages(COUNT - len(received), max_wait_time=2)
            start = time.monotonic()
            for message in received:
                renewer.register(receiver, message)
            time.sleep(HOLD)
            out.held_for = time.monotonic() - start
            out.renewals = renewer.stats().tokens_renewed
            for message in received:
                renewer.unregister(receiver, message)
                receiver.complete_message(message)
                out.completed += 1


def sync_session(conn_str: str, out: Outcome) -> None:
    with ServiceBusClient.from_connection_string(conn_str) as sdk, \
            ManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            LockRenewer(client, on_lock_lost=out.lost.append) as renewer:
        with sdk.get_queue_sender("sync-sessions") as sender:
            sender.send_messages(_messages(2, "s1"))
        with sdk.get_queue_receiver("sync-sessions", session_id="s1") as receiver:
            session = receiver.session
            start = time.monotonic()
            renewer.register_session(receiver, session)
            time.sleep(HOLD)
            out.held_for = time.monotonic() - start
            session.set_state(b"held")
            for message in receiver.receive_messages(2, max_wait_time=2):
                receiver.complete_message(message)
                out.completed += 1
            out.state = session.get_state()
            out.renewals = renewer.stats().sessions_renewed
            renewer.unregister_session(receiver, session)


def sync_own_session(conn_str: str, out: Outcome) -> None:
    with ManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            LockRenewer(client, on_lock_lost=out.lost.append) as renewer, \
            client.entity("sync-own").session("s1") as session:
        start = time.monotonic()
        renewer.register_session(client.entity("sync-own"), session)
        time.sleep(HOLD)
        out.held_for = time.monotonic() - start
        session.set_state(b"held")
        out.state = session.get_state()
        out.renewals = renewer.stats().sessions_renewed
        renewer.unregister_session("sync-own", session)


async def aio_own_session(conn_str: str, out: Outcome) -> None:
    async with AsyncManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            AsyncLockRenewer(client, on_lock_lost=out.lost.append) as renewer, \
            client.entity("aio-own").session("s1") as session:
        start = time.monotonic()
        renewer.register_session("aio-own", session)
        await asyncio.sleep(HOLD)
        out.held_for = time.monotonic() - start
        await session.set_state(b"held")
        out.state = await session.get_state()
        out.renewals = renewer.stats().sessions_renewed
        renewer.unregister_session("aio-own", session)


async def aio_messages(conn_str: str, out: Outcome) -> None:
    async with AsyncServiceBusClient.from_connection_string(conn_str) as sdk, \
            AsyncManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            AsyncLockRenewer(client, on_lock_lost=out.lost.append) as renewer:
        async with sdk.get_queue_sender("aio-work") as sender:
            await sender.send_messages(_messages(COUNT))
        async with sdk.get_queue_receiver("aio-work") as receiver:
            received: list[Any] = []
            while len(received) < COUNT:
                received += await receiver.receive_messages(COUNT - len(received),
                                                            max_wait_time=2)
            start = time.monotonic()
            for message in received:
                renewer.register(receiver, message)
            await asyncio.sleep(HOLD)
            out.held_for = time.monotonic() - start
            out.renewals = renewer.stats().tokens_renewed
            for message in received:
                renewer.unregister(receiver, message)
                await receiver.complete_message(message)
                out.completed += 1


async def aio_session(conn_str: str, out: Outcome) -> None:
    async with AsyncServiceBusClient.from_connection_string(conn_str) as sdk, \
            AsyncManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            AsyncLockRenewer(client, on_lock_lost=out.lost.append) as renewer:
        async with sdk.get_queue_sender("aio-sessions") as sender:
            await sender.send_messages(_messages(2, "s1"))
        async with sdk.get_queue_receiver("aio-sessions", session_id="s1") as receiver:
            session = receiver.session
            start = time.monotonic()
            renewer.register_session(receiver, session)
            await asyncio.sleep(HOLD)
            out.held_for = time.monotonic() - start
            await session.set_state(b"held")
            for message in await receiver.receive_messages(2, max_wait_time=2):
                await receiver.complete_message(message)
                out.completed += 1
            out.state = await session.get_state()
            out.renewals = renewer.stats().sessions_renewed
            renewer.unregister_session(receiver, session)


def _in_thread(work: Callable[[], None], out: Outcome) -> threading.Thread:
    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported by the test, not lost in the thread
            out.error = exc

    thread = threading.Thread(target=run, name="sdk-realtime-scenario")
    thread.start()
    return thread


@pytest.mark.realtime("the SDK caches each lock's expiry and checks it against the wall clock")
def test_sdk_objects_outlive_three_lock_periods_and_the_sdk_settles_them(
    namespace: FakeNamespace,
) -> None:
    conn_str = namespace.connection_string
    outcomes = {name: Outcome() for name in ("sync messages", "sync session",
                                              "aio messages", "aio session",
                                              "sync own session", "aio own session")}

    async def all_aio() -> None:
        await asyncio.gather(aio_messages(conn_str, outcomes["aio messages"]),
                             aio_session(conn_str, outcomes["aio session"]),
                             aio_own_session(conn_str, outcomes["aio own session"]))

    threads = [
        _in_thread(lambda: sync_messages(conn_str, outcomes["sync messages"]),
                   outcomes["sync messages"]),
        _in_thread(lambda: sync_session(conn_str, outcomes["sync session"]),
                   outcomes["sync session"]),
        _in_thread(lambda: sync_own_session(conn_str, outcomes["sync own session"]),
                   outcomes["sync own session"]),
        _in_thread(lambda: asyncio.run(all_aio()), outcomes["aio messages"]),
    ]
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    for name, out in outcomes.items():
        assert out.error is None, f"{name}: {out.error!r}"
        assert out.lost == [], name
        assert out.held_for >= 3 * LOCK.total_seconds(), name
    for name in ("sync messages", "aio messages"):
        # a 2 s lock is renewed when 1 s is left: every second, 6 renewals in 6.8 s
        assert outcomes[name].completed == COUNT
        assert outcomes[name].renewals >= 4 * COUNT
    for name in ("sync session", "aio session"):
        assert outcomes[name].completed == 2
    for name in ("sync session", "aio session", "sync own session", "aio own session"):
        assert outcomes[name].state == b"held"
        assert outcomes[name].renewals >= 4
    for queue in ("sync-work", "aio-work"):
        counts = namespace.accounting(queue)
        assert counts["completed"] == COUNT and counts["locked"] == 0


class _UnknownSdkMessage:
    """Shaped like an SDK message of a version that caches its expiry elsewhere."""

    lock_token = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

    @property
    def locked_until_utc(self) -> datetime:
        return datetime.now(timezone.utc) + LOCK


class _UnknownSdkSession:
    session_id = "s1"
    locked_until_utc = _UnknownSdkMessage.locked_until_utc


def test_an_sdk_object_whose_cache_is_unknown_is_refused_at_register() -> None:
    def submit(*_: Any) -> Any:
        raise AssertionError("nothing may be sent")

    with LockRenewer(submit) as renewer:
        with pytest.raises(UnsupportedLockTargetError, match="_expiry"):
            renewer.register("q", _UnknownSdkMessage())
        with pytest.raises(UnsupportedLockTargetError, match="_locked_until_utc"):
            renewer.register_session("q", _UnknownSdkSession())
        assert isinstance(UnsupportedLockTargetError("x"), TypeError)
        assert renewer.stats().tracked == 0
