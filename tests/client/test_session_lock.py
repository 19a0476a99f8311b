"""``q.session(id)``: a management-only client locks a session itself, as the service needs.

The service (and the fake) apply renew-session-lock and get/set-session-state only to
a session locked by the receiver link named in ``associated-link-name`` on the same
connection; ``q.session`` attaches that link (session filter, no credit).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient
from azure.servicebus.exceptions import SessionCannotBeLockedError

from fakes import FakeNamespace
from sbmgmt import AsyncManagementClient, ManagementClient
from sbmgmt.errors import (
    BadRequestError,
    ClientClosedError,
    SessionLockedElsewhereError,
    SessionLockLostError,
)
from sbmgmt.message import Message
from sbmgmt.ops import get_session_state


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
        yield c


def test_a_session_is_locked_read_written_renewed_and_released(
    fake: FakeNamespace, client: ManagementClient
) -> None:
    fake.send("sq", Message(body=b"x", session_id="s1"))
    q = client.entity("sq")
    with q.session("s1") as s:
        first = s.locked_until
        assert first is not None and first > datetime.now(timezone.utc)
        assert s.get_state() is None
        s.set_state(b"\x00state")
        assert s.get_state() == b"\x00state"
        renewed = s.renew_lock()
        assert renewed == s.locked_until and renewed >= first
        # The entity-level requests name no link: the service refuses them.
        with pytest.raises(SessionLockLostError):
            q.get_session_state("s1")
        s.set_state(None)
        assert s.get_state() is None
        s.set_state(b"kept")
    # Leaving released the lock: another connection locks the session at once.
    with ManagementClient.from_connection_string(
        fake.connection_string, timeout=10
    ) as other, other.entity("sq").session("s1") as s:
        assert s.get_state() == b"kept"
    assert fake.accounting("sq")["locked"] == 0  # no credit: nothing was delivered


def test_async_session_lock(fake: FakeNamespace) -> None:
    async def main() -> tuple[bytes | None, datetime, datetime | None]:
        async with AsyncManagementClient.from_connection_string(
            fake.connection_string, timeout=10
        ) as c, c.entity("sq").session("s2") as s:
            await s.set_state(b"async")
            state = await s.get_state()
            renewed = await s.renew_lock()
            return state, renewed, s.locked_until

    state, renewed, locked_until = asyncio.run(main())
    assert state == b"async" and renewed == locked_until


def test_async_session_used_from_another_running_loop(fake: FakeNamespace) -> None:
    """Awaited on a loop other than the client's, a session request goes through the
    client's loop (a concurrent future), still naming the link that holds the session."""
    client_loop = asyncio.new_event_loop()
    thread = threading.Thread(target=client_loop.run_forever, name="client-loop")
    thread.start()
    try:
        async def hold() -> tuple[AsyncManagementClient, Any]:
            c = AsyncManagementClient.from_connection_string(fake.connection_string,
                                                             timeout=10)
            session = c.entity("sq").session("s3")
            await session.__aenter__()
            return c, session

        c, session = asyncio.run_coroutine_threadsafe(hold(), client_loop).result(10)

        async def elsewhere() -> bytes | None:
            await session.set_state(b"from another loop")
            return await session.get_state()

        assert asyncio.run(elsewhere()) == b"from another loop"

        async def release() -> None:
            await session.__aexit__(None, None, None)
            await c.close()

        asyncio.run_coroutine_threadsafe(release(), client_loop).result(10)
    finally:
        client_loop.call_soon_threadsafe(client_loop.stop)
        thread.join(10)
        client_loop.close()


def test_a_session_held_by_an_sdk_receiver_is_refused_at_once(
    fake: FakeNamespace, client: ManagementClient
) -> None:
    fake.send("sq", Message(body=b"x", session_id="s1"))
    q = client.entity("sq")
    # no retries: the SDK retries a refused session receiver (backing off: 15 s) before it
    # raises the same refusal
    with ServiceBusClient.from_connection_string(fake.connection_string, retry_total=0) as sdk:
        with sdk.get_queue_receiver("sq", session_id="s1") as receiver:
            with pytest.raises(SessionLockedElsewhereError, match="locked by another") as info, \
                    q.session("s1"):
                pytest.fail("the session was locked twice")
            assert info.value.error_condition == "com.microsoft:session-cannot-be-locked"
            receiver.session.set_state(b"sdk")  # the holder is unaffected
        with q.session("s1") as s:  # the SDK receiver closed: free again
            assert s.get_state() == b"sdk"
            # Refused at the receiver's open (the attach), as the service refuses it.
            with pytest.raises(SessionCannotBeLockedError), \
                    sdk.get_queue_receiver("sq", session_id="s1") as receiver:
                receiver.receive_messages(max_wait_time=1)


def test_the_lock_applies_only_on_its_own_connection(
    fake: FakeNamespace, client: ManagementClient
) -> None:
    request = get_session_state.Request(session_id="s3")
    with client.entity("sq").session("s3") as s, ManagementClient.from_connection_string(
        fake.connection_string, timeout=10
    ) as other:
        # Another connection naming the holder's link is refused, as by the service.
        with pytest.raises(SessionLockLostError):
            other._core.call("sq", request, s.link_name)
        assert client._core.call("sq", request, s.link_name).session_state is None


def test_a_queue_without_sessions_is_refused(client: ManagementClient) -> None:
    with pytest.raises(BadRequestError, match="does not require sessions"), \
            client.entity("q").session("s1"):
        pytest.fail("a session of a queue without sessions")


def test_bad_session_ids_and_misuse(client: ManagementClient) -> None:
    q = client.entity("sq")
    for bad in ("", "x" * 129):
        with pytest.raises(ValueError, match="session_id"):
            q.session(bad)
    s = q.session("s1")
    with pytest.raises(RuntimeError, match="with"):
        s.get_state()


def test_a_closed_client_fails_the_lock(fake: FakeNamespace) -> None:
    client = ManagementClient.from_connection_string(fake.connection_string, timeout=10)
    client.close()
    with pytest.raises(ClientClosedError), client.entity("sq").session("s1"):
        pytest.fail("locked on a closed client")


def test_relaxed_mode_is_explicit(fake: FakeNamespace, client: ManagementClient) -> None:
    fake.send("sq", Message(body=b"x", session_id="s4"))
    fake.receive_and_lock("sq", 1, session_id="s4")
    with pytest.raises(SessionLockLostError):
        client.entity("sq").get_session_state("s4")
    fake.relaxed_session_locks = True
    assert client.entity("sq").get_session_state("s4") is None
    assert client.entity("sq").renew_session_lock("s4") > datetime.now(timezone.utc) - timedelta(1)


def test_a_lost_connection_takes_the_lock_with_it(
    fake: FakeNamespace, client: ManagementClient
) -> None:
    q = client.entity("sq")
    with q.session("s5") as s:
        s.set_state(b"before")
        assert fake.faults.close_connections() >= 1
        # The client reconnects for the request, but the lock went with the old
        # connection: the service refuses to apply it.
        with pytest.raises(SessionLockLostError):
            s.get_state()
    # Leaving after the loss needs no connection; the session is free for a new lock.
    with q.session("s5") as again:
        assert again.get_state() == b"before"
