"""The thread and asyncio renewers over a fake submit function and a manual clock."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from sbmgmt.message import ReceivedMessage
from sbmgmt.ops import renew_session_lock
from sbmgmt.ops._base import OpModel
from sbmgmt.renewer import AsyncLockRenewer, LockLoss, LockRenewer, LossReason
from tests._waiting import wait_until

from ._sim import FakeService, ManualClock, utc

THREAD_NAME = "sbmgmt-lock-renewer"


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll until ``predicate`` holds; fail (never hang) after ``timeout`` seconds."""
    if not wait_until(predicate, timeout):
        raise AssertionError("condition not reached")


def renewer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def service(clock: ManualClock) -> FakeService:
    return FakeService(clock, lock_duration=60)


def test_thread_renewer_renews_registered_locks_and_leaves_no_thread(
    clock: ManualClock, service: FakeService
) -> None:
    tokens = service.lock_messages(50)
    with LockRenewer(service.submit, clock=clock, max_renewal_duration=None) as renewer:
        assert len(renewer_threads()) == 1
        for token in tokens:
            renewer.register("q", token, utc(service.locks[token]))
        for round_number in range(1, 6):
            clock.now += 40
            renewer.wake()
            wait_for(lambda n=round_number: renewer.stats().tokens_renewed == 50 * n)
        assert all(until > clock.now for until in service.locks.values())
        assert len(service.sent) == 5  # one request per round for the whole entity
    assert renewer_threads() == []


def test_stop_with_requests_pending_is_prompt_and_reports_nothing(clock: ManualClock) -> None:
    sent: list[Future[Any]] = []
    tokens_sent: list[int] = []
    lost: list[LockLoss] = []

    def never_answers(entity: str, request: OpModel, timeout: float) -> Future[Any]:
        tokens_sent.append(len(request.lock_tokens))  # type: ignore[attr-defined]
        sent.append(Future())
        return sent[-1]

    renewer = LockRenewer(never_answers, clock=clock, batch_size=10, on_lock_lost=lost.append)
    for _ in range(1_000):
        renewer.register("q", uuid.uuid4(), utc(clock.now + 0.5))
    wait_for(lambda: sum(tokens_sent) == 1_000)
    assert max(tokens_sent) == 10
    renewer.stop(timeout=10)
    assert renewer_threads() == []
    assert lost == []
    for future in sent:  # late replies after stop are ignored
        future.set_exception(ConnectionError("late"))
    assert lost == []
    with pytest.raises(RuntimeError, match="stopped"):
        renewer.register("q", uuid.uuid4(), utc(clock.now + 60))


def test_lost_locks_reach_the_per_registration_callback(
    clock: ManualClock, service: FakeService
) -> None:
    default: list[LockLoss] = []
    mine: list[LockLoss] = []
    tokens = service.lock_messages(4)
    with LockRenewer(service.submit, clock=clock, on_lock_lost=default.append) as renewer:
        renewer.register("q", tokens[0], utc(service.locks[tokens[0]]), on_lock_lost=mine.append)
        for token in tokens[1:]:
            renewer.register("q", token, utc(service.locks[token]))
        del service.locks[tokens[0]], service.locks[tokens[1]]
        clock.now += 41
        renewer.wake()
        wait_for(lambda: renewer.stats().lost_total == 2)
    assert [loss.lock_token for loss in mine] == [tokens[0]]
    assert [loss.lock_token for loss in default] == [tokens[1]]
    assert {loss.reason for loss in mine + default} == {LossReason.LOCK_LOST}


def test_messages_and_sdk_shaped_objects_are_accepted(
    clock: ManualClock, service: FakeService
) -> None:
    ours_token, sdk_token, session_until = *service.lock_messages(2), service.lock_session("s1")
    ours = ReceivedMessage(body=b"x", lock_token=ours_token,
                           locked_until=utc(service.locks[ours_token]))
    receiver = SimpleNamespace(entity_path="t/Subscriptions/s")
    # SDK-shaped: azure-servicebus 7.15's cached expiries (_expiry, _locked_until_utc);
    # an SDK session renews through its own renew_lock (on its receiver's connection).
    sdk_message = SimpleNamespace(lock_token=str(sdk_token), _receiver=receiver,
                                  locked_until_utc=utc(service.locks[sdk_token]), _expiry=None)

    def renew_lock(timeout: float) -> datetime:
        future = service.submit("sq", renew_session_lock.Request(session_id="s1"), timeout)
        expiry: datetime = future.result().expiration
        return expiry

    sdk_session = SimpleNamespace(session_id="s1", locked_until_utc=utc(session_until),
                                  _receiver=SimpleNamespace(entity_path="sq"),
                                  _locked_until_utc=utc(session_until), renew_lock=renew_lock)
    entity_client = SimpleNamespace(path="/q/")
    with LockRenewer(service.submit, clock=clock) as renewer:
        renewer.register(entity_client, ours)
        renewer.register(None, sdk_message)
        renewer.register_session(None, sdk_session, max_renewal_duration=timedelta(hours=1))
        assert renewer.stats().tracked == 3
        clock.now += 41
        renewer.wake()
        wait_for(lambda: renewer.stats().requests_in_flight == 0
                 and renewer.stats().renew_requests == 3)
        assert sorted(s.entity for s in service.sent) == ["q", "sq", "t/Subscriptions/s"]
        assert sdk_message._expiry == utc(service.locks[sdk_token])
        assert sdk_session._locked_until_utc == utc(service.sessions["s1"])
        assert renewer.unregister("q", ours)
        assert renewer.unregister(receiver, sdk_token)
        assert renewer.unregister_session("sq", sdk_session)
        assert not renewer.unregister_session("sq", "s1")
        assert renewer.stats().tracked == 0


@pytest.mark.parametrize(
    ("entity", "lock", "locked_until", "error", "match"),
    [
        ("q", uuid.uuid4(), None, ValueError, "locked_until is unknown"),
        ("q", "not-a-uuid", utc(0), ValueError, "not a valid uuid"),
        ("q", ReceivedMessage(body=b"x"), None, ValueError, "holds no lock"),
        (None, uuid.uuid4(), utc(0), TypeError, "cannot tell the entity"),
        (42, uuid.uuid4(), utc(0), TypeError, "entity must be"),
        ("  /  ", uuid.uuid4(), utc(0), ValueError, "entity path is empty"),
    ],
)
def test_bad_registrations_are_clear_errors(
    service: FakeService, entity: object, lock: object, locked_until: Any,
    error: type[Exception], match: str,
) -> None:
    renewer = LockRenewer(service.submit)
    try:
        with pytest.raises(error, match=match):
            renewer.register(entity, lock, locked_until)
        assert renewer_threads() == []  # a refused registration starts nothing
    finally:
        renewer.stop()


def test_a_client_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="ManagementClient"):
        LockRenewer(object())  # type: ignore[arg-type]


def test_asyncio_renewer_renews_and_stops(clock: ManualClock, service: FakeService) -> None:
    tokens = service.lock_messages(30)
    session_until = service.lock_session("s1")

    async def main() -> AsyncLockRenewer:
        async with AsyncLockRenewer(service.submit, clock=clock,
                                    max_renewal_duration=None) as renewer:
            for token in tokens:
                renewer.register("q", token, utc(service.locks[token]))
            renewer.register_session("sq", "s1", utc(session_until))
            for round_number in range(1, 4):
                clock.now += 40
                renewer.wake()
                while renewer.stats().tokens_renewed < 30 * round_number:
                    await asyncio.sleep(0.005)
            assert renewer.stats().sessions_renewed >= 3
        return renewer

    renewer = asyncio.run(asyncio.wait_for(main(), 10))
    assert all(until > clock.now for until in service.locks.values())
    assert renewer.stats().lost_total == 0
    with pytest.raises(RuntimeError, match="stopped"):
        renewer.register("q", tokens[0], utc(clock.now + 60))


def test_asyncio_renewer_outside_a_loop_says_how_to_start(service: FakeService) -> None:
    renewer = AsyncLockRenewer(service.submit)
    with pytest.raises(RuntimeError, match="running event loop"):
        renewer.register("q", uuid.uuid4(), utc(time.time() + 60))


def test_asyncio_stop_with_requests_pending_is_prompt(clock: ManualClock) -> None:
    sent: list[Future[Any]] = []

    def never_answers(entity: str, request: OpModel, timeout: float) -> Future[Any]:
        sent.append(Future())
        return sent[-1]

    async def main() -> None:
        renewer = await AsyncLockRenewer(never_answers, clock=clock).start()
        renewer.register("q", uuid.uuid4(), utc(clock.now + 0.5))
        while not sent:
            await asyncio.sleep(0.005)
        await renewer.stop()
        sent[0].set_result(None)  # a late reply wakes nothing and raises nothing

    asyncio.run(asyncio.wait_for(main(), 10))
