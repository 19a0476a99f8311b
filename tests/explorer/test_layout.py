"""The explorer's pages read at a laptop's size (1,280 x 800) and a phone's (390 x 844),
in Chromium: no page is wider than the window, the values a person reads as one thing
(sequence numbers, counts, states, ids, times, headers) are never broken across lines,
and the dead-letter page of a phone is a list of cards, not a table of letters.

Each page is screenshotted at both sizes: into ``LAYOUT_SCREENSHOTS`` when it names a
folder (to look at them), else the test's temporary folder; the phone's dead-letter page
into ``EXPLORER_SCREENSHOTS`` for docs/explorer.md (scripts/explorer_screenshots.sh). The
embedded fake only: the layout does not depend on who serves the namespace.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sbmgmt import Message

from ._seed import dead_letter, send, settle_received
from .conftest import Served

pytestmark = pytest.mark.parametrize("served", ["fake"], indirect=True)

SIZES = {"laptop": (1280, 800), "phone": (390, 844)}
QUEUE = "layout"
#: The cells whose text must stay on one line: numbers, ids, states, times, names.
KEY_CELLS = ("td.n, td.id, td.state, td.time, td.word, dl.counts dt, dl.counts dd, "
             "table.fields tbody th, table.properties tbody th")
#: The cells that may wrap between their words, never inside one.
WORD_CELLS = "thead th"
#: The text of each cell (``whole``: all of it; else each word) that is laid out on more
#: than one line: a range's client rects, one per line box it is on, told apart by their
#: tops. A cell hidden at this size has none.
_BROKEN = """([selector, whole]) => {
  const broken = [];
  const lines = (node, start, end) => {
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, end);
    return new Set([...range.getClientRects()].filter(r => r.width > 0)
                       .map(r => Math.round(r.top))).size;
  };
  for (const cell of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent;
      if (whole) {
        if (text.trim() && lines(node, 0, text.length) > 1) {
          broken.push(`${cell.className}: ${text}`);
        }
        continue;
      }
      for (const word of text.matchAll(/\\S+/g)) {
        if (lines(node, word.index, word.index + word[0].length) > 1) {
          broken.push(`${cell.className}: ${word[0]}`);
        }
      }
    }
  }
  return broken;
}"""
_WIDTHS = "() => [document.scrollingElement.scrollWidth, window.innerWidth]"
_HEIGHT = "() => document.scrollingElement.scrollHeight"


@pytest.fixture(scope="module")
def seeded(served: Served) -> Served:
    """A queue of every state with UUID message ids, content types and long dead-letter
    descriptions; 50 dead letters (a full page); session messages with long session ids."""
    assert served.fake is not None
    served.fake.add_queue(QUEUE)
    send(served.client, QUEUE, *(
        Message(body=b'{"order": %d, "items": ["tea"]}' % n, message_id=str(uuid.uuid4()),
                session_id=None, subject="order-created", content_type="application/json",
                application_properties={"region": "eu-west", "amount": n})
        for n in range(60)))
    dead_letter(served.connection_string, QUEUE, 50, "MaxDeliveryCountExceeded",
                "The message could not be delivered after 10 attempts: the handler threw "
                "System.InvalidOperationException: the order's customer was not found in "
                "the database (customer id 4b9e0c2a-5f1d-4e8b-9a61-0c7d2e3f4a5b)")
    settle_received(served.connection_string, QUEUE, 3,
                    lambda receiver, message: receiver.defer_message(message))
    send(served.client, "conversations", *(
        Message(body=f"turn {n}".encode(), message_id=str(uuid.uuid4()),
                session_id=f"customer-{n % 3}-{uuid.uuid4()}") for n in range(6)))
    return served


def _pages(served: Served) -> dict[str, str]:
    dead = served.client.entity(f"{QUEUE}/$DeadLetterQueue").peek_messages(1, 1)[0]
    q = f"path={QUEUE}&kind=queue"
    return {
        "namespace": "/",
        "messages": f"/messages?{q}",
        "dead-letters": f"/messages?{q}&queue=deadletter",
        "message": f"/message?{q}&queue=deadletter&seq={dead.sequence_number}",
        "deferred": f"/deferred?{q}",
        "properties": f"/entity?{q}",
        "sessions": "/sessions?path=conversations&kind=queue",
        "session-messages": "/messages?path=conversations&kind=queue",
        "rules": "/rules?path=events/Subscriptions/audit&kind=subscription",
    }


@pytest.fixture(params=list(SIZES))
def sized(request: pytest.FixtureRequest, browser: Any, seeded: Served,
          tmp_path: Path) -> Iterator[tuple[str, Any, Path]]:
    """A browser page of the given size, on the explorer (its token cookie set)."""
    width, height = SIZES[request.param]
    phone = request.param == "phone"
    context = browser.new_context(viewport={"width": width, "height": height},
                                  is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(seeded.url)
    folder = Path(os.environ.get("LAYOUT_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    yield request.param, page, folder
    context.close()


def test_every_page_fits_the_window_and_keeps_its_key_values_whole(
        sized: tuple[str, Any, Path], seeded: Served) -> None:
    size, page, folder = sized
    faults: list[str] = []
    for name, address in _pages(seeded).items():
        page.goto(seeded.base_url + address)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(folder / f"{name}-{size}.png"), full_page=True)
        docs = os.environ.get("EXPLORER_SCREENSHOTS")
        if docs and name == "dead-letters" and size == "phone":  # docs/explorer.md's
            page.screenshot(path=str(Path(docs) / "explorer-phone.png"))
        scroll_width, window_width = page.evaluate(_WIDTHS)
        if scroll_width > window_width:
            faults.append(f"{name}: {scroll_width} px wide in a {window_width} px window")
        for selector, whole in ((KEY_CELLS, True), (WORD_CELLS, False)):
            faults += [f"{name}: {cut}" for cut in page.evaluate(_BROKEN, [selector, whole])]
    assert faults == [], "\n".join(faults)


def test_the_dead_letter_page_is_short_enough_to_scroll_on_a_phone(
        sized: tuple[str, Any, Path], seeded: Served) -> None:
    size, page, _folder = sized
    page.goto(f"{seeded.base_url}/messages?path={QUEUE}&kind=queue&queue=deadletter")
    rows = page.locator("table.messages tbody tr[data-seq]")
    assert rows.count() == 50
    # Each message's key values are on the page at both sizes (as a row or as a card).
    first = rows.first
    for cell in ("td.seq", "td.id", "td.time", "td.reason"):
        assert first.locator(cell).is_visible(), cell
    height = page.evaluate(_HEIGHT)
    # 50 messages: a row of a few lines each at 1,280 px; a card of at most 4 lines at
    # 390 px (it was 15,390 px with every column squeezed into the phone's width).
    assert height < (5_000 if size == "laptop" else 7_000), height
