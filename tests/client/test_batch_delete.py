"""delete_messages and purge_messages, sync and asyncio, against the fake: the oldest first,
an entity, its dead-letter queue, a subscription and one session; a purge of 10,000 leaves
nothing; a purge cut by a dropped connection at every step reports what it deleted and
deletes nothing twice (every message counted by id and body); cancellation; max_count."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.entity_paths import DEAD_LETTER_SUFFIX, dead_letter_path, is_dead_letter_path
from sbmgmt.errors import (
    BadRequestError,
    ConnectionLostError,
    PurgeCancelledError,
    PurgeError,
)

OPERATION = "com.microsoft:batch-delete-messages"


def _fill(fake: FakeNamespace, entity: str, count: int, **fields: object) -> dict[str, bytes]:
    """``count`` messages with distinct ids and bodies; id -> body."""
    sent = {f"{entity}-{i}": f"body {i} of {entity}".encode() for i in range(count)}
    fake.send(entity, *(Message(message_id=mid, body=body, **fields)  # type: ignore[arg-type]
                        for mid, body in sent.items()))
    return sent


def _remaining(client: ManagementClient, entity: str) -> dict[str, bytes]:
    """Every message still in ``entity``, id -> body (an id seen twice fails)."""
    found: dict[str, bytes] = {}
    for message in client.entity(entity).peek_all():
        assert message.message_id not in found, "a message seen twice"
        assert isinstance(message.message_id, str) and isinstance(message.body, bytes)
        found[message.message_id] = message.body
    return found


@pytest.fixture
def sync_client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
        yield c


def test_delete_takes_the_oldest_and_holds_the_cutoff(fake: FakeNamespace,
                                                      sync_client: ManagementClient) -> None:
    _fill(fake, "q", 5)
    cutoff = datetime.now(timezone.utc) + timedelta(milliseconds=5)
    fake.clock.advance(1.0)  # what is sent now is enqueued after the cutoff
    fake.send("q", Message(message_id="late", body=b"late"))
    q = sync_client.entity("q")
    assert q.delete_messages(2) == 2
    assert list(_remaining(sync_client, "q")) == ["q-2", "q-3", "q-4", "late"]
    assert q.delete_messages(100, before=cutoff) == 3
    assert _remaining(sync_client, "q") == {"late": b"late"}
    assert q.delete_messages(100, before=cutoff) == 0


@pytest.mark.parametrize("path", ["q", "q/$DeadLetterQueue", "t/Subscriptions/s"])
def test_a_purge_empties_one_entity_alone(fake: FakeNamespace, sync_client: ManagementClient,
                                          path: str) -> None:
    fake.add_subscription("t", "other")
    fake.send("t", *(Message(body=b"e") for _ in range(30)))
    _fill(fake, "q", 40)
    for message in fake.receive_and_lock("q", 10):
        assert message.lock_token is not None
        sync_client.entity("q").update_disposition([message.lock_token], "suspended")
    counts = {p: len(_remaining(sync_client, p))
              for p in ("q", "q/$DeadLetterQueue", "t/Subscriptions/s", "t/Subscriptions/other")}
    assert counts == {"q": 30, "q/$DeadLetterQueue": 10, "t/Subscriptions/s": 30,
                      "t/Subscriptions/other": 30}
    assert sync_client.entity(path).purge_messages() == counts.pop(path)
    assert _remaining(sync_client, path) == {}
    assert {p: len(_remaining(sync_client, p)) for p in counts} == counts


def test_one_session_is_purged_alone(fake: FakeNamespace, sync_client: ManagementClient) -> None:
    fake.send("sq", *(Message(body=b"a", session_id="a") for _ in range(700)),
              *(Message(body=b"b", session_id="b") for _ in range(3)))
    assert sync_client.entity("sq").purge_messages(session_id="a") == 700
    assert fake.accounting("sq")["active"] == 3
    assert sync_client.entity("sq").purge_messages(session_id="a") == 0


def test_an_empty_entity_answers_zero(fake: FakeNamespace, sync_client: ManagementClient) -> None:
    assert sync_client.entity("q").delete_messages(10) == 0
    assert sync_client.entity("q").purge_messages() == 0
    assert fake.applied("q", OPERATION) == 2  # one request each: the purge starts narrow


def test_a_purge_of_10000_leaves_nothing(fake: FakeNamespace,
                                         sync_client: ManagementClient) -> None:
    _fill(fake, "q", 10_000)
    progress: list[int] = []
    assert sync_client.entity("q").purge_messages(on_progress=progress.append) == 10_000
    assert sum(progress) == 10_000
    assert _remaining(sync_client, "q") == {}
    counts = fake.accounting("q")
    assert (counts["deleted"], counts["accepted"], counts["active"]) == (10_000, 10_000, 0)


def test_the_asyncio_client_purges_10000() -> None:
    """1,000 a request: a Premium namespace's quota allows it (Standard's is 500)."""
    with FakeNamespace(tier="premium") as fake:
        fake.add_queue("q")
        fake.add_queue("sq", requires_session=True)
        _purge_asyncio(fake)


def _purge_asyncio(fake: FakeNamespace) -> None:
    _fill(fake, "q", 10_000)
    _fill(fake, "sq", 5, session_id="s")

    async def main() -> tuple[int, int, int]:
        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=10) as client:
            q = client.entity("q")
            first = await q.delete_messages(1)
            rest = await q.purge_messages(batch_size=1000)
            session = await client.entity("sq").purge_messages(session_id="s")
            return first, rest, session

    assert asyncio.run(main()) == (1, 9_999, 5)
    assert fake.accounting("q")["deleted"] == 10_000


def test_max_count_is_never_exceeded(fake: FakeNamespace, sync_client: ManagementClient) -> None:
    _fill(fake, "q", 3000)
    assert sync_client.entity("q").purge_messages(max_count=1234, batch_size=500,
                                                  in_flight=4) == 1234
    assert fake.accounting("q")["active"] == 3000 - 1234


def test_requests_in_flight_is_a_deprecated_alias_of_in_flight(
        fake: FakeNamespace, sync_client: ManagementClient) -> None:
    _fill(fake, "q", 30)
    with pytest.deprecated_call(match="in_flight="):
        deleted = sync_client.entity("q").purge_messages(batch_size=10, requests_in_flight=1)
    assert deleted == 30
    assert fake.applied("q", OPERATION) == 4  # one at a time: 3 full, then the zero


def test_messages_sent_during_a_purge_stay(fake: FakeNamespace,
                                           sync_client: ManagementClient) -> None:
    _fill(fake, "q", 2000)
    later = {f"late-{i}": b"late" for i in range(20)}

    def send_more(_deleted: int) -> None:
        if fake.accounting("q")["accepted"] == 2000:
            fake.clock.advance(0.01)  # after the purge's cutoff, whatever the machine's pace
            fake.send("q", *(Message(message_id=mid, body=body) for mid, body in later.items()))

    assert sync_client.entity("q").purge_messages(on_progress=send_more) == 2000
    assert _remaining(sync_client, "q") == later


def test_a_count_above_the_quota_is_refused_with_the_count_so_far(
        fake: FakeNamespace, sync_client: ManagementClient) -> None:
    _fill(fake, "q", 10)
    # the Standard tier's quota, the fake's default tier (Premium's 4,000: tests/fake/test_tiers.py)
    with pytest.raises(BadRequestError, match="between 1 and 500"):
        sync_client.entity("q").delete_messages(501)
    with pytest.raises(PurgeError) as caught:
        sync_client.entity("q").purge_messages(batch_size=501)
    assert (caught.value.deleted, caught.value.uncertain_requests) == (0, 0)
    assert isinstance(caught.value.error, BadRequestError)
    assert isinstance(caught.value.__cause__, BadRequestError)
    assert fake.accounting("q")["active"] == 10


def test_bad_arguments_send_nothing(fake: FakeNamespace, sync_client: ManagementClient) -> None:
    q = sync_client.entity("q")
    with pytest.raises(ValueError, match="max_count"):
        q.delete_messages(0)
    with pytest.raises(TypeError, match="before"):
        q.delete_messages(1, before="yesterday")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        q.purge_messages(batch_size=0)
    with pytest.raises(ValueError, match="in_flight"):
        q.purge_messages(in_flight=0)
    with pytest.deprecated_call(), pytest.raises(ValueError, match="requests_in_flight"):
        q.purge_messages(requests_in_flight=0)  # the old name, deprecated: named as given
    with pytest.deprecated_call(), pytest.raises(TypeError, match="in_flight only"):
        q.purge_messages(in_flight=2, requests_in_flight=2)
    with pytest.raises(TypeError, match="max_count"):
        q.purge_messages(max_count=1.5)  # type: ignore[arg-type]
    assert fake.applied("q", OPERATION) == 0


# --- a purge cut by a dropped connection, at every step ---------------------------------

TOTAL, BATCH, IN_FLIGHT = 1500, 100, 4


def _cut_at(fake: FakeNamespace, entity: str, step: int) -> tuple[int, int]:
    """Purge ``entity``, closing every connection when the ``step``-th reply came; what
    it reported: (deleted, requests with an unknown outcome). A cut with nothing in
    flight loses nothing: the client reconnects and the purge finishes."""
    replies = 0

    def cut(_deleted: int) -> None:
        nonlocal replies
        replies += 1
        if replies == step:
            assert fake.faults.close_connections() >= 1

    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        try:
            deleted = client.entity(entity).purge_messages(
                batch_size=BATCH, in_flight=IN_FLIGHT, on_progress=cut)
        except PurgeError as error:
            assert isinstance(error.error, ConnectionLostError)
            assert error.deleted >= step  # the replies before the cut were counted
            assert error.may_have_been_applied is (error.uncertain_requests > 0)
            return error.deleted, error.uncertain_requests
    assert replies >= step
    return deleted, 0


@pytest.mark.parametrize("step", range(1, TOTAL // BATCH + 1))
def test_a_purge_cut_by_a_dropped_connection_counts_and_deletes_nothing_twice(
        fake: FakeNamespace, sync_client: ManagementClient, step: int) -> None:
    sent = _fill(fake, "q", TOTAL)
    reported, uncertain = _cut_at(fake, "q", step)
    actually = fake.accounting("q")["deleted"]
    # What it reports it deleted was deleted; what it may not know of is bounded.
    assert reported <= actually <= reported + uncertain * BATCH
    remaining = _remaining(sync_client, "q")
    assert len(remaining) == TOTAL - actually
    assert all(sent[mid] == body for mid, body in remaining.items())
    # Run again: the rest goes, and every message was deleted exactly once.
    assert sync_client.entity("q").purge_messages() == TOTAL - actually
    counts = fake.accounting("q")
    assert (counts["deleted"], counts["accepted"]) == (TOTAL, TOTAL)
    assert sum(v for k, v in counts.items() if k not in ("deleted", "accepted")) == 0


def test_a_purge_cut_before_any_reply(fake: FakeNamespace, sync_client: ManagementClient) -> None:
    _fill(fake, "q", TOTAL)
    pause = fake.faults.pause(entity="q", operation=OPERATION)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                client.entity("q").purge_messages(batch_size=BATCH)
            except BaseException as error:  # handed to the test thread
                outcome.append(error)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = datetime.now(timezone.utc) + timedelta(seconds=10)
        while fake.applied("q", OPERATION) == 0 and datetime.now(timezone.utc) < deadline:
            threading.Event().wait(0.01)
        assert fake.faults.close_connections() >= 1
        pause.remove()
        worker.join(10)
    (error,) = outcome
    assert isinstance(error, PurgeError)
    assert (error.deleted, error.uncertain_requests) == (0, 1)
    assert fake.accounting("q")["deleted"] == BATCH  # applied; its reply was lost
    assert sync_client.entity("q").purge_messages() == TOTAL - BATCH


def test_the_asyncio_purge_cut_by_a_dropped_connection(fake: FakeNamespace,
                                                       sync_client: ManagementClient) -> None:
    _fill(fake, "q", TOTAL)

    async def main() -> tuple[int, int]:
        replies = 0

        def cut(_deleted: int) -> None:
            nonlocal replies
            replies += 1
            if replies == 3:
                fake.faults.close_connections()

        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=10) as client:
            try:
                return await client.entity("q").purge_messages(batch_size=BATCH,
                                                               on_progress=cut), 0
            except PurgeError as error:
                assert isinstance(error.error, ConnectionLostError)
                return error.deleted, error.uncertain_requests

    reported, uncertain = asyncio.run(main())
    actually = fake.accounting("q")["deleted"]
    assert reported <= actually <= reported + uncertain * BATCH
    assert sync_client.entity("q").purge_messages() == TOTAL - actually


# --- cancellation ----------------------------------------------------------------------


def test_a_cancelled_purge_says_how_many_it_deleted(fake: FakeNamespace,
                                                    sync_client: ManagementClient) -> None:
    _fill(fake, "q", 5000)
    cancel = threading.Event()
    replies: list[int] = []

    def stop_after_two(deleted: int) -> None:
        replies.append(deleted)
        if len(replies) == 2:
            cancel.set()

    with pytest.raises(PurgeCancelledError) as caught:
        sync_client.entity("q").purge_messages(batch_size=BATCH, on_progress=stop_after_two,
                                               cancel=cancel)
    error = caught.value
    assert error.uncertain_requests == 0
    assert error.deleted == sum(replies) == fake.accounting("q")["deleted"]
    assert BATCH * 2 <= error.deleted < 5000


def test_a_cancelled_asyncio_purge_says_how_many_it_deleted(fake: FakeNamespace) -> None:
    _fill(fake, "q", 5000)

    async def main() -> PurgeCancelledError:
        cancel = asyncio.Event()
        replies: list[int] = []

        def stop(deleted: int) -> None:
            replies.append(deleted)
            if len(replies) == 3:
                cancel.set()

        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=10) as client:
            with pytest.raises(PurgeCancelledError) as caught:
                await client.entity("q").purge_messages(batch_size=BATCH, on_progress=stop,
                                                         cancel=cancel)
            assert caught.value.deleted == sum(replies)
            return caught.value

    error = asyncio.run(main())
    assert error.deleted == fake.accounting("q")["deleted"]


def test_the_dead_letter_path_is_built_in_one_place(fake: FakeNamespace,
                                                    sync_client: ManagementClient) -> None:
    """sbmgmt.entity_paths: the one suffix, recognized in any case, built once."""
    assert dead_letter_path("q") == dead_letter_path("q/") == "q/$DeadLetterQueue"
    assert dead_letter_path("t/Subscriptions/s") == "t/Subscriptions/s" + DEAD_LETTER_SUFFIX
    assert dead_letter_path("q/$deadletterqueue") == "q/$deadletterqueue"
    assert is_dead_letter_path("Q/$DEADLETTERQUEUE/") and not is_dead_letter_path("q")
    _fill(fake, "q", 4)
    for message in fake.receive_and_lock("q", 3):
        assert message.lock_token is not None
        sync_client.entity("q").update_disposition([message.lock_token], "suspended")
    assert sync_client.entity(dead_letter_path("q")).purge_messages() == 3
    assert fake.accounting("q")["active"] == 1
