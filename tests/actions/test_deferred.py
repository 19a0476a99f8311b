"""The deferred-messages action against the fake, with messages deferred by the official
Python SDK's receiver (``receiver.defer_message``), never by sbmgmt itself.

Every claim is counted by sequence number: what was found is exactly what the SDK
deferred (nothing active or scheduled); what was settled is gone, back to deferred or
in the dead-letter queue as asked; on a session entity each session is settled under
its own lock; a message deferred while the scan runs is either found or still there.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from sbmgmt import AsyncManagementClient, ManagementClient, MessageState
from sbmgmt.actions.contract import CancelToken, Outcome, Progress
from sbmgmt.actions.deferred import (
    DeferredAction,
    DeferredReport,
    deferred_page,
    deferred_page_async,
    export_deferred,
    export_deferred_async,
    find_deferred,
    find_deferred_async,
    select_deferred,
    settle_deferred,
    settle_deferred_async,
)
from sbmgmt.actions.export import read_messages
from sbmgmt.errors import SessionLockLostError
from sbmgmt.message import ReceivedMessage
from tests._amqp_messages import same

from .test_export import SENT_FIELDS

WAIT = 2


@pytest.fixture
def sdk(fake_namespace: FakeNamespace) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(
        fake_namespace.connection_string, retry_total=0
    ) as client:
        yield client


@pytest.fixture
def client(fake_namespace: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake_namespace.connection_string,
                                                 timeout=10) as mgmt:
        yield mgmt


def send(sdk: ServiceBusClient, queue: str, bodies: list[str],
         session_id: str | None = None) -> None:
    with sdk.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(b, session_id=session_id) for b in bodies])


def defer_with_sdk(sdk: ServiceBusClient, queue: str, count: int,
                   session_id: str | None = None) -> dict[int, str]:
    """Receive ``count`` messages with the SDK and defer them: {sequence number: body}."""
    deferred: dict[int, str] = {}
    with sdk.get_queue_receiver(queue, session_id=session_id, max_wait_time=WAIT) as receiver:
        while len(deferred) < count:
            batch = receiver.receive_messages(max_message_count=count - len(deferred),
                                              max_wait_time=WAIT)
            assert batch, f"only {len(deferred)} of {count} messages came"
            for message in batch:
                receiver.defer_message(message)
                assert message.sequence_number is not None
                deferred[message.sequence_number] = str(message)
    return deferred


def states(client: ManagementClient, path: str) -> dict[int, MessageState]:
    return {m.sequence_number or 0: m.state for m in client.entity(path).peek_all()}


def mixed_queue(sdk: ServiceBusClient, client: ManagementClient) -> dict[int, str]:
    """``queue`` with 30 deferred messages among 20 active and 5 scheduled ones."""
    send(sdk, "queue", [f"deferred {i}" for i in range(30)])
    deferred = defer_with_sdk(sdk, "queue", 30)
    send(sdk, "queue", [f"active {i}" for i in range(20)])
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    with sdk.get_queue_sender("queue") as sender:
        sender.schedule_messages([ServiceBusMessage(f"scheduled {i}") for i in range(5)], later)
    assert sorted(states(client, "queue").values()).count(MessageState.DEFERRED) == 30
    return deferred


def test_every_deferred_message_is_found_and_none_of_another_state(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    deferred = mixed_queue(sdk, client)
    found = list(find_deferred(client.entity("queue"), page_size=7, pages_in_flight=4))
    assert {m.sequence_number: m.body_bytes().decode() for m in found} == deferred
    assert [m.sequence_number for m in found] == sorted(deferred)
    assert all(m.state is MessageState.DEFERRED and m.lock_token is None for m in found)


def test_pages_of_deferred_messages(sdk: ServiceBusClient, client: ManagementClient) -> None:
    deferred = mixed_queue(sdk, client)
    seen: list[int] = []
    start: int | None = 1
    while start is not None:
        page = deferred_page(client.entity("queue"), start, 8)
        assert len(page.messages) <= 8
        seen += [m.sequence_number or 0 for m in page.messages]
        start = page.next_sequence_number
    assert seen == sorted(deferred)


@pytest.mark.parametrize("action", list(DeferredAction))
def test_settled_as_asked_counted_by_sequence_number(
        sdk: ServiceBusClient, client: ManagementClient, fake_namespace: FakeNamespace,
        action: DeferredAction) -> None:
    deferred = mixed_queue(sdk, client)
    chosen = [m for m in find_deferred(client.entity("queue")) if m.sequence_number % 3 != 0]
    before = {m.sequence_number: m.delivery_count for m in chosen}
    numbers = sorted(m.sequence_number or 0 for m in chosen)
    seen: list[Progress] = []
    report = settle_deferred(
        client.entity("queue"), chosen, action, batch_size=4, in_flight=3,
        on_progress=seen.append,
        **({"dead_letter_reason": "stuck", "dead_letter_description": "lost its consumer"}
           if action is DeferredAction.DEAD_LETTER else {}))
    assert sorted(report.settled) == numbers
    assert (report.not_found, report.failed, report.not_attempted) == ([], {}, [])
    assert seen[-1].done == seen[-1].total == len(numbers)
    after = states(client, "queue")
    untouched = [n for n in deferred if n not in numbers]
    assert all(after[n] is MessageState.DEFERRED for n in untouched)
    if action is DeferredAction.ABANDON:  # back to deferred, one more delivery counted
        assert all(after[n] is MessageState.DEFERRED for n in numbers)
        counts = {m.sequence_number: m.delivery_count
                  for m in find_deferred(client.entity("queue"))}
        assert all(counts[n] == before[n] + 1 for n in numbers)
    else:
        assert not set(numbers) & set(after)
    if action is DeferredAction.DEAD_LETTER:
        dead = {m.sequence_number: m for m in client.entity("queue/$DeadLetterQueue").peek_all()}
        assert sorted(dead) == numbers
        assert {m.dead_letter_reason for m in dead.values()} == {"stuck"}
        assert {m.dead_letter_description for m in dead.values()} == {"lost its consumer"}
        assert {m.body_bytes().decode() for m in dead.values()} == {
            deferred[n] for n in numbers}
    accounting = fake_namespace.accounting("queue")
    assert accounting["deferred"] == len(deferred) - (
        0 if action is DeferredAction.ABANDON else len(numbers))


def test_numbers_not_deferred_or_locked_by_another_are_not_found(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    deferred = mixed_queue(sdk, client)
    numbers = sorted(deferred)
    active = next(n for n, s in states(client, "queue").items() if s is MessageState.ACTIVE)
    with sdk.get_queue_receiver("queue", max_wait_time=WAIT) as receiver:
        held = receiver.receive_deferred_messages(numbers[5:7])  # locked by the SDK
        report = settle_deferred(client.entity("queue"), [*numbers, active, 10**6],
                                 "complete", batch_size=8)
        assert sorted(report.not_found) == sorted([*numbers[5:7], active, 10**6])
        assert sorted(report.settled) == numbers[:5] + numbers[7:]
        for message in held:
            receiver.complete_message(message)
    assert not any(s is MessageState.DEFERRED for s in states(client, "queue").values())


def test_a_session_entitys_deferred_messages_are_settled_under_its_lock(
        sdk: ServiceBusClient, client: ManagementClient, fake_namespace: FakeNamespace) -> None:
    by_session: dict[str, dict[int, str]] = {}
    for session in ("alpha", "beta"):
        send(sdk, "session-queue", [f"{session} {i}" for i in range(6)], session_id=session)
        by_session[session] = defer_with_sdk(sdk, "session-queue", 4, session_id=session)
    entity = client.entity("session-queue")
    with pytest.raises(SessionLockLostError):  # the service's answer without the lock
        entity.receive_deferred_messages([min(by_session["alpha"])], session_id="alpha")
    found = list(find_deferred(entity))
    assert {m.sequence_number: m.session_id for m in found} == {
        n: s for s, numbers in by_session.items() for n in numbers}
    report = settle_deferred(entity, found, "complete", batch_size=3)
    assert sorted(report.sessions) == ["alpha", "beta"]
    assert sorted(report.settled) == sorted(n for d in by_session.values() for n in d)
    assert report.failed == {} and report.not_found == []
    assert fake_namespace.accounting("session-queue")["deferred"] == 0
    assert fake_namespace.accounting("session-queue")["active"] == 4  # 2 left per session


@pytest.mark.parametrize("use_asyncio", [False, True])
def test_a_session_locked_elsewhere_fails_its_numbers_and_the_others_are_settled(
        sdk: ServiceBusClient, client: ManagementClient, fake_namespace: FakeNamespace,
        use_asyncio: bool) -> None:
    by_session: dict[str, dict[int, str]] = {}
    for session in ("alpha", "beta", "gamma"):
        send(sdk, "session-queue", [f"{session} {i}" for i in range(3)], session_id=session)
        by_session[session] = defer_with_sdk(sdk, "session-queue", 3, session_id=session)
    found = list(find_deferred(client.entity("session-queue")))

    async def settle_async() -> DeferredReport:
        async with AsyncManagementClient.from_connection_string(
                fake_namespace.connection_string, timeout=10) as aclient:
            return await settle_deferred_async(aclient.entity("session-queue"), found,
                                               "complete", batch_size=2)

    with sdk.get_queue_receiver("session-queue", session_id="beta") as holder:
        holder.session.get_state()  # the SDK holds beta's lock for the whole settlement
        report = (asyncio.run(settle_async()) if use_asyncio else
                  settle_deferred(client.entity("session-queue"), found, "complete",
                                  batch_size=2))
    assert report.sessions == ["alpha", "gamma"]
    assert sorted(report.settled) == sorted([*by_session["alpha"], *by_session["gamma"]])
    assert sorted(report.failed) == sorted(by_session["beta"])
    assert all("locked by another" in text for text in report.failed.values())
    assert report.not_found == [] and report.total == 9
    assert fake_namespace.accounting("session-queue")["deferred"] == 3


def test_a_message_deferred_while_the_scan_runs_is_found_or_still_there(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    send(sdk, "queue", [f"early {i}" for i in range(200)])
    early = defer_with_sdk(sdk, "queue", 200)
    send(sdk, "queue", [f"late {i}" for i in range(40)])
    late: dict[int, str] = {}
    scanning = threading.Event()

    def defer_meanwhile() -> None:
        scanning.wait(10)
        late.update(defer_with_sdk(sdk, "queue", 40))

    worker = threading.Thread(target=defer_meanwhile)
    worker.start()
    found: list[int] = []
    for message in find_deferred(client.entity("queue"), page_size=5, pages_in_flight=1):
        scanning.set()
        found.append(message.sequence_number or 0)
    worker.join(30)
    assert set(early) <= set(found)  # deferred for the whole read: found
    assert len(found) == len(set(found))
    settle_deferred(client.entity("queue"), found, "complete")
    rest = {m.sequence_number: m.body_bytes().decode()
            for m in find_deferred(client.entity("queue"))}
    # each late one was reported by the scan (and completed) or is still deferred
    assert set(rest) == set(late) - set(found)
    assert rest == {n: late[n] for n in rest}


def rich(index: int, session_id: str | None = None) -> ServiceBusMessage:
    """A message with most of what a sender can set, for field-for-field comparisons."""
    return ServiceBusMessage(
        f"body {index}".encode(), session_id=session_id, message_id=f"id-{index}",
        correlation_id=f"c-{index}", subject="s", content_type="text/plain",
        to="t", reply_to="r", time_to_live=timedelta(hours=1),
        application_properties={"n": index, "f": 1.5, "b": True, "t": "xé"})


def assert_exported_as_peeked(text: str, peeked: list[ReceivedMessage]) -> None:
    """The file's lines read back equal, field for field, to the peeked messages, and each
    line's broker part says its sequence number and the state deferred."""
    read = list(read_messages(io.StringIO(text)))
    assert len(read) == len(peeked) > 0
    for message, original in zip(read, peeked, strict=True):
        for name in SENT_FIELDS:
            assert same(getattr(message, name), getattr(original, name)), name
    brokers = [json.loads(line)["broker"] for line in text.splitlines()]
    assert [b["sequence_number"] for b in brokers] == [m.sequence_number for m in peeked]
    assert {b["state"] for b in brokers} == {"deferred"}


def test_the_deferred_messages_are_exported_as_they_peek(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    with sdk.get_queue_sender("queue") as sender:
        sender.send_messages([rich(i) for i in range(12)])
    deferred = defer_with_sdk(sdk, "queue", 8)
    entity = client.entity("queue")
    peeked = list(find_deferred(entity))
    assert sorted(m.sequence_number for m in peeked) == sorted(deferred)
    out = io.StringIO()
    written: list[int] = []
    report = export_deferred(entity, out, on_progress=lambda now: written.append(now.done))
    assert_exported_as_peeked(out.getvalue(), peeked)
    assert (report.entity, report.exported, written) == ("queue", 8, list(range(1, 9)))
    assert (report.first_sequence_number, report.last_sequence_number) == (
        min(deferred), max(deferred))
    part = io.StringIO()
    report = export_deferred(entity, part, from_sequence_number=peeked[2].sequence_number or 0,
                             max_count=3)
    assert_exported_as_peeked(part.getvalue(), peeked[2:5])
    assert report.exported == 3
    assert len(list(find_deferred(entity))) == 8  # exporting changed nothing
    with pytest.raises(ValueError, match="max_count"):
        export_deferred(entity, io.StringIO(), max_count=0)


def test_a_session_entitys_deferred_messages_are_exported(
        sdk: ServiceBusClient, client: ManagementClient, fake_namespace: FakeNamespace) -> None:
    for session in ("alpha", "beta"):
        with sdk.get_queue_sender("session-queue") as sender:
            sender.send_messages([rich(i, session) for i in range(5)])
        defer_with_sdk(sdk, "session-queue", 3, session_id=session)
    entity = client.entity("session-queue")
    peeked = list(find_deferred(entity))
    assert [m.session_id for m in peeked] == ["alpha"] * 3 + ["beta"] * 3
    out = io.StringIO()
    assert export_deferred(entity, out).exported == 6
    assert_exported_as_peeked(out.getvalue(), peeked)
    beta = io.StringIO()
    assert export_deferred(entity, beta, session_id="beta").exported == 3
    assert_exported_as_peeked(beta.getvalue(), peeked[3:])

    async def main() -> str:
        async with AsyncManagementClient.from_connection_string(
                fake_namespace.connection_string, timeout=10) as aclient:
            text = io.StringIO()
            report = await export_deferred_async(aclient.entity("session-queue"), text,
                                                 max_count=4)
            assert report.exported == 4
            return text.getvalue()

    assert_exported_as_peeked(asyncio.run(main()), peeked[:4])
    assert fake_namespace.accounting("session-queue")["deferred"] == 6


def test_cancel_stops_starting_batches_and_counts_the_rest(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    deferred = mixed_queue(sdk, client)
    cancel = CancelToken()
    report = settle_deferred(client.entity("queue"), sorted(deferred), "complete",
                             batch_size=5, in_flight=1,
                             on_progress=lambda p: cancel.cancel(), cancel=cancel)
    assert report.cancelled and report.outcome is Outcome.CANCELLED
    assert len(report.settled) == 5
    assert sorted(report.settled + report.not_attempted) == sorted(deferred)
    assert report.total == len(deferred)


def test_a_dead_letter_reason_goes_with_dead_letter_only(client: ManagementClient) -> None:
    with pytest.raises(ValueError, match="dead_letter"):
        settle_deferred(client.entity("queue"), [1], "complete", dead_letter_reason="x")
    with pytest.raises(ValueError):
        settle_deferred(client.entity("queue"), [1], "purge")
    with pytest.raises(TypeError):
        settle_deferred(client.entity("queue"), ["1"], "complete")  # type: ignore[list-item]


def test_the_asyncio_action_finds_pages_and_settles_sessions(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    plain = defer_with_sdk_after_send(sdk, "queue", 12)
    send(sdk, "session-queue", [f"s {i}" for i in range(5)], session_id="s")
    in_session = defer_with_sdk(sdk, "session-queue", 5, session_id="s")

    async def main() -> None:
        async with AsyncManagementClient.from_connection_string(
                fake_namespace.connection_string, timeout=10) as aclient:
            queue = aclient.entity("queue")
            found = [m async for m in find_deferred_async(queue)]
            assert sorted(m.sequence_number for m in found) == sorted(plain)
            page = await deferred_page_async(queue, 1, 5)
            assert len(page.messages) == 5 and page.next_sequence_number is not None
            report = await settle_deferred_async(queue, found[:6], "dead_letter",
                                                 dead_letter_reason="why", batch_size=2)
            assert sorted(report.settled) == sorted(m.sequence_number for m in found[:6])
            sessions = aclient.entity("session-queue")
            chosen = [m async for m in find_deferred_async(sessions)]
            report = await settle_deferred_async(sessions, chosen, "abandon", in_flight=2,
                                                 batch_size=2)
            assert report.sessions == ["s"]
            assert sorted(report.settled) == sorted(in_session)
            again = [m async for m in find_deferred_async(sessions)]
            assert sorted(m.sequence_number for m in again) == sorted(in_session)

    asyncio.run(main())
    assert fake_namespace.accounting("queue")["deferred"] == 6
    assert fake_namespace.accounting("session-queue")["deferred"] == 5


def defer_with_sdk_after_send(sdk: ServiceBusClient, queue: str, count: int) -> dict[int, str]:
    send(sdk, queue, [f"m {i}" for i in range(count)])
    return defer_with_sdk(sdk, queue, count)


@pytest.mark.parametrize("operation", ["com.microsoft:receive-by-sequence-number",
                                       "com.microsoft:update-disposition"])
@pytest.mark.parametrize("after_batches", [0, 1, 2])
def test_nothing_is_lost_when_the_connection_is_cut_at_any_step(
        fake_namespace: FakeNamespace, operation: str, after_batches: int) -> None:
    with ServiceBusClient.from_connection_string(fake_namespace.connection_string,
                                                 retry_total=0) as sdk:
        send(sdk, "queue", [f"body {i}" for i in range(15)])
        deferred = defer_with_sdk(sdk, "queue", 15)
    with ManagementClient.from_connection_string(fake_namespace.connection_string,
                                                 timeout=10) as client:
        ids = {m.sequence_number: m.message_id for m in find_deferred(client.entity("queue"))}
        cut = threading.Event()
        pauses = []

        def hold_the_next_reply(progress: Progress | None = None) -> None:
            if progress is None or progress.done == after_batches * 5:
                pauses.append(fake_namespace.faults.pause(entity="queue", operation=operation))

        def cut_when_held() -> None:
            while not (pauses and pauses[0].hits):
                if cut.wait(0.01):
                    return
            fake_namespace.faults.close_connections()
            pauses[0].remove()

        if after_batches == 0:
            hold_the_next_reply()
        cutter = threading.Thread(target=cut_when_held)
        cutter.start()
        report = settle_deferred(client.entity("queue"), sorted(deferred), "complete",
                                 batch_size=5, in_flight=1, on_progress=hold_the_next_reply)
        cut.set()
        cutter.join(10)
        assert pauses and pauses[0].hits == 1
        assert len(report.failed) == 5 and report.not_found == []
        assert sorted([*report.settled, *report.failed]) == sorted(deferred)
        fake_namespace.clock.advance(61)  # a cut receive's locks expire: deferred again
        left = {m.sequence_number: m for m in find_deferred(client.entity("queue"))}
    accounting = fake_namespace.accounting("queue")
    assert accounting["deferred"] + accounting["completed"] == 15
    assert not set(report.settled) & set(left)
    assert {n: (m.message_id, m.body_bytes().decode()) for n, m in left.items()} == {
        n: (ids[n], deferred[n]) for n in left}
    if operation.endswith("update-disposition"):  # applied, its reply lost
        assert left == {} and all("may have been applied" in t for t in report.failed.values())
    else:  # the receive may have locked them; they are deferred again
        assert sorted(left) == sorted(report.failed)


def test_the_asyncio_action_reports_progress_and_honours_cancel(
        sdk: ServiceBusClient, fake_namespace: FakeNamespace) -> None:
    deferred = defer_with_sdk_after_send(sdk, "queue", 20)

    async def main() -> None:
        async with AsyncManagementClient.from_connection_string(
                fake_namespace.connection_string, timeout=10) as aclient:
            cancel = CancelToken()
            seen: list[Progress] = []

            def progress(now: Progress) -> None:
                seen.append(now)
                if now.counts["settled"] >= 8:
                    cancel.cancel()

            report = await settle_deferred_async(
                aclient.entity("queue"), sorted(deferred), "complete", batch_size=4,
                in_flight=1, on_progress=progress, cancel=cancel)
            assert report.cancelled and len(report.settled) == 8
            assert sorted(report.settled + report.not_attempted) == sorted(deferred)
            assert [p.counts["settled"] for p in seen] == [4, 8]

    asyncio.run(main())
    assert fake_namespace.accounting("queue")["deferred"] == 12


def test_chosen_numbers_become_their_deferred_messages_in_one_read(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    """select_deferred, the one way both front ends turn chosen numbers into messages: the
    deferred ones asked for (with their session ids), and the rest named as not found."""
    deferred = mixed_queue(sdk, client)
    numbers = sorted(deferred)
    active = next(n for n, s in states(client, "queue").items() if s is MessageState.ACTIVE)
    seen: list[Progress] = []
    chosen = select_deferred(client.entity("queue"),
                             [numbers[9], numbers[3], active, numbers[3], 10**6],
                             on_progress=seen.append)
    assert [m.sequence_number for m in chosen.messages] == [numbers[3], numbers[9]]
    assert {m.body_bytes().decode() for m in chosen.messages} == {
        deferred[numbers[3]], deferred[numbers[9]]}
    assert chosen.not_found == sorted([active, 10**6])
    assert [p.done for p in seen] == [1, 2]
    every = select_deferred(client.entity("queue"))
    assert [m.sequence_number for m in every.messages] == numbers and every.not_found == []
    with pytest.raises(ValueError):
        select_deferred(client.entity("queue"), [-1])
    report = settle_deferred(client.entity("queue"), chosen.messages, "complete")
    assert report.record() == {
        "entity": "queue", "outcome": "finished",
        "counts": {"settled": 2, "not_found": 0, "failed": 0, "not_attempted": 0},
        "action": "complete", "settled": report.settled, "not_found": [], "failed": {},
        "not_attempted": [], "sessions": []}
    assert sorted(report.settled) == [numbers[3], numbers[9]]


def test_a_sessions_chosen_messages_keep_their_session(
        sdk: ServiceBusClient, client: ManagementClient) -> None:
    send(sdk, "session-queue", [f"s {i}" for i in range(4)], session_id="s")
    in_session = defer_with_sdk(sdk, "session-queue", 4, session_id="s")
    numbers = sorted(in_session)
    chosen = select_deferred(client.entity("session-queue"), numbers[1:3])
    assert [(m.sequence_number, m.session_id) for m in chosen.messages] == [
        (numbers[1], "s"), (numbers[2], "s")]
    report = settle_deferred(client.entity("session-queue"), chosen.messages, "complete")
    assert report.sessions == ["s"] and sorted(report.settled) == numbers[1:3]
