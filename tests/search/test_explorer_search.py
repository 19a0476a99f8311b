"""The explorer's search in Chromium, on the embedded fake and on ``python -m fakes`` with the
emulator's connection string (tests/explorer/conftest.py's fixtures): the search box of a
messages page, the rows appearing as they are found (each opens the message view), the
namespace-wide search, and found dead letters ticked, resubmitted and gone."""

from __future__ import annotations

import json
import re
from typing import Any

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from tests.explorer._seed import dead_letter
from tests.explorer.conftest import Served, browser, follow, page, served

__all__ = ["browser", "page", "served"]  # the fixtures, used by name

ORDERS = 40


def _status(page: Any, text: str) -> None:
    page.get_by_test_id("search-status").filter(has_text=re.compile(re.escape(text))).wait_for()


def _found_ids(page: Any) -> list[str]:
    rows = page.get_by_test_id("found").locator("tbody tr[data-seq]")
    return sorted(row.locator("td").nth(3).inner_text() for row in rows.all())


def _send_orders(served: Served, queue: str, failed: set[int]) -> None:
    with ServiceBusClient.from_connection_string(served.connection_string,
                                                 retry_total=0) as sdk, \
            sdk.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(
            json.dumps({"order": {"id": n, "status": "failed" if n in failed else "ok"}}),
            message_id=f"o{n}", content_type="application/json") for n in range(ORDERS)])


def test_the_search_box_finds_as_it_reads_and_opens_the_message(page: Any,
                                                                served: Served) -> None:
    _send_orders(served, "orders", {3, 17, 38})
    follow(page, "tr[data-name='orders'] td.name a")
    box = page.get_by_test_id("search-box")
    box.locator("input[name=body]").fill('"status": "FAILED"')
    follow(page, "[data-testid=search-box] button[type=submit]")
    _status(page, f"found 3 messages, {ORDERS} read")
    assert _found_ids(page) == ["o17", "o3", "o38"]
    row = page.get_by_test_id("found").locator("tr", has_text="o17")
    with page.expect_navigation():
        row.locator("td.seq a").click()
    assert '"status": "failed"' in page.get_by_test_id("body").inner_text()


def test_conditions_that_cannot_be_used_are_said(page: Any, served: Served) -> None:
    page.goto(served.base_url + "/search?path=orders&kind=queue&where=a+%3D%3D+1")
    assert "where: SQL syntax error" in page.content()


def test_the_namespace_search(page: Any, served: Served) -> None:
    _send_orders(served, "big", {5})
    follow(page, "[data-testid=search-all]")
    form = page.get_by_test_id("search-form")
    form.locator("input[name=path_expression]").fill("$.order.id == 5")
    follow(page, "[data-testid=search-form] button[type=submit]")
    _status(page, "found ")
    page.get_by_test_id("search-status").filter(has_text="read").filter(
        has_not_text="searching").wait_for()
    entities = sorted(row.locator("td").first.inner_text() for row in
                      page.get_by_test_id("found").locator("tbody tr[data-seq]").all())
    assert "big" in entities


def test_found_dead_letters_are_ticked_resubmitted_and_gone(page: Any, served: Served) -> None:
    _send_orders(served, "repairs", {1, 2})
    dead_letter(served.connection_string, "repairs", ORDERS, "Poison", "bad order")
    page.goto(served.base_url + "/search?path=repairs&kind=queue&queue=deadletter"
              "&path_expression=%24.order.status+%3D%3D+%27failed%27")
    _status(page, f"found 2 messages, {ORDERS} read")
    for row in page.get_by_test_id("found").locator("tbody tr[data-seq]").all():
        row.locator("input[name=seq]").check()
    page.get_by_test_id("resubmit").locator("button").click()
    confirm = page.locator(".confirm")
    assert confirm.inner_text().startswith(
        "Resubmit the 2 ticked messages of repairs/$DeadLetterQueue: 2 to repairs.")
    confirm.locator("button[type=submit]").click()
    outcome = page.get_by_test_id("job-outcome")
    assert outcome.inner_text() == "resubmitted 2 of 2 messages of repairs/$DeadLetterQueue"
    left = [str(m.message_id) for m in
            served.client.entity("repairs/$DeadLetterQueue").peek_all()]
    back = [str(m.message_id) for m in served.client.entity("repairs").peek_all()]
    assert sorted(back) == ["o1", "o2"]
    assert sorted(left) == sorted(f"o{n}" for n in range(ORDERS) if n not in (1, 2))


def test_found_messages_are_ticked_and_removed_exactly(page: Any, served: Served) -> None:
    with ServiceBusClient.from_connection_string(served.connection_string,
                                                 retry_total=0) as sdk, \
            sdk.get_queue_sender("big") as sender:
        sender.send_messages([ServiceBusMessage(f"order {n}: {'remove' if n in (2, 5) else 'keep'}",
                                                message_id=f"r{n}") for n in range(8)])
    before = [str(m.message_id) for m in served.client.entity("big").peek_all()]
    page.goto(served.base_url + "/search?path=big&kind=queue&body=remove")
    _status(page, "found 2 messages")
    page.get_by_test_id("search-status").filter(has_text="read").filter(
        has_not_text="searching").wait_for()
    for row in page.get_by_test_id("found").locator("tbody tr[data-seq]").all():
        row.locator("input[name=seq]").check()
    page.get_by_test_id("remove").locator("button").click()
    confirm = page.locator(".confirm")
    assert confirm.inner_text().startswith("Remove 2 messages from big (2 active).")
    confirm.locator("button[type=submit]").click()
    outcome = page.get_by_test_id("job-outcome")
    assert outcome.inner_text() == "removed 2 messages from big"
    left = [str(m.message_id) for m in served.client.entity("big").peek_all()]
    assert sorted(left) == sorted(i for i in before if i not in ("r2", "r5"))
