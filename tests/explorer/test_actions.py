"""What the explorer changes, in the browser, each through the library: a rule added (its
SQL checked first) and removed after a confirmation, a session's state edited and cleared,
a test message sent, a message scheduled and its schedule cancelled."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sbmgmt import Message

from ._seed import send
from .conftest import Served, screenshot

SUBSCRIPTION = "events/Subscriptions/billing"


def _rule_names(served: Served) -> list[str]:
    return [rule.name for rule in served.client.entity(SUBSCRIPTION).list_rules()]


def test_a_rule_is_added_and_removed(page: Any, served: Served) -> None:
    page.goto(f"{served.base_url}/rules?path={SUBSCRIPTION}")
    form = page.locator("form[hx-post='/rules/add']")
    form.locator("input[name=name]").fill("big")
    form.locator("input[name=sql]").fill("amount >>> 100")
    form.locator("button").click()
    refused = page.locator(".outcome .error")
    assert "not sent" in refused.inner_text()
    assert "big" not in _rule_names(served)
    form.locator("input[name=sql]").fill("amount > 100 AND region = 'eu'")
    form.locator("input[name=action]").fill("SET tier = 'A'")
    form.locator("button").click()
    page.locator(".outcome .notice", has_text="added the rule big").wait_for()
    row = page.locator("tr[data-rule='big']")
    row.wait_for()
    assert "amount > 100 AND region = 'eu'" in row.inner_text()
    assert "big" in _rule_names(served)
    screenshot(page, served, "explorer-rules.png")
    row.locator("button").click()
    confirm = row.locator(".confirm")
    assert "Remove the rule big of events/Subscriptions/billing" in confirm.inner_text()
    assert "big" in _rule_names(served)
    confirm.locator("button[type=submit]").click()
    page.locator("tr[data-rule='big']").wait_for(state="detached")
    assert "big" not in _rule_names(served)


def test_a_confirmation_can_be_cancelled(page: Any, served: Served) -> None:
    served.client.entity(SUBSCRIPTION).add_rule("keep", _sql("color = 'red'"))
    page.goto(f"{served.base_url}/rules?path={SUBSCRIPTION}")
    row = page.locator("tr[data-rule='keep']")
    row.locator("button").click()
    row.locator(".confirm button[type=button]").click()
    row.locator(".confirm").wait_for(state="detached")
    assert "keep" in _rule_names(served)


def _sql(expression: str) -> Any:
    from sbmgmt import SqlFilter

    return SqlFilter(expression=expression)


def test_a_sessions_state_is_edited_and_cleared(page: Any, served: Served) -> None:
    send(served.client, "conversations", Message(body=b"hi", session_id="user-42"))
    page.goto(f"{served.base_url}/sessions?path=conversations")
    with page.expect_navigation():
        page.get_by_role("link", name="user-42").click()
    assert page.get_by_test_id("state").inner_text() == "no state"
    page.fill("textarea[name=state]", '{"step": 3, "note": "<i>x</i>"}')
    page.click("form[hx-post='/session/state'] button")
    page.locator(".outcome .notice", has_text="set the state of session user-42").wait_for()
    page.get_by_test_id("state").filter(has_text='"step": 3').wait_for()
    assert page.get_by_test_id("state").inner_text() == '{"step": 3, "note": "<i>x</i>"}'
    with served.client.entity("conversations").session("user-42") as held:
        assert held.get_state() == b'{"step": 3, "note": "<i>x</i>"}'
    screenshot(page, served, "explorer-session.png")
    page.click("form[hx-post='/session/clear'] button")
    page.locator(".confirm button[type=submit]").click()
    page.get_by_test_id("state").filter(has_text="no state").wait_for()
    with served.client.entity("conversations").session("user-42") as held:
        assert held.get_state() is None


def test_a_test_message_is_sent(page: Any, served: Served) -> None:
    page.goto(f"{served.base_url}/messages?path=actions")
    page.click("summary:has-text('Send a test message')")
    form = page.locator("form[hx-post='/send']")
    form.locator("textarea[name=body]").fill('{"hello": "world"}')
    form.locator("input[name=content_type]").fill("application/json")
    form.locator("textarea[name=properties]").fill("region=eu\nsource=explorer")
    form.locator("button").click()
    notice = page.locator(".outcome .notice", has_text="sent message")
    message_id = notice.inner_text().split()[2]
    assert notice.inner_text() == f"sent message {message_id} to actions"
    (peeked,) = [m for m in served.client.entity("actions").peek_all()
                 if m.message_id == message_id]
    assert (peeked.body_bytes(), peeked.content_type, peeked.application_properties) == (
        b'{"hello": "world"}', "application/json", {"region": "eu", "source": "explorer"})


def test_a_message_is_scheduled_and_cancelled(page: Any, served: Served) -> None:
    page.goto(f"{served.base_url}/messages?path=actions")
    page.click("summary:has-text('Schedule a message')")
    form = page.locator("form[hx-post='/schedule']")
    form.locator("textarea[name=body]").fill("later")
    form.locator("input[name=at]").fill("+60")
    form.locator("button").click()
    notice = page.locator(".outcome .notice", has_text="scheduled message")
    number = int(notice.inner_text().rsplit(" ", 1)[1])
    page.goto(f"{served.base_url}/messages?path=actions&state=scheduled")
    assert str(number) in page.get_by_test_id("messages").locator("td.n a").all_inner_texts()
    page.goto(f"{served.base_url}/message?path=actions&seq={number}")
    page.click("form[hx-post='/cancel'] button")
    assert "it will never be enqueued" in page.locator(".confirm").inner_text()
    page.locator(".confirm button[type=submit]").click()
    page.locator(".outcome .notice", has_text=f"cancelled the scheduled message {number}"
                 ).wait_for()
    assert [m.sequence_number for m in served.client.entity("actions").peek_messages(
        number, 1) if m.sequence_number == number] == []


def test_a_form_with_a_bad_value_says_so_and_sends_nothing(page: Any, served: Served) -> None:
    before = served.client.entity("actions").peek_messages(1, 250)
    page.goto(f"{served.base_url}/messages?path=actions")
    page.click("summary:has-text('Send a test message')")
    form = page.locator("form[hx-post='/send']")
    form.locator("textarea[name=body]").fill("x")
    form.locator("textarea[name=properties]").fill("no equals sign")
    form.locator("button").click()
    refused = page.locator(".outcome .error", has_text="not sent")
    assert "an application property is key=value" in refused.inner_text()
    page.click("summary:has-text('Schedule a message')")
    schedule = page.locator("form[hx-post='/schedule']")
    schedule.locator("input[name=at]").fill("next tuesday")
    schedule.locator("button").click()
    page.locator(".outcome .error", has_text="an ISO 8601 time or +MINUTES").wait_for()
    assert served.client.entity("actions").peek_messages(1, 250) == before


def test_a_purge_says_what_it_will_delete_asks_and_deletes_it(page: Any,
                                                              served: Served) -> None:
    numbers = send(served.client, "purged", *(Message(body=f"p{n}".encode())
                                              for n in range(600)))
    page.goto(f"{served.base_url}/messages?path=purged&size=10")
    page.click("[data-testid=queue-actions] button")
    confirm = page.locator(".confirm")
    assert "Delete the 600 messages of purged enqueued before" in confirm.inner_text()
    screenshot(page, served, "explorer-purge.png")
    send(served.client, "purged", Message(body=b"after the count", message_id="stays"))
    assert len(served.client.entity("purged").peek_messages(1, 250)) == 250  # nothing yet
    confirm.locator("button[type=submit]").click()
    outcome = page.get_by_test_id("job-outcome")
    assert outcome.inner_text() == "deleted 600 messages of purged"
    left = served.client.entity("purged").peek_messages(1, 250)
    assert [m.message_id for m in left] == ["stays"]
    assert left[0].sequence_number > numbers[-1]


@pytest.mark.parametrize("served", ["fake"], indirect=True)
@pytest.mark.usefixtures("held_until_cancelled")
def test_a_purge_can_be_cancelled_and_counts_what_it_did(page: Any, served: Served) -> None:
    """Held after its first count until Cancel (``held_until_cancelled``), so that Cancel
    comes mid-way whatever the machine's speed (it was slowed by the fake's fault
    injector, 0.2 s a reply, and raced the purge)."""
    assert served.fake is not None
    send(served.client, "purged-slowly", *(Message(body=b"x") for _ in range(3000)))
    page.goto(f"{served.base_url}/messages?path=purged-slowly")
    page.click("[data-testid=queue-actions] button")
    page.locator(".confirm button[type=submit]").click()
    job = page.get_by_test_id("job")
    job.get_by_test_id("job-done").filter(has_text=re.compile(r"^[1-9]")).wait_for()
    job.locator("button", has_text="Cancel").click()
    outcome = page.get_by_test_id("job-outcome").inner_text()
    assert outcome.startswith("deleted ") and outcome.endswith(
        "of purged-slowly: cancelled, nothing sent after it")
    deleted = int(outcome.split()[1])
    left = 0
    start = 1
    while batch := served.client.entity("purged-slowly").peek_messages(start, 250):
        left += len(batch)
        start = (batch[-1].sequence_number or 0) + 1
    assert deleted + left == 3000
