"""Three behaviours of the service that the official SDKs' samples rely on, shown with the SDK
that relies on each: scheduling on a topic (the fake's clock moved past the due time), and in
real time lock renewal from several threads (transfers whose delivery-ids arrive out of order)
and accepting the next available session when none has messages (the receiver's time-out,
then ``OperationTimeoutError``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    AutoLockRenewer,
    ServiceBusClient,
    ServiceBusMessage,
)
from azure.servicebus.exceptions import OperationTimeoutError

from fakes import FakeNamespace
from sbmgmt.message import Message
from sbmgmt.rules import RuleDescription, SqlFilter

WAIT = 5


def _sdk(namespace: FakeNamespace) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(namespace.connection_string, retry_total=0)


def test_a_topic_sender_schedules_and_cancels_and_the_due_messages_fan_out() -> None:
    with FakeNamespace() as namespace:
        namespace.add_topic("events")
        namespace.add_subscription("events", "all")
        namespace.add_subscription("events", "red", rules=[
            RuleDescription(name="red", filter=SqlFilter(expression="colour = 'red'"))])
        with _sdk(namespace) as client:
            due = datetime.now(timezone.utc) + timedelta(minutes=1)
            with client.get_topic_sender("events") as sender:
                single = sender.schedule_messages(
                    ServiceBusMessage("red", application_properties={"colour": "red"}), due)
                several = sender.schedule_messages(
                    [ServiceBusMessage("blue", application_properties={"colour": "blue"}),
                     ServiceBusMessage("cancelled")], due)
                sender.cancel_scheduled_messages(several[1])
            assert namespace.accounting("events/Subscriptions/all")["active"] == 0  # not yet
            namespace.clock.advance(61)
            with client.get_subscription_receiver("events", "all") as receiver:
                received = receiver.receive_messages(5, max_wait_time=WAIT)
                for message in received:
                    receiver.complete_message(message)
            arrived = namespace.clock.now_datetime()
            with client.get_subscription_receiver("events", "red") as receiver:
                red = [str(m) for m in receiver.receive_messages(5, max_wait_time=2)]
        topic = namespace.accounting("events")
        scheduled = namespace.applied("events", "com.microsoft:schedule-message")
        cancelled = namespace.applied("events", "com.microsoft:cancel-scheduled-message")
    assert len(single) == 1 and len(several) == 2 and len({*single, *several}) == 3
    assert sorted(str(m) for m in received) == ["blue", "red"]
    assert arrived >= due
    assert red == ["red"]
    assert (topic["accepted"], topic["fanned_out"]) == (2, 2)
    assert (scheduled, cancelled) == (2, 1)


def _session_worker(client: ServiceBusClient, received: list[str], outcomes: list[str]) -> None:
    """The session-pool sample's worker: accept the next session until a time-out says none
    is left."""
    while True:
        try:
            with client.get_queue_receiver("pool", max_wait_time=1,
                                           session_id=NEXT_AVAILABLE_SESSION) as receiver:
                receiver.session.set_state("OPEN")
                for message in receiver:
                    received.append(f"{message.session_id}:{message}")
                    receiver.complete_message(message)
        except OperationTimeoutError:
            outcomes.append("timed out")
            return
        except Exception as exc:
            outcomes.append(repr(exc))
            return


def test_next_available_session_waits_for_the_receivers_time_then_times_out() -> None:
    with FakeNamespace() as namespace:
        namespace.add_queue("pool", requires_session=True)
        with _sdk(namespace) as client:
            started = time.monotonic()
            with pytest.raises(OperationTimeoutError):
                client.get_queue_receiver("pool", max_wait_time=1.5,
                                          session_id=NEXT_AVAILABLE_SESSION).__enter__()
            waited = time.monotonic() - started
    # the service waits for the link's com.microsoft:timeout (the SDK sends max_wait_time,
    # less a jitter of up to 1 % and a 20 ms buffer), not a few milliseconds
    assert waited >= 1.4


def test_a_session_that_gets_messages_while_a_receiver_waits_is_given_to_it() -> None:
    with FakeNamespace() as namespace:
        namespace.add_queue("late", requires_session=True)
        with _sdk(namespace) as client:
            sender = threading.Timer(0.5, namespace.send, ("late", Message(
                body=b"late", session_id="s1")))
            sender.start()
            with client.get_queue_receiver("late", max_wait_time=5,
                                           session_id=NEXT_AVAILABLE_SESSION) as receiver:
                session = receiver.session.session_id
                bodies = [str(m) for m in receiver.receive_messages(1, max_wait_time=5)]
            sender.join()
    assert (session, bodies) == ("s1", ["late"])


def test_the_session_pool_sample_flow_drains_every_session_then_every_worker_ends() -> None:
    sessions = [f"session-{n}" for n in range(6)]
    with FakeNamespace() as namespace:
        namespace.add_queue("pool", requires_session=True)
        with _sdk(namespace) as client:
            with client.get_queue_sender("pool") as sender:
                for session in sessions:
                    sender.send_messages([ServiceBusMessage(f"m{n}", session_id=session)
                                          for n in range(3)])
            received: list[str] = []
            outcomes: list[str] = []
            with ThreadPoolExecutor(max_workers=3) as pool:
                for future in [pool.submit(_session_worker, client, received, outcomes)
                               for _ in range(3)]:
                    future.result(timeout=120)
        left = namespace.accounting("pool")
    assert outcomes == ["timed out"] * 3
    assert sorted(received) == sorted(f"{s}:m{n}" for s in sessions for n in range(3))
    assert (left["active"], left["completed"]) == (0, 18)


@pytest.mark.realtime("the SDK's AutoLockRenewer renews by the wall clock")
def test_locks_renewed_from_the_renewers_threads_all_hold_until_completed() -> None:
    """The AutoLockRenewer sample's first part, with 5-second locks held for 6.5 seconds,
    past their first expiry (the SDK renews a lock this short when three quarters of the
    whole seconds left at registration are left: 3 s, so every 2 s or so, with 3 s to
    spare; 3-second locks, 1.5 s to spare, lost one in a CI run whose start six workers
    and the linters shared): its
    worker threads send renew-lock requests on one session at once, so delivery-ids arrive
    repeated or out of order; the fake answers every request, as the service does, instead
    of closing the connection for a sequencing error."""
    failures: list[str] = []
    with FakeNamespace() as namespace:
        namespace.add_queue("work", lock_duration=timedelta(seconds=5))
        with _sdk(namespace) as client:
            with client.get_queue_sender("work") as sender:
                sender.send_messages([ServiceBusMessage(f"message {n}") for n in range(10)])
            with AutoLockRenewer() as renewer, client.get_queue_receiver(
                    "work", prefetch_count=10) as receiver:
                received = receiver.receive_messages(10, max_wait_time=WAIT)
                for message in received:
                    renewer.register(receiver, message, max_lock_renewal_duration=60,
                                     on_lock_renew_failure=lambda _m, error: failures.append(
                                         repr(error)))
                time.sleep(6.5)
                for message in received:
                    receiver.complete_message(message)
            renewed = namespace.applied("work", "com.microsoft:renew-lock")
        counts = namespace.accounting("work")
    assert failures == []
    assert len(received) == 10
    assert renewed >= 10  # every lock was renewed at least once: 5 s locks held for 6.5 s
    assert (counts["completed"], counts["active"], counts["locked"]) == (10, 0, 0)
