"""The explorer's charts in Chromium, against the embedded fake with traffic from the
official Python SDK (issue 63).

The explorer samples every 0.2 s (``Explorer(sample_seconds=0.2)``). A test waits for the
sampler rather than for the clock: after a step of traffic it waits for two new samples
(the first may have started before the step; the second started after it), then reads
the step's count through the official administration client. What the page draws is read
from the chart's SVG as text: each path's ``data-values`` and ``data-times``, and its
points, mapped back through the scale the page prints.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusReceiver

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.entities import admin_client
from sbmgmt.actions.watch import Sampler
from tests._waiting import wait_until

#: The chart's drawing box (``_charts.py``'s viewBox).
HEIGHT = 160.0
STEP = 5  # messages a step of the fill and the drain


@dataclass
class Charted:
    fake: FakeNamespace
    sampler: Sampler
    url: str
    base_url: str
    admin: Any
    sdk: ServiceBusClient


@pytest.fixture(scope="module")
def charted() -> Iterator[Charted]:
    from sbmgmt.explorer import Explorer, Namespace

    with FakeNamespace(http_port=0) as fake:
        for name in ("filling", "steady", "calm", "failing"):
            fake.add_queue(name)
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=20) as client, \
                admin_client(connection_string=fake.connection_string,
                             http_port=fake.http_port, timeout=20) as admin, \
                ServiceBusClient.from_connection_string(fake.connection_string) as sdk:
            namespace = Namespace(label="127.0.0.1", client=client, admin=admin,
                                  secrets=("SAS_KEY_VALUE",))
            with Explorer(namespace, refresh_seconds=1.0, sample_seconds=0.2) as explorer:
                yield Charted(fake, explorer.sampler, explorer.url, explorer.base_url, admin,
                              sdk)


def settled(sampler: Sampler) -> None:
    """Wait for two new samples: the second started after whatever came before."""
    for _ in range(2):
        assert wait_until(_newer(sampler, sampler.history.latest))


def _newer(sampler: Sampler, before: object) -> Callable[[], bool]:
    return lambda: sampler.history.latest is not before


def active(charted: Charted, queue: str) -> int:
    count: int = charted.admin.get_queue_runtime_properties(queue).active_message_count
    return count


def send(charted: Charted, queue: str, count: int) -> None:
    with charted.sdk.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(f"{queue} {i}") for i in range(count)])


def received(receiver: ServiceBusReceiver, count: int) -> list[Any]:
    got: list[Any] = []
    while len(got) < count:
        got += receiver.receive_messages(max_message_count=count - len(got), max_wait_time=5)
    return got


def opened(browser: Any, charted: Charted, path: str, width: int = 1280,
           height: int = 900) -> Any:
    """A page on ``path`` of the explorer (the token first, which becomes the cookie)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(charted.url)
    page.goto(charted.base_url + path)
    return page


def series(page: Any, chart: str, name: str) -> tuple[list[float | None], list[float], str]:
    """A chart's series as the page has it: values, times and the SVG path."""
    path = page.locator(f'[data-title="{chart}"] path[data-series="{name}"]')
    values = [None if v == "-" else float(v)
              for v in path.get_attribute("data-values").split()]
    times = [float(t) for t in path.get_attribute("data-times").split()]
    return values, times, path.get_attribute("d")


def runs(values: list[float | None]) -> list[float | None]:
    """The values without repeats: the levels the count went through."""
    return [value for value, _ in itertools.groupby(values)]


def screenshot(page: Any, name: str) -> None:
    """Save a screenshot for docs/explorer.md when ``EXPLORER_SCREENSHOTS`` names a folder."""
    folder = os.environ.get("EXPLORER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def test_a_queue_filling_then_draining_is_drawn_rising_then_falling_at_the_api_s_counts(
        browser: Any, charted: Charted) -> None:
    settled(charted.sampler)
    levels = [active(charted, "filling")]
    for _ in range(4):
        send(charted, "filling", STEP)
        settled(charted.sampler)
        levels.append(active(charted, "filling"))
    with charted.sdk.get_queue_receiver("filling") as receiver:
        for _ in range(4):
            for message in received(receiver, STEP):
                receiver.complete_message(message)
            settled(charted.sampler)
            levels.append(active(charted, "filling"))
    assert levels == [0, 5, 10, 15, 20, 15, 10, 5, 0]

    page = opened(browser, charted, "/charts/entity?path=filling&kind=queue")
    values, times, d = series(page, "Messages", "active")
    assert None not in values  # a queue's active count is in every sample
    drawn = [float(v or 0) for v in runs(values)]
    peak = drawn.index(max(drawn))
    assert drawn[:peak + 1] == sorted(drawn[:peak + 1])  # rising
    assert drawn[peak:] == sorted(drawn[peak:], reverse=True)  # then falling
    assert drawn[peak] == 20 and drawn[0] == 0 and drawn[-1] == 0
    it = iter(drawn)
    assert all(level in it for level in levels)  # every count the API read, in order
    assert times == sorted(times) and len(times) == len(values) >= len(levels)

    # The path's points are the values, through the scale the page prints.
    top = float(page.locator('[data-title="Messages"] [data-testid="top"]').inner_text())
    assert top == 20
    points = [tuple(map(float, p)) for p in re.findall(r"[ML](-?[\d.]+),(-?[\d.]+)", d)]
    assert [y for _, y in points] == [round(HEIGHT - v / top * HEIGHT, 1)
                                      for v in values if v is not None]
    assert [x for x, _ in points] == sorted(x for x, _ in points)
    assert page.locator('[data-latest="active"]').inner_text() == "0"
    page.context.close()


def test_rates_are_the_messages_sent_per_second_between_samples(
        browser: Any, charted: Charted) -> None:
    sent = 0
    for batch in (3, 6, 0, 9, 3):
        settled(charted.sampler)
        if batch:
            send(charted, "steady", batch)
        sent += batch
    settled(charted.sampler)
    assert active(charted, "steady") == sent

    page = opened(browser, charted, "/charts/entity?path=steady&kind=queue")
    counts, count_times, _ = series(page, "Messages", "active")
    incoming, rate_times, _ = series(page, "In and out", "in")
    outgoing, _, _ = series(page, "In and out", "out")
    assert rate_times == count_times[1:]
    moved = 0.0
    for i, rate in enumerate(incoming):
        seconds = count_times[i + 1] - count_times[i]
        change = (counts[i + 1] or 0) - (counts[i] or 0)
        assert rate is not None
        # The rate is the count's change over the sample's interval, to the resolution the
        # page shows (rates to 2 decimals, times to the millisecond at both ends).
        assert rate * seconds == pytest.approx(change, abs=0.005 * seconds + rate * 0.0021)
        moved += rate * seconds
    assert moved == pytest.approx(sent, abs=0.1)
    assert set(outgoing) == {0}  # nothing received
    page.context.close()


def test_a_growing_dead_letter_queue_is_listed_first_among_the_movers_with_sparklines(
        browser: Any, charted: Charted) -> None:
    send(charted, "calm", 1)
    send(charted, "failing", 6)
    with charted.sdk.get_queue_receiver("calm") as receiver:
        for message in received(receiver, 1):
            receiver.dead_letter_message(message, reason="one bad")
    with charted.sdk.get_queue_receiver("failing") as receiver:
        for _ in range(3):
            for message in received(receiver, 2):
                receiver.dead_letter_message(message, reason="poison")
            settled(charted.sampler)
    assert charted.admin.get_queue_runtime_properties("failing").dead_letter_message_count == 6

    page = opened(browser, charted, "/")
    rows = page.locator('[data-testid="dead-letter-movers"] tbody tr')
    rows.first.wait_for()
    assert rows.nth(0).get_attribute("data-mover") == "failing"
    assert rows.nth(0).locator("td.change").inner_text() == "+6"
    assert rows.nth(1).get_attribute("data-mover") == "calm"
    # Every entity of the list has its sparkline, linked to its charts.
    for name in ("filling", "steady", "calm", "failing"):
        row = page.locator(f'table.entities tr[data-name="{name}"]')
        assert row.locator("td.spark svg.spark path.active").count() == 1
        assert row.locator("td.spark a").get_attribute("href") == (
            f"/charts/entity?path={name}&kind=queue")
    assert page.locator('tr[data-name="failing"] svg.spark path.dead-letter').count() == 1
    screenshot(page, "explorer-namespace-movers.png")
    page.context.close()


#: What reaches past the window's right edge (for the failure's message).
OVER = """width => [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > width)
    .map(e => e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right)
    .slice(0, 8)"""


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_charts_fit_a_laptop_and_a_phone(browser: Any, charted: Charted, width: int,
                                             height: int) -> None:
    for path, name in (("/charts/entity?path=filling&kind=queue", "explorer-charts"),
                       ("/charts", "explorer-charts-namespace"), ("/", None)):
        page = opened(browser, charted, path, width, height)
        page.locator('[data-testid="dead-letter-movers"], [data-testid="chart"]').first.wait_for()
        if path == "/":
            page.locator('[data-testid="entities"]').wait_for()
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, (path, wide, page.evaluate(OVER, width))
        for chart in page.locator('[data-testid="chart"] svg').all():
            box = chart.bounding_box()
            # As wide as the window leaves (two side by side on a laptop, one on a phone).
            assert box is not None and box["width"] >= min(width - 60, 480), (path, box)
        if name and (width == 1280 or name == "explorer-charts"):
            screenshot(page, f"{name}{'-phone' if width == 390 else ''}.png")
        page.context.close()


def test_a_bad_movers_window_is_said_in_words(browser: Any, charted: Charted) -> None:
    page = opened(browser, charted, "/charts/movers?minutes=999")
    assert "1 to 60, not 999" in page.content()
    page.context.close()
