"""Nothing lost by mistake in the explorer (issue 56), in Chromium: a mistyped target is a
red error and nothing is asked or locked; a target with duplicate detection is named in
the question, which offers what to do with the copies it would drop (a new MessageId keeps
every message; leaving them keeps them where they were); an import into such a target asks
the same. Messages are counted by MessageId and body."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sbmgmt import Message
from sbmgmt.actions.export import write_messages

from ._seed import dead_letter, send
from .conftest import Served

COUNT = 3


def _where(served: Served, *paths: str) -> dict[str, Counter[tuple[str, bytes]]]:
    found: dict[str, Counter[tuple[str, bytes]]] = {}
    for path in paths:
        messages = list(served.client.entity(path).peek_all())
        if messages:
            found[path] = Counter((str(m.message_id), m.body_bytes()) for m in messages)
    return found


def _queue(served: Served, name: str, *, duplicates: bool = False) -> None:
    """A fresh queue for one test (through the administration API, as a user makes one)."""
    existing = {queue.name for queue in served.admin.list_queues()}
    if name in existing:
        served.admin.delete_queue(name)
    if duplicates:
        served.admin.create_queue(name, requires_duplicate_detection=True,
                                  duplicate_detection_history_time_window=timedelta(minutes=5))
    else:
        served.admin.create_queue(name)


def _dead_letters(served: Served, queue: str) -> Counter[tuple[str, bytes]]:
    send(served.client, queue, *(Message(body=f"{queue} {n}".encode(), message_id=f"{queue}-{n}")
                                 for n in range(COUNT)))
    dead_letter(served.connection_string, queue, COUNT, "Poison", "bad")
    return Counter((f"{queue}-{n}", f"{queue} {n}".encode()) for n in range(COUNT))


def test_a_mistyped_target_is_a_red_error_and_nothing_is_locked(page: Any,
                                                                served: Served) -> None:
    _queue(served, "typo-source")
    sent = _dead_letters(served, "typo-source")
    dead = "typo-source/$DeadLetterQueue"
    before = [m.delivery_count for m in served.client.entity(dead).peek_all()]
    page.goto(f"{served.base_url}/messages?path=typo-source&queue=deadletter")
    move = page.get_by_test_id("move")
    move.locator("input[name=target]").fill("typo-archiv")
    move.locator("button").click()
    error = page.locator(".outcome .error", has_text="typo-archiv")
    error.wait_for()
    assert "does not exist" in error.inner_text()
    assert page.locator(".confirm").count() == 0  # nothing asked
    assert _where(served, dead) == {dead: sent}
    assert [m.delivery_count for m in served.client.entity(dead).peek_all()] == before


@pytest.mark.parametrize("choice", ["new-id", "leave"])
def test_duplicate_detection_is_named_in_the_question_and_nothing_is_lost(
        page: Any, served: Served, choice: str) -> None:
    queue = f"dd-{choice}"
    _queue(served, queue, duplicates=True)
    sent = _dead_letters(served, queue)
    dead = f"{queue}/$DeadLetterQueue"
    page.goto(f"{served.base_url}/messages?path={queue}&queue=deadletter")
    page.get_by_test_id("resubmit").locator("button").click()
    confirm = page.locator(".confirm")
    text = confirm.inner_text()
    assert f"The target detects duplicates: it would drop {COUNT} copies" in text
    assert f"{queue}-0" in text
    assert confirm.locator("button", has_text="Yes, do it").count() == 0
    confirm.locator(f"button[value='{choice}']").click()
    outcome = page.get_by_test_id("job-outcome")
    outcome.wait_for()
    if choice == "new-id":
        assert re.search(r"resubmitted 3 of 3 messages", outcome.inner_text())
        copies = list(served.client.entity(queue).peek_all())
        assert Counter((m.application_properties["OriginalMessageId"], m.body_bytes())
                       for m in copies) == sent
        assert _where(served, dead) == {}
    else:
        assert "left 3 in" in outcome.inner_text()
        assert _where(served, queue, dead) == {dead: sent}


def test_an_import_into_duplicate_detection_asks_what_to_do(page: Any, served: Served,
                                                            tmp_path: Path) -> None:
    _queue(served, "dd-import", duplicates=True)
    file = tmp_path / "upload.jsonl"
    with file.open("w", encoding="utf-8") as out:
        write_messages([Message(body=f"i{n}".encode(), message_id=f"i{n}")
                        for n in range(COUNT)], out)
    page.goto(f"{served.base_url}/messages?path=dd-import")
    form = page.get_by_test_id("import")
    form.locator("input[type=file]").set_input_files(str(file))
    form.locator("button").click()
    confirm = page.locator(".confirm")
    assert "dd-import detects duplicates" in confirm.inner_text()
    confirm.locator("button[value='new-id']").click()
    page.get_by_test_id("job-outcome").wait_for()
    copies = list(served.client.entity("dd-import").peek_all())
    assert Counter((m.application_properties["OriginalMessageId"], m.body_bytes())
                   for m in copies) == Counter((f"i{n}", f"i{n}".encode())
                                               for n in range(COUNT))
