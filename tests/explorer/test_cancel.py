"""Every job kind's Cancel, in Chromium (issue 57): a resubmit, a move, an import and a
settlement of deferred messages, each of thousands of messages, cancelled once the job
page shows progress. The job must stop, say it was cancelled and how many it did, and,
counting by MessageId and body in the source and the target after, nothing is lost or
doubled and what was done is what the page says. (The purge's Cancel is
tests/explorer/test_actions.py's.) An export is a download, not a job: the browser's cancel
of it stops the server's peeks.

Each test has an explorer of its own over an embedded fake whose connections are slowed
(``network_latency``: every AMQP round trip of the explorer's client takes
:data:`ROUND_TRIP`, so that several batches are on the wire at once); the test fills and
counts through a client connected before the slowing. Cancel comes in the middle whatever
the machine's speed: each job's action, once it has told its first progress, waits in its
``on_progress`` until the job is cancelled (``held_until_cancelled``, tests/explorer/
conftest.py), so the page
shows a count, Cancel is pressed while the action runs, and the action then goes on with
its next step, which must see the cancellation: what was on the wire finishes, nothing
new starts. The sizes are a few times what an action has on the wire at once, so a
cancelled run always stops short of the whole.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.entities import admin_client
from sbmgmt.actions.export import write_messages
from sbmgmt.message import ReceivedMessage
from tests._waiting import wait_until

from .conftest import Served

#: A resubmit or a move keeps 24 batches of 100 moving (the action's defaults), each
#: batch's thread held in ``on_progress`` once it is done: at most those 2,400 and the
#: batches received ahead are done when Cancel is seen.
MESSAGES = 5_000
ROUND_TRIP = 0.05
SOURCE, TARGET = "source", "target"
DEAD_LETTERS = f"{SOURCE}/$DeadLetterQueue"

Key = tuple[str, bytes]

#: A settlement of deferred messages keeps 16 requests of 100 in flight (the action's
#: defaults): at most 1,700 are done when Cancel is seen.
DEFERRED = 4_000
#: An import keeps 8 batches of 100 on the wire (its defaults): at most 900 are done when
#: Cancel is seen.
IMPORTED = 4_000
#: Peeked 250 a page, 16 pages on the wire at first and 32 once pages came back full
#: (peek_all's defaults): 100 pages, more than the 80 a cancelled export may ask for (48
#: by the cancel, and the 32 on the wire then).
EXPORTED = 25_000


def originals(count: int) -> list[Message]:
    return [Message(body=f"order {n}".encode(), message_id=f"m{n}") for n in range(count)]


ORIGINALS = originals(MESSAGES)
EVERY = collections.Counter((str(m.message_id), m.body_bytes()) for m in ORIGINALS)


@pytest.fixture
def served() -> Iterator[Served]:
    """An explorer of its own over an embedded fake, its client slowed; ``client`` is a
    quick one, for the test."""
    from fakes.sql import parse_action, parse_filter
    from sbmgmt.explorer import Explorer, Namespace

    with FakeNamespace(http_port=0) as fake:
        fake.add_queue(SOURCE)
        fake.add_queue(TARGET)
        assert fake.http_port is not None
        connection_string = fake.connection_string
        with ManagementClient.from_connection_string(connection_string, timeout=20) as quick:
            fake.network_latency = ROUND_TRIP  # every connection from now on
            with ManagementClient.from_connection_string(connection_string,
                                                         timeout=20) as slow, \
                    admin_client(connection_string=connection_string,
                                 http_port=fake.http_port, timeout=20) as admin:
                namespace = Namespace(label="127.0.0.1", client=slow, admin=admin,
                                      check_sql_filter=parse_filter,
                                      check_sql_action=parse_action)
                with Explorer(namespace, refresh_seconds=1.0) as explorer:
                    yield Served("fake", connection_string, fake.http_port, explorer.url,
                                 explorer.base_url, quick, admin, fake)


def contents(served: Served, path: str) -> collections.Counter[Key]:
    """Every message of ``path`` (whatever its state), by MessageId and body."""
    return collections.Counter((str(m.message_id), m.body_bytes())
                               for m in served.client.entity(path).peek_all())


def each_once(found: collections.Counter[Key], every: collections.Counter[Key] = EVERY) -> int:
    """How many ``found`` holds, after checking each is one of ``every``, there once."""
    assert not found - every and max(found.values(), default=1) == 1
    return sum(found.values())


def settled(served: Served, status: str, messages: list[Message] = ORIGINALS) -> None:
    """``messages`` sent to the source and each settled with ``status`` (dead-letter,
    defer) by lock token, as a receiver would."""
    fake = served.fake
    assert fake is not None
    fake.send(SOURCE, *messages)
    locked: list[ReceivedMessage] = fake.receive_and_lock(SOURCE, len(messages))
    for start in range(0, len(locked), 500):
        served.client.entity(SOURCE).update_disposition(
            [m.lock_token for m in locked[start:start + 500]], status)


def cancelled_in_the_middle(page: Any, verb: str) -> int:
    """Confirm the question on the page, press the job's Cancel once it shows progress;
    how many the job's outcome says were done (it must say it was cancelled)."""
    page.locator(".confirm button[type=submit]").first.click()
    job = page.get_by_test_id("job")
    job.get_by_test_id("job-done").filter(has_text=re.compile(r"^[1-9]")).wait_for()
    job.locator("button", has_text="Cancel").click()
    outcome = page.get_by_test_id("job-outcome").inner_text()
    assert "cancelled" in outcome, outcome
    said = re.match(rf"{verb} (\d[\d,]*) ", outcome)
    assert said is not None, outcome
    return int(said.group(1).replace(",", ""))


@pytest.mark.usefixtures("held_until_cancelled")
def test_a_resubmit_is_cancelled(page: Any, served: Served) -> None:
    settled(served, "suspended")
    page.goto(f"{served.base_url}/messages?path={SOURCE}&queue=deadletter")
    page.get_by_test_id("resubmit").locator("button").click()
    done = cancelled_in_the_middle(page, "resubmitted")
    left, back = contents(served, DEAD_LETTERS), contents(served, SOURCE)
    assert left + back == EVERY  # nothing lost, nothing doubled
    assert 0 < sum(back.values()) == done < MESSAGES


@pytest.mark.usefixtures("held_until_cancelled")
def test_a_move_is_cancelled(page: Any, served: Served) -> None:
    assert served.fake is not None
    served.fake.send(SOURCE, *ORIGINALS)
    page.goto(f"{served.base_url}/messages?path={SOURCE}")
    move = page.get_by_test_id("move")
    move.locator("input[name=target]").fill(TARGET)
    move.locator("button").click()
    done = cancelled_in_the_middle(page, "moved")
    left, arrived = contents(served, SOURCE), contents(served, TARGET)
    assert left + arrived == EVERY
    assert 0 < sum(arrived.values()) == done < MESSAGES


@pytest.mark.usefixtures("held_until_cancelled")
def test_an_import_is_cancelled(page: Any, served: Served, tmp_path: Path) -> None:
    """An import sends 8 batches of 100 at once, one round trip each."""
    sent = originals(IMPORTED)
    file = tmp_path / "orders.jsonl"
    with file.open("w", encoding="utf-8") as out:
        write_messages(sent, out)
    page.goto(f"{served.base_url}/messages?path={TARGET}")
    form = page.get_by_test_id("import")
    form.locator("input[type=file]").set_input_files(str(file))
    form.locator("button").click()
    done = cancelled_in_the_middle(page, "sent")
    every = collections.Counter((str(m.message_id), m.body_bytes()) for m in sent)
    assert 0 < each_once(contents(served, TARGET), every) == done < IMPORTED


@pytest.mark.usefixtures("held_until_cancelled")
def test_a_settlement_of_deferred_messages_is_cancelled(page: Any, served: Served) -> None:
    """Settled through the management node, many requests in flight."""
    deferred = originals(DEFERRED)
    settled(served, "defered", deferred)
    page.goto(f"{served.base_url}/deferred?path={SOURCE}&kind=queue")
    form = page.get_by_test_id("settle")
    form.locator("select[name=action]").select_option("complete")
    form.locator("button").click()
    done = cancelled_in_the_middle(page, "completed")
    every = collections.Counter((str(m.message_id), m.body_bytes()) for m in deferred)
    left = each_once(contents(served, SOURCE), every)
    assert 0 < DEFERRED - left == done < DEFERRED


def test_a_confirmation_is_acted_on_once(page: Any, served: Served) -> None:
    """What a question holds on the server (here a purge's plan) is taken by its answer:
    the same answer sent again is told it is no longer held, and nothing more is done."""
    assert served.fake is not None
    served.fake.send(SOURCE, *ORIGINALS[:3])
    page.goto(f"{served.base_url}/messages?path={SOURCE}")
    page.click("[data-testid=queue-actions] button")
    confirm = page.locator(".confirm")
    held = confirm.locator("input[name=held]").get_attribute("value")
    assert held
    confirm.locator("button[type=submit]").click()
    assert page.get_by_test_id("job-outcome").inner_text() == f"deleted 3 messages of {SOURCE}"
    served.fake.send(SOURCE, *ORIGINALS[3:5])
    status, answer = page.evaluate(
        """async (held) => {
            const body = new URLSearchParams({held, confirmed: "yes"});
            const reply = await fetch("/purge", {method: "POST", body,
                                                 headers: {"HX-Request": "true"}});
            return [reply.status, await reply.text()];
        }""", held)
    assert status == 200 and "this confirmation is no longer held" in answer
    assert each_once(contents(served, SOURCE)) == 2  # the two sent after: still there


def test_an_export_download_cancelled_stops_reading(page: Any, served: Served) -> None:
    """An export is not a job but a download, written as the pages of peeks come: the
    browser's cancel of the download ends it on the server too. The whole export of
    :data:`EXPORTED` messages needs 100 peeks. Their replies are held (the fake's pause)
    until the first 16 are asked, then let go while the next are held: the export widens
    to 32 on the wire (48 asked). The download, which has had 16 pages, is cancelled there.
    Once the 32 are let go too, no more are asked for than those on the wire at the
    cancel: with nothing slowed, in seconds, the count stays short of the whole."""
    fake = served.fake
    assert fake is not None
    fake.send(SOURCE, *originals(EXPORTED))
    page.goto(f"{served.base_url}/messages?path={SOURCE}&size=10")
    before = fake.applied(SOURCE, "com.microsoft:peek-message")

    def peeks() -> int:
        return fake.applied(SOURCE, "com.microsoft:peek-message") - before

    def held() -> Any:
        return fake.faults.pause(entity=SOURCE, operation="com.microsoft:peek-message")

    first = held()
    try:
        with page.expect_download() as started:
            page.get_by_test_id("export").click()
        download = started.value
        assert wait_until(lambda: peeks() >= 16, 30)
        second = held()
        try:
            first.remove()
            assert wait_until(lambda: peeks() >= 48, 30)  # the first 16 pages are written
            download.cancel()
            assert download.failure() == "canceled"
            at_cancel = peeks()
        finally:
            second.remove()
        assert not wait_until(lambda: peeks() >= EXPORTED // 250, 3)
        assert peeks() <= at_cancel + 32
    finally:
        first.remove()
