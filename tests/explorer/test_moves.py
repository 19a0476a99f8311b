"""The explorer's actions on many messages, in the browser, each through its action of
``sbmgmt.actions``: a dead letter found, inspected, resubmitted and gone from the
dead-letter queue (the counts follow); dead letters moved; a queue exported (the download
read back with ``read_messages``) and an export file imported; deferred messages (deferred
by the official SDK's receiver) settled."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sbmgmt import Message
from sbmgmt.actions.entities import entity_properties
from sbmgmt.actions.export import read_messages, write_messages
from sbmgmt.message import MessageState

from ._seed import dead_letter, send, settle_received
from .conftest import Served, follow, screenshot


def _ids(served: Served, path: str) -> list[Any]:
    return [m.message_id for m in served.client.entity(path).peek_all()]


def _dead_letter_count(page: Any, expected: int) -> None:
    page.locator("[data-count='dead-letter']").filter(
        has_text=re.compile(rf"^{expected}$")).wait_for()


def test_a_dead_letter_is_found_inspected_resubmitted_and_gone(page: Any,
                                                               served: Served) -> None:
    send(served.client, "repairs", *(Message(body=f'{{"order": {n}}}'.encode(),
                                             message_id=f"r{n}",
                                             content_type="application/json")
                                     for n in range(3)))
    dead_letter(served.connection_string, "repairs", 3, "OutOfStock", "item 7 <sold out>")
    page.reload()
    cell = page.locator("tr[data-name='repairs'] td.dead-letter")
    assert cell.inner_text() == "3"
    follow(page, "tr[data-name='repairs'] td.dead-letter a")
    _dead_letter_count(page, 3)
    row = page.get_by_test_id("messages").locator("tr", has_text="r1")
    assert "OutOfStock" in row.inner_text()
    number = int(row.get_attribute("data-seq"))
    with page.expect_navigation():
        row.locator("td.n a").click()
    assert "dead_letter_reason\tOutOfStock" in page.get_by_test_id(
        "system-properties").inner_text()
    page.go_back()
    page.locator(f"tr[data-seq='{number}'] input[name=seq]").check()
    page.get_by_test_id("resubmit").locator("button").click()
    confirm = page.locator(".confirm")
    assert confirm.inner_text().startswith(
        "Resubmit the 1 ticked message of repairs/$DeadLetterQueue: 1 to repairs.")
    screenshot(page, served, "explorer-resubmit.png")
    assert _ids(served, "repairs/$DeadLetterQueue") == ["r0", "r1", "r2"]  # asked, not done
    confirm.locator("button[type=submit]").click()
    outcome = page.get_by_test_id("job-outcome")
    assert outcome.inner_text() == "resubmitted 1 of 1 message of repairs/$DeadLetterQueue"
    assert _ids(served, "repairs/$DeadLetterQueue") == ["r0", "r2"]
    (back,) = served.client.entity("repairs").peek_all()
    assert (back.message_id, back.body_bytes(), back.dead_letter_reason) == (
        "r1", b'{"order": 1}', None)
    _dead_letter_count(page, 2)
    counts = entity_properties(served.admin, "repairs").counts
    assert (counts.active, counts.dead_letter) == (1, 2)
    page.reload()
    assert page.locator("tr[data-seq]").count() == 2

    page.get_by_test_id("resubmit").locator("button").click()  # none ticked: all of them
    assert page.locator(".confirm").inner_text().startswith(
        "Resubmit the 2 messages of repairs/$DeadLetterQueue: 2 to repairs.")
    page.locator(".confirm button[type=submit]").click()
    assert page.get_by_test_id("job-outcome").inner_text() == (
        "resubmitted 2 of 2 messages of repairs/$DeadLetterQueue")
    _dead_letter_count(page, 0)
    assert _ids(served, "repairs/$DeadLetterQueue") == []
    assert sorted(_ids(served, "repairs")) == ["r0", "r1", "r2"]


def test_dead_letters_are_moved_to_another_queue(page: Any, served: Served) -> None:
    send(served.client, "repairs", *(Message(body=f"m{n}".encode(), message_id=f"m{n}")
                                     for n in range(4)))
    served.client.entity("repairs").purge_messages()
    send(served.client, "repairs", *(Message(body=f"m{n}".encode(), message_id=f"m{n}")
                                     for n in range(4)))
    dead_letter(served.connection_string, "repairs", 4, "Poison", "bad")
    page.goto(f"{served.base_url}/messages?path=repairs&queue=deadletter")
    move = page.get_by_test_id("move")
    move.locator("input[name=target]").fill("repairs/$DeadLetterQueue")
    move.locator("button").click()
    page.locator(".outcome .error", has_text="cannot send to").wait_for()
    move.locator("input[name=target]").fill("moved-to")
    move.locator("button").click()
    confirm = page.locator(".confirm")
    assert confirm.inner_text().startswith(
        "Move the 4 messages of repairs/$DeadLetterQueue: 4 to moved-to.")
    confirm.locator("button[type=submit]").click()
    assert page.get_by_test_id("job-outcome").inner_text() == (
        "moved 4 of 4 messages of repairs/$DeadLetterQueue")
    assert _ids(served, "repairs/$DeadLetterQueue") == []
    assert _ids(served, "moved-to") == ["m0", "m1", "m2", "m3"]


def test_a_queue_is_exported_as_a_download_that_reads_back(page: Any, served: Served,
                                                            tmp_path: Path) -> None:
    sent = [Message(body=b'{"n": 1}', message_id="e1", content_type="application/json",
                    application_properties={"count": 7, "ok": True}),
            Message(body=bytes(range(256)), message_id="e2", subject="binary"),
            Message(body=b"<x>\xc3\xa9</x>", message_id="e3", session_id=None)]
    send(served.client, "exported", *sent)
    page.goto(f"{served.base_url}/messages?path=exported")
    with page.expect_download() as started:
        page.get_by_test_id("export").click()
    download = started.value
    assert download.suggested_filename == "exported.jsonl"
    saved = tmp_path / "exported.jsonl"
    download.save_as(str(saved))
    with saved.open(encoding="utf-8") as lines:
        read = list(read_messages(lines))
    peeked = list(served.client.entity("exported").peek_all())
    assert [(m.message_id, m.body_bytes(), m.subject, m.content_type,
             m.application_properties) for m in read] == [
        (m.message_id, m.body_bytes(), m.subject, m.content_type, m.application_properties)
        for m in peeked]
    assert len(read) == 3


def test_an_export_file_is_imported_after_a_confirmation(page: Any, served: Served,
                                                         tmp_path: Path) -> None:
    messages = [Message(body=f"i{n}".encode(), message_id=f"i{n}",
                        application_properties={"n": n}) for n in range(120)]
    file = tmp_path / "to-import.jsonl"
    with file.open("w", encoding="utf-8") as out:
        write_messages(messages, out)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": 1}\n', encoding="utf-8")
    page.goto(f"{served.base_url}/messages?path=imported")
    form = page.get_by_test_id("import")
    form.locator("input[type=file]").set_input_files(str(bad))
    form.locator("button").click()
    page.locator(".outcome .error", has_text="not sent: bad.jsonl: line 1").wait_for()
    form.locator("input[type=file]").set_input_files(str(file))
    form.locator("button").click()
    confirm = page.locator(".confirm")
    assert confirm.inner_text().startswith(
        "Send the 120 messages of to-import.jsonl to imported")
    assert _ids(served, "imported") == []
    confirm.locator("button[type=submit]").click()
    assert page.get_by_test_id("job-outcome").inner_text() == (
        "sent 120 messages to imported")
    peeked = list(served.client.entity("imported").peek_all())
    assert [(m.message_id, m.body_bytes(), m.application_properties) for m in peeked] == [
        (m.message_id, m.body_bytes(), m.application_properties) for m in messages]


def _defer(connection_string: str, queue: str, count: int) -> list[int]:
    """Receive ``count`` messages with the official SDK and defer them: their numbers."""
    return settle_received(connection_string, queue, count,
                           lambda receiver, message: receiver.defer_message(message))


def _deferred(served: Served) -> list[int]:
    return [m.sequence_number for m in served.client.entity("deferring").peek_all()
            if m.state is MessageState.DEFERRED]


def test_deferred_messages_are_found_and_settled(page: Any, served: Served) -> None:
    send(served.client, "deferring", *(Message(body=f"d{n}".encode(), message_id=f"d{n}")
                                       for n in range(5)))
    numbers = _defer(served.connection_string, "deferring", 5)
    assert _deferred(served) == numbers
    page.goto(f"{served.base_url}/messages?path=deferring")
    follow(page, "nav.tabs a:has-text('deferred')")
    table = page.get_by_test_id("deferred")
    assert [int(n) for n in table.locator("td.n a").all_inner_texts()] == numbers
    for number in numbers[:2]:
        page.locator(f"tr[data-seq='{number}'] input[name=seq]").check()
    form = page.get_by_test_id("settle")
    form.locator("select[name=action]").select_option("complete")
    form.locator("button").click()
    confirm = page.locator(".confirm")
    assert confirm.inner_text().startswith(
        "Complete (remove for good) the 2 ticked deferred messages of deferring.")
    screenshot(page, served, "explorer-deferred.png")
    confirm.locator("button[type=submit]").click()
    assert page.get_by_test_id("job-outcome").inner_text() == (
        "completed 2 of 2 deferred messages of deferring")
    assert _deferred(served) == numbers[2:]

    page.reload()
    page.locator(f"tr[data-seq='{numbers[2]}'] input[name=seq]").check()
    form.locator("select[name=action]").select_option("abandon")
    form.locator("button").click()  # abandoning changes nothing for good: not asked
    assert page.get_by_test_id("job-outcome").inner_text() == (
        "abandoned 1 of 1 deferred messages of deferring")
    assert _deferred(served) == numbers[2:]

    page.reload()
    form.locator("select[name=action]").select_option("dead_letter")
    form.locator("input[name=reason]").fill("Stuck")
    form.locator("button").click()  # none ticked: every deferred message
    assert page.locator(".confirm").inner_text().startswith(
        "Dead-letter (move to the dead-letter queue) the 3 deferred messages of deferring")
    page.locator(".confirm button[type=submit]").click()
    assert page.get_by_test_id("job-outcome").inner_text() == (
        "dead-lettered 3 of 3 deferred messages of deferring")
    assert _deferred(served) == []
    dead = list(served.client.entity("deferring/$DeadLetterQueue").peek_all())
    assert [(m.message_id, m.dead_letter_reason) for m in dead] == [
        ("d2", "Stuck"), ("d3", "Stuck"), ("d4", "Stuck")]
