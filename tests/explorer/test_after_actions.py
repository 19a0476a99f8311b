"""After an action the list shows what is there now, and while it works the page says so,
in Chromium: resubmit, move, purge and a settlement of deferred messages each re-read the
list when their job ends (the rows gone, nothing left ticked, without a reload); a purge's
count shows its indicator, its button disabled, from the click to the question (the
answer held back by the browser until the test has seen them). The embedded fake only."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from sbmgmt import Message

from ._seed import dead_letter, send, settle_received
from .conftest import Served

pytestmark = pytest.mark.parametrize("served", ["fake"], indirect=True)


def _queue(served: Served, count: int, *, dead: int = 0) -> str:
    """A new queue of ``count`` messages, the first ``dead`` of them dead-lettered."""
    assert served.fake is not None
    name = f"after-{uuid.uuid4().hex[:8]}"
    served.fake.add_queue(name)
    send(served.client, name, *(Message(body=f"m{n}".encode(), message_id=f"m{n}")
                                for n in range(count)))
    if dead:
        dead_letter(served.connection_string, name, dead, "Broken", "for the test")
    return name


def _shown(page: Any) -> list[int]:
    return [int(n) for n in page.locator("table.messages tbody tr[data-seq]")
            .evaluate_all("rows => rows.map(r => r.dataset.seq)")]


def _ticked(page: Any) -> int:
    return page.locator("input[name=seq]:checked").count()


def _wait_for_rows(page: Any, expected: list[int]) -> None:
    """The list, re-read after the job's end, holds ``expected`` (no reload by the test)."""
    wanted = ",".join(map(str, expected))
    page.wait_for_function(
        """(wanted) => [...document.querySelectorAll('table.messages tbody tr[data-seq]')]
                         .map(r => r.dataset.seq).join(',') === wanted""", arg=wanted)


def _confirm_and_finish(section: Any) -> str:
    """Say yes to the section's question; what its job did."""
    section.locator(".confirm button[type=submit]").click()
    outcome: str = section.get_by_test_id("job-outcome").inner_text()
    return outcome


def test_a_resubmit_takes_its_rows_off_the_dead_letter_list(page: Any,
                                                            served: Served) -> None:
    name = _queue(served, 3, dead=3)
    page.goto(f"{served.base_url}/messages?path={name}&kind=queue&queue=deadletter")
    numbers = _shown(page)
    assert len(numbers) == 3
    page.locator(f"tr[data-seq='{numbers[1]}'] input[name=seq]").check()
    actions = page.get_by_test_id("repair-actions")
    page.get_by_test_id("resubmit").locator("button").click()
    assert _confirm_and_finish(actions).startswith("resubmitted 1 of 1 message")
    assert f"to {name}" in actions.get_by_test_id("job").inner_text()
    _wait_for_rows(page, [numbers[0], numbers[2]])
    assert _ticked(page) == 0
    page.get_by_test_id("resubmit").locator("button").click()  # none ticked: all of them
    assert "nothing to resubmit" not in actions.locator(".confirm").inner_text()
    assert _confirm_and_finish(actions).startswith("resubmitted 2 of 2 messages")
    _wait_for_rows(page, [])
    assert "no messages" in page.get_by_test_id("messages").inner_text()


def test_a_move_and_a_purge_leave_the_list_as_the_queue_is(page: Any, served: Served) -> None:
    name, target = _queue(served, 4), _queue(served, 0)
    page.goto(f"{served.base_url}/messages?path={name}&kind=queue")
    numbers = _shown(page)
    for number in numbers[:2]:
        page.locator(f"tr[data-seq='{number}'] input[name=seq]").check()
    move = page.get_by_test_id("move")
    move.locator("input[name=target]").fill(target)
    move.locator("button").click()
    repair = page.get_by_test_id("repair-actions")
    assert _confirm_and_finish(repair).startswith("moved 2 of 2 messages")
    # the job says where they went (its title), as well as what it did
    assert f"move 2 messages of {name} to {target}" in repair.get_by_test_id("job").inner_text()
    _wait_for_rows(page, numbers[2:])
    assert _ticked(page) == 0
    purge = page.get_by_test_id("queue-actions")
    purge.locator("form[hx-post='/purge'] button").click()
    assert _confirm_and_finish(purge) == f"deleted 2 messages of {name}"
    _wait_for_rows(page, [])


def test_a_settlement_takes_its_rows_off_the_deferred_list(page: Any, served: Served) -> None:
    name = _queue(served, 3)
    numbers = settle_received(served.connection_string, name, 3,
                              lambda receiver, message: receiver.defer_message(message))
    page.goto(f"{served.base_url}/deferred?path={name}&kind=queue")
    assert _shown(page) == numbers
    page.locator(f"tr[data-seq='{numbers[0]}'] input[name=seq]").check()
    form = page.get_by_test_id("settle")
    form.locator("select[name=action]").select_option("complete")
    form.locator("button").click()
    assert _confirm_and_finish(page.get_by_test_id("deferred-actions")).startswith(
        "completed 1 of 1")
    _wait_for_rows(page, numbers[1:])
    assert _ticked(page) == 0


def test_a_purge_shows_it_is_counting_from_the_click(page: Any, served: Served) -> None:
    assert served.fake is not None
    name = _queue(served, 1000)
    page.goto(f"{served.base_url}/messages?path={name}&kind=queue&size=10")
    form = page.locator("form[hx-post='/purge']").first  # (the question's form posts too)
    button, working = form.locator("button"), page.get_by_test_id("working")
    assert working.is_hidden() and button.is_enabled()
    held: list[Any] = []
    page.route("**/purge", lambda route: held.append(route))
    button.click()
    working.wait_for(state="visible", timeout=5_000)
    assert button.is_disabled()
    assert len(held) == 1  # the count not yet answered: the page still says it is counting
    held[0].continue_()
    page.locator(".confirm").wait_for()
    asked = page.locator(".confirm").inner_text()
    assert re.search(r"Delete the 1000 messages of after-\w+ enqueued before "
                     r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\. ", asked), asked
    assert working.is_hidden() and button.is_enabled()


def test_the_questions_yes_shows_it_is_starting_until_the_answer(page: Any,
                                                                 served: Served) -> None:
    """The question's "Yes, do it" disables the question's buttons and shows its indicator
    from the click until the server answers (the answer held back by the browser here)."""
    name = _queue(served, 3)
    page.goto(f"{served.base_url}/messages?path={name}&kind=queue&size=10")
    page.locator("form[hx-post='/purge']").first.locator("button").click()
    question = page.locator(".confirm")
    question.wait_for()
    held: list[Any] = []
    page.route("**/purge", lambda route: held.append(route))
    yes, starting = question.locator("button[type=submit]"), page.get_by_test_id("confirming")
    assert starting.is_hidden() and yes.is_enabled()
    yes.click()
    starting.wait_for(state="visible", timeout=5_000)
    assert yes.is_disabled() and question.locator("button[type=button]").is_disabled()
    assert len(held) == 1  # the answer not yet given: the page still says it is starting
    held[0].continue_()
    page.get_by_test_id("job-outcome").wait_for()
    assert served.client.entity(name).peek_messages(max_count=10) == []
