"""What the explorer shows, in the browser: the namespace with its counts, paging through a
queue of 1,000, a message in full for each body kind, the dead letters with their reason,
and markup shown as text."""

from __future__ import annotations

import re
from typing import Any
from xml.etree import ElementTree

import pytest

from sbmgmt import Message
from sbmgmt.actions.entities import list_entities

from ._seed import dead_letter, send
from .conftest import MARKUP_ENTITY, Served, follow, screenshot

COUNT_COLUMNS = ("active", "dead-letter", "scheduled", "transfer", "transfer-dead-letter")


def _rows(page: Any) -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    for row in page.locator("table.entities tbody tr[data-name]").all():
        name = row.get_attribute("data-name")
        rows[name] = {column: row.locator(f"td.{column}").inner_text().strip()
                      for column in COUNT_COLUMNS}
    return rows


def _count(value: int | None) -> str:
    return "" if value is None else str(value)


def test_the_namespace_lists_every_entity_with_the_administration_apis_counts(
        page: Any, served: Served) -> None:
    send(served.client, "orders", *(Message(body=b"x") for _ in range(5)))
    dead_letter(served.connection_string, "orders", 2, "PaymentDeclined", "card refused")
    page.reload()
    expected = {e.name: {"active": _count(e.active), "dead-letter": _count(e.dead_letter),
                         "scheduled": _count(e.scheduled), "transfer": _count(e.transfer),
                         "transfer-dead-letter": _count(e.transfer_dead_letter)}
                for e in list_entities(served.admin)}
    assert _rows(page) == expected
    assert expected["orders"]["dead-letter"] == "2"
    assert "events/Subscriptions/audit" in expected
    screenshot(page, served, "explorer-namespace.png")


def test_the_counts_refresh_live(page: Any, served: Served) -> None:
    before = int(_rows(page)["actions"]["active"])
    send(served.client, "actions", Message(body=b"live"))
    cell = page.locator("tr[data-name='actions'] td.active")
    cell.filter(has_text=re.compile(rf"^{before + 1}$")).wait_for()


#: Four pages of the largest size (``MAX_PAGE``, 250: the service's most in one peek): the
#: first, the second (back to the first and on again), one more, and the last, full, with
#: no next link. A page is one peek whatever the queue holds, and no earlier page start is
#: dropped from an address before 50 pages (``MAX_TRAIL``): forty pages (10,000 messages,
#: as this test had) went through the same steps ten times as often.
PAGED = 1_000


def test_paging_through_a_queue_of_1000(page: Any, served: Served) -> None:
    numbers = send(served.client, "big", *(Message(body=f"m{n}".encode(), message_id=str(n))
                                           for n in range(PAGED)))
    follow(page, "tr[data-name='big'] a")
    page.fill("input[name=size]", "250")
    follow(page, "form.goto button")
    seen: list[int] = []
    pages = 0
    while True:
        cells = page.locator("table.messages tbody td.n a").all_inner_texts()
        assert cells, "a next link led to no more messages"
        seen += [int(text) for text in cells]
        pages += 1
        if pages == 2:
            follow(page, "a[rel=prev]")
            assert page.locator("table.messages tbody td.n a").first.inner_text() == str(
                numbers[0])
            follow(page, "a[rel=next]")
        if page.locator("a[rel=next]").count() == 0:
            break  # the last page, full, has no next
        follow(page, "a[rel=next]")
    assert seen == numbers
    assert pages == PAGED // 250
    page.goto(f"{page.url.rsplit('&from=', 1)[0]}&from={numbers[-1] + 1}")
    assert "no more messages" in page.locator("table.messages").inner_text()
    page.fill("input[name=from]", str(numbers[-10]))
    follow(page, "form.goto button")
    assert page.locator("table.messages tbody td.n a").all_inner_texts() == [
        str(n) for n in numbers[-10:]]


BODIES = [
    ("json", Message(body=b'{"order":1,"items":["tea"]}', content_type="application/json"),
     '"items": [\n    "tea"\n  ]'),
    ("xml", Message(body=b"<order id='2'><item>bread</item></order>"), "<item>bread</item>"),
    ("text", Message(body="plain text, caf\u00e9".encode()), "plain text, caf\u00e9"),
    ("hex", Message(body=bytes(range(20))),
     "00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f  ................"),
    ("value", Message(body={"a": 1, "b": [True, None]}, body_type="value"), '"a": 1'),
]


@pytest.mark.parametrize(("kind", "message", "shown"), BODIES, ids=[b[0] for b in BODIES])
def test_a_message_in_full_for_each_body_kind(page: Any, served: Served, kind: str,
                                               message: Message, shown: str) -> None:
    typed = message.model_copy(update={
        "message_id": f"kind-{kind}", "subject": "kinds",
        "application_properties": {"region": "eu", "amount": 12.5, "count": 3,
                                   "flag": True}})
    (number,) = send(served.client, "kinds", typed)
    page.goto(f"{served.base_url}/message?path=kinds&seq={number}")
    assert page.get_by_test_id("body-kind").inner_text() == kind
    assert shown in page.get_by_test_id("body").inner_text()
    system = page.get_by_test_id("system-properties").inner_text()
    assert f"message_id\tkind-{kind}\tstring" in system
    assert f"sequence_number\t{number}\tlong" in system
    application = page.get_by_test_id("application-properties").inner_text()
    for line in ("region\teu\tstring", "amount\t12.5\tdouble", "count\t3\tlong",
                 "flag\tTrue\tboolean"):
        assert line in application
    assert "x-opt-enqueued-time" in page.get_by_test_id("annotations").inner_text()
    if kind == "json":
        screenshot(page, served, "explorer-message.png")


def test_a_count_of_one_is_said_in_the_singular(page: Any, served: Served) -> None:
    send(served.client, "orders", Message(body=b"one"), Message(body=b"two"))
    page.goto(f"{served.base_url}/messages?path=orders&size=1")
    assert re.search(r"\b1 message from sequence number \d+",
                     page.locator("main").inner_text())
    page.goto(f"{served.base_url}/messages?path=orders&size=2")
    assert "2 messages from sequence number" in page.locator("main").inner_text()


def test_dead_letters_show_their_reason_and_description(page: Any, served: Served) -> None:
    send(served.client, "orders", Message(body=b"dl", message_id="to-dead-letter"))
    dead_letter(served.connection_string, "orders", 1, "MaxDeliveryCountExceeded",
                "tried <10> times")
    page.goto(f"{served.base_url}/messages?path=orders&queue=deadletter")
    table = page.get_by_test_id("messages")
    assert "dead-letter reason" in table.inner_text()
    row = table.locator("tr", has_text="MaxDeliveryCountExceeded").first
    assert row.locator("td.description").inner_text() == "tried <10> times"
    screenshot(page, served, "explorer-dead-letters.png")
    with page.expect_navigation():
        row.locator("td.n a").click()
    assert "dead_letter_reason\tMaxDeliveryCountExceeded" in page.get_by_test_id(
        "system-properties").inner_text()


MARKUP = "<script>window.pwned = 1</script><b>bold</b><img src=x onerror=\"window.pwned=2\">"


def test_markup_in_a_body_a_property_and_a_name_is_shown_as_text(
        page: Any, served: Served) -> None:
    (number,) = send(served.client, "markup", Message(
        body=MARKUP.encode(), subject=MARKUP, session_id=None,
        application_properties={MARKUP: MARKUP}))
    page.goto(f"{served.base_url}/messages?path=markup")
    assert MARKUP in page.get_by_test_id("messages").inner_text()
    page.goto(f"{served.base_url}/message?path=markup&seq={number}")
    assert page.get_by_test_id("body").inner_text() == MARKUP
    assert f"{MARKUP}\t{MARKUP}\tstring" in page.get_by_test_id(
        "application-properties").inner_text()
    assert f"subject\t{MARKUP}" in page.get_by_test_id("system-properties").inner_text()
    assert page.locator("main b, main img, main script").count() == 0
    assert page.evaluate("window.pwned") is None


def test_markup_in_a_session_id_is_shown_as_text(page: Any, served: Served) -> None:
    send(served.client, "conversations", Message(body=b"hi", session_id=MARKUP))
    page.goto(f"{served.base_url}/sessions?path=conversations")
    link = page.get_by_test_id("sessions").get_by_role("link", name=MARKUP)
    with page.expect_navigation():
        link.click()
    assert page.get_by_test_id("session-id").inner_text() == MARKUP
    assert page.locator("main b, main img, main script").count() == 0
    assert page.evaluate("window.pwned") is None


class _MadeUpListing:
    """An administration client whose listing holds a queue named with markup (its
    generated operations answer the ATOM feed the service would)."""

    def __init__(self) -> None:
        self._impl = self

    def list_entities(self, kind: str, *, skip: int, top: int) -> Any:
        entries = "" if kind == "topics" else (
            "<entry><title>&lt;b&gt;bold&amp;co</title><content><QueueDescription "
            f"xmlns='{_SB}'><MessageCount>1</MessageCount><SizeInBytes>10</SizeInBytes>"
            f"<CountDetails><ActiveMessageCount xmlns='{_SB_COUNT}'>1</ActiveMessageCount>"
            "</CountDetails></QueueDescription></content></entry>")
        return ElementTree.fromstring(f"<feed xmlns='{_ATOM}'>{entries}</feed>")


_ATOM = "http://www.w3.org/2005/Atom"
_SB = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
_SB_COUNT = "http://schemas.microsoft.com/netservices/2011/06/servicebus"


def test_markup_in_an_entity_name_is_shown_as_text(browser: Any, served: Served) -> None:
    from sbmgmt.explorer import Explorer, Namespace

    namespace = Namespace(label="made-up", client=served.client, admin=_MadeUpListing())
    with Explorer(namespace) as explorer:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(explorer.url)
            row = page.locator("table.entities tr", has_text=MARKUP_ENTITY)
            assert row.locator("a").first.inner_text() == MARKUP_ENTITY
            with page.expect_navigation():
                row.locator("a").first.click()
            assert page.get_by_test_id("entity-name").inner_text() == MARKUP_ENTITY
            assert page.locator("main b").count() == 0
        finally:
            context.close()


def test_an_entitys_properties(page: Any, served: Served) -> None:
    with page.expect_navigation():
        page.locator("tr[data-name='events'] a").first.click()
    assert page.get_by_test_id("entity-name").inner_text() == "events"
    assert [t.strip() for t in page.locator("nav.tabs a").all_inner_texts()] == [
        "properties", "edit"]
    topic = page.get_by_test_id("properties").inner_text()
    assert "max_size_in_megabytes" in topic and "created_at_utc" in topic
    page.goto(f"{served.base_url}/entity?path=orders")
    queue = page.get_by_test_id("properties").inner_text()
    assert "max_delivery_count\t10" in queue and "requires_session\tFalse" in queue
    page.goto(f"{served.base_url}/entity?path=events/Subscriptions/audit")
    assert "rules" in page.locator("nav.tabs").inner_text()
    page.get_by_test_id("counts").locator("[data-count=active]").wait_for()


def test_a_missing_entity_is_said_so(page: Any, served: Served) -> None:
    page.goto(f"{served.base_url}/entity?path=nowhere")
    said = page.locator("main .error").first.inner_text()
    assert "nowhere" in said and "Error" not in said  # the user's words, no class name
    response = page.goto(f"{served.base_url}/messages?path=orders&size=9999")
    assert response.status == 400
    assert "the page size is 1 to 250, not 9999" in page.locator("main .error").inner_text()
    page.goto(f"{served.base_url}/messages?path=orders&from=-5")
    assert "the sequence number to start from is 1 or more, not -5" in page.locator(
        "main .error").inner_text()
