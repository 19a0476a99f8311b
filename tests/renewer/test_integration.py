"""The renewer against the fake namespace on loopback, with the namespace's movable clock.

Each round moves the fake clock past the renewal point of every lock and waits (bounded)
until the renewer has renewed them; five rounds of 21 s outlive three 30 s locks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeClock, FakeNamespace
from sbmgmt.client import ManagementClient
from sbmgmt.errors import MessageLockLostError
from sbmgmt.message import Message
from sbmgmt.renewer import LockKind, LockLoss, LockRenewer, LossReason

from .test_shells import renewer_threads, wait_for

LOCK = timedelta(seconds=30)
ROUND = 21.0


@pytest.fixture
def namespace() -> Iterator[FakeNamespace]:
    with FakeNamespace(clock=FakeClock()) as ns:
        ns.add_queue("work", lock_duration=LOCK)
        ns.add_queue("sessions", lock_duration=LOCK, requires_session=True)
        yield ns


@pytest.fixture
def client(namespace: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(namespace.connection_string, timeout=10) as c:
        yield c


@pytest.fixture
def lost() -> list[LockLoss]:
    return []


@pytest.fixture
def renewer(
    namespace: FakeNamespace, client: ManagementClient, lost: list[LockLoss]
) -> Iterator[LockRenewer]:
    with LockRenewer(client, clock=namespace.clock.now, on_lock_lost=lost.append,
                     max_renewal_duration=None) as r:
        namespace.clock.on_advance(r.wake)
        yield r
        namespace.clock.remove_listener(r.wake)
    assert renewer_threads() == []


def send(namespace: FakeNamespace, entity: str, count: int, **kwargs: Any) -> None:
    namespace.send(entity, *(Message(body=f"m{i}".encode(), **kwargs) for i in range(count)))


def renewal_round(namespace: FakeNamespace, renewer: LockRenewer,
                  done: Callable[[], bool] | None = None) -> None:
    """Move the clock one round on; wait until every request of the round is answered."""
    before = renewer.stats().renew_requests
    namespace.clock.advance(ROUND)
    wait_for(lambda: renewer.stats().renew_requests > before
             and renewer.stats().requests_in_flight == 0
             and (done is None or done()))


def test_locks_outlive_several_lock_durations_then_complete(
    namespace: FakeNamespace, client: ManagementClient, renewer: LockRenewer,
    lost: list[LockLoss],
) -> None:
    send(namespace, "work", 40)
    messages = namespace.receive_and_lock("work", 40)
    for message in messages:
        renewer.register("work", message)
    for _ in range(5):
        renewal_round(namespace, renewer)
    assert lost == []
    stats = renewer.stats()
    assert stats.tokens_renewed == 40 * 5
    assert stats.renew_requests <= 2 * 5  # 40 tokens of one entity: one request a round
    tokens = [m.lock_token for m in messages]
    for message in messages:
        assert renewer.unregister("work", message)
    client.entity("work").update_disposition(tokens, "completed")  # type: ignore[arg-type]
    assert namespace.accounting("work")["completed"] == 40


def test_an_unregistered_lock_is_not_renewed_and_expires(
    namespace: FakeNamespace, client: ManagementClient, renewer: LockRenewer,
) -> None:
    send(namespace, "work", 2)
    kept, dropped = namespace.receive_and_lock("work", 2)
    renewer.register("work", kept)
    renewer.register("work", dropped)
    renewer.unregister("work", dropped)
    for _ in range(3):
        renewal_round(namespace, renewer)
    entity = client.entity("work")
    with pytest.raises(MessageLockLostError):
        entity.update_disposition([dropped.lock_token], "completed")  # type: ignore[list-item]
    entity.update_disposition([kept.lock_token], "completed")  # type: ignore[list-item]


def test_lost_locks_in_a_batch_are_reported_once_and_the_rest_renewed(
    namespace: FakeNamespace, client: ManagementClient, renewer: LockRenewer,
    lost: list[LockLoss],
) -> None:
    send(namespace, "work", 16)
    messages = namespace.receive_and_lock("work", 16)
    for message in messages:
        renewer.register("work", message)
    gone = [messages[2].lock_token, messages[11].lock_token]
    client.entity("work").update_disposition(gone, "completed")  # type: ignore[arg-type]
    renewal_round(namespace, renewer, done=lambda: len(lost) == 2)
    for _ in range(3):
        renewal_round(namespace, renewer)
    assert sorted(loss.lock_token for loss in lost) == sorted(gone)  # type: ignore[type-var]
    assert {loss.reason for loss in lost} == {LossReason.LOCK_LOST}
    assert all(isinstance(loss.error, MessageLockLostError) for loss in lost)
    assert renewer.stats().tracked == 14
    rest = [m.lock_token for m in messages if m.lock_token not in gone]
    client.entity("work").update_disposition(rest, "completed")  # type: ignore[arg-type]


def test_max_renewal_duration_is_honoured(
    namespace: FakeNamespace, client: ManagementClient, renewer: LockRenewer,
    lost: list[LockLoss],
) -> None:
    send(namespace, "work", 1)
    [message] = namespace.receive_and_lock("work", 1)
    renewer.register("work", message, max_renewal_duration=timedelta(seconds=30))
    renewal_round(namespace, renewer)  # t+21: renewed (before the limit)
    namespace.clock.advance(ROUND)  # t+42: due again, but past the limit
    wait_for(lambda: len(lost) == 1)
    assert lost[0].reason is LossReason.MAX_DURATION
    assert renewer.stats().tokens_renewed == 1


def test_a_session_lock_this_client_does_not_hold_is_reported_lost(
    namespace: FakeNamespace, renewer: LockRenewer, lost: list[LockLoss],
) -> None:
    until = namespace.clock.now_datetime() + LOCK
    renewer.register_session("sessions", "nobody-holds-it", until)
    namespace.clock.advance(ROUND)
    wait_for(lambda: len(lost) == 1)
    [loss] = lost
    assert loss.kind is LockKind.SESSION and loss.session_id == "nobody-holds-it"
    assert loss.reason is LossReason.LOCK_LOST
    assert "session-lock-lost" in str(loss.error)


def test_session_locks_are_renewed(
    namespace: FakeNamespace, renewer: LockRenewer, lost: list[LockLoss],
) -> None:
    # The session is locked by the fake's direct receiver, not on the renewer's
    # connection: the service would refuse these renewals; the relaxed fake does not
    # (an SDK session is renewed on its own connection: test_sdk_realtime.py).
    namespace.relaxed_session_locks = True
    send(namespace, "sessions", 1, session_id="s1")
    [message] = namespace.receive_and_lock("sessions", 1, session_id="s1")
    assert message.locked_until is not None
    renewer.register_session("sessions", "s1", message.locked_until)
    for _ in range(4):
        renewal_round(namespace, renewer)
    assert lost == []
    assert renewer.stats().sessions_renewed == 4


def test_sdk_messages_stay_locked_past_several_lock_durations_then_complete(
    namespace: FakeNamespace, renewer: LockRenewer, lost: list[LockLoss],
) -> None:
    with ServiceBusClient.from_connection_string(
        namespace.connection_string, retry_total=0
    ) as sdk:
        with sdk.get_queue_sender("work") as sender:
            sender.send_messages([ServiceBusMessage(f"sdk{i}") for i in range(5)])
        with sdk.get_queue_receiver("work", max_wait_time=2) as receiver:
            received: list[Any] = []
            while len(received) < 5:
                received += receiver.receive_messages(max_message_count=5, max_wait_time=2)
            for message in received:
                assert isinstance(message.lock_token, (uuid.UUID, str))
                renewer.register(receiver, message)
            for _ in range(5):  # 105 s on the fake clock: three and a half lock durations
                renewal_round(namespace, renewer)
            assert lost == []
            assert renewer.stats().tokens_renewed == 25
            for message in received:
                assert renewer.unregister(receiver, message)
                receiver.complete_message(message)
    counts = namespace.accounting("work")
    assert counts["completed"] == 5 and counts["locked"] == 0
