"""Counts over time (issue 63): a namespace of 1,000 entities sampled, its page of 1,000
sparklines drawn in Chromium, and the explorer's memory while it samples.

    .venv/bin/python -m bench.watch --entities 1000 --latency-ms 5 --rounds 5 \\
        --memory-minutes 10

The fake runs in its own process (``python -m fakes``, ``bench.topology``'s namespace: 40%
queues, then topics of 9 subscriptions each; 1,000 entities are 400 queues, 60 topics and
540 subscriptions), its HTTP port reached through ``bench/_delay.py``'s proxy, which holds
every chunk half the round trip each way.

- *sampling*: :class:`sbmgmt.actions.watch.Sampler`'s ``sample()`` (one
  ``list_entities``: the queues' pages one after the other, the topics' page, each topic's
  subscriptions, 8 in flight), ``--rounds`` times; the HTTP requests one sample costs, read
  from the fake's ``/metrics``. Target: under 1 s at 5 ms.
- *page*: the explorer over the same namespace with 60 samples in its history (what a
  sparkline draws); Chromium opens the namespace page: the server's answer (it lists the
  namespace itself, through the proxy) and the drawing (from the answer's last byte to the
  load event and two animation frames: the 1,000 sparklines' SVG parsed, laid out and
  painted). Target: drawn under 1 s.
- *memory*: the explorer's sampler every ``--memory-interval`` seconds (0.2: as fast as
  the listing allows, so that its history of 720 samples fills in minutes, not an hour)
  for ``--memory-minutes``, the namespace page and the charts read every 5 s as a browser
  would; the process's resident memory every 10 s, and the slope over the time after the
  history was full (least squares). The issue asks an hour at 5 s; this is the same ring
  filled and overwritten faster.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.topology import admin_at, fake_process, sbmgmt_apply, shape  # noqa: E402
from sbmgmt import ManagementClient  # noqa: E402
from sbmgmt.actions.entities import admin_client, list_entities  # noqa: E402
from sbmgmt.actions.watch import History, Sampler  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
TARGETS = {"sampling": 1.0, "drawn": 1.0}
SPARK_SAMPLES = 60


def http_requests(http_port: int) -> int:
    """The requests the fake's HTTP port answered so far (its ``/metrics``)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30).read()
    return sum(int(float(m.group(1))) for m in re.finditer(
        rb"^fakes_http_requests_total\{[^}]*\} (\S+)$", text, re.MULTILINE))


def rss_kib() -> int:
    """This process's resident memory, in KiB (Linux's /proc)."""
    status = Path("/proc/self/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) if match else 0


def sampling(client: Any, http_port: int, rounds: int) -> tuple[list[float], int, int]:
    """The seconds of ``rounds`` samples, the entities listed, the HTTP requests a sample."""
    sampler = Sampler(lambda: list_entities(client), interval=5.0)
    before = http_requests(http_port)
    first = sampler.sample()
    requests_per_sample = http_requests(http_port) - before - 1  # less /metrics itself
    took = [first.took] + [sampler.sample().took for _ in range(rounds - 1)]
    return took, len(first.entities), requests_per_sample


@contextlib.contextmanager
def explorer(connection_string: str, client: Any, interval: float,
             length: int = 720) -> Iterator[Any]:
    from sbmgmt.explorer import Explorer, Namespace

    with ManagementClient.from_connection_string(connection_string, timeout=60) as amqp:
        namespace = Namespace(label="bench", client=amqp, admin=client)
        with Explorer(namespace, sample_seconds=interval, history_length=length) as served:
            yield served


def page(connection_string: str, client: Any) -> dict[str, float]:
    """The namespace page with its sparklines in Chromium: the answer and the drawing."""
    from playwright.sync_api import sync_playwright

    with explorer(connection_string, client, interval=3600.0) as served:
        for _ in range(SPARK_SAMPLES - 1):  # the thread took the first
            served.sampler.sample()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            tab = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            tab.set_default_timeout(120_000)
            tab.goto(served.url)  # the token's redirect, once
            started = time.perf_counter()
            tab.goto(served.base_url + "/", wait_until="load")
            tab.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                         "requestAnimationFrame(r)))")
            total = time.perf_counter() - started
            timing = tab.evaluate("""() => { const n = performance.getEntriesByType(
                'navigation')[0]; return [n.requestStart, n.responseEnd, performance.now()]; }""")
            sparks = tab.locator("svg.spark").count()
            html = tab.content()
            bare = re.sub(r'<svg class="spark".*?</svg>', "", html, flags=re.DOTALL)
            with_sparks, without = _drawing(tab, html), _drawing(tab, bare)
            browser.close()
    request_start, response_end, drawn_at = timing
    return {"answer": (response_end - request_start) / 1000,
            "drawn": (drawn_at - response_end) / 1000, "total": total, "sparklines": sparks,
            "html": with_sparks, "bare": without}


def _drawing(tab: Any, html: str) -> float:
    """Seconds to parse, lay out and paint ``html`` in ``tab`` (no network: its styles
    and scripts are the explorer's, already cached)."""
    started = time.perf_counter()
    tab.set_content(html, wait_until="load")
    tab.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                 "requestAnimationFrame(r)))")
    return time.perf_counter() - started


def memory(connection_string: str, client: Any, minutes: float,
           interval: float) -> list[tuple[float, int, int, int]]:
    """(seconds, RSS KiB, history bytes, samples) every 10 s while the explorer samples."""
    points: list[tuple[float, int, int, int]] = []
    with explorer(connection_string, client, interval=interval) as served:
        session = requests.Session()
        session.get(served.url, timeout=60)
        stop = threading.Event()

        def browse() -> None:  # what an open page polls, every 4 s (uvicorn keeps 5)
            while not stop.wait(4.0):
                for path in ("/entities", "/charts/part", "/charts/movers",
                             "/charts/part?path=queue-0000&kind=queue"):
                    session.get(served.base_url + path, timeout=60).raise_for_status()

        browser = threading.Thread(target=browse, daemon=True)
        browser.start()
        started = time.monotonic()
        samples = 0
        history: History = served.sampler.history
        while time.monotonic() - started < minutes * 60:
            latest = history.latest
            samples = samples + 1 if latest is not None else samples
            points.append((time.monotonic() - started, rss_kib(), history.memory(),
                           _added(history)))
            time.sleep(10.0)
        stop.set()
        browser.join(30)
    return points


def _added(history: History) -> int:
    return history._added  # the samples added so far (a bench reads it; not an API)


def slope(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KiB), in KiB per hour."""
    if len(points) < 2:
        return float("nan")
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den * 3600 if den else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--memory-minutes", type=float, default=0.0,
                        help="minutes of the memory run (0: none)")
    parser.add_argument("--memory-interval", type=float, default=0.2)
    args = parser.parse_args(argv)
    wanted = shape(args.entities)
    with fake_process() as (connection_string, http_port):
        with admin_client(connection_string=connection_string, http_port=http_port,
                          timeout=60) as direct:
            sbmgmt_apply(direct, wanted)
        with admin_at(connection_string, http_port, args.latency_ms) as client:
            took, listed, per_sample = sampling(client, http_port, args.rounds)
            drawn = page(connection_string, client)
            print(f"{listed} entities at {args.latency_ms:g} ms, {os.cpu_count()} cores")
            print("| figure | median (min-max) | target |")
            print("| --- | --- | --- |")
            median = statistics.median(took)
            print(f"| one sample of the namespace ({per_sample} HTTP requests) | "
                  f"{median:.3f} s ({min(took):.3f}-{max(took):.3f}, {len(took)} rounds) | "
                  f"< 1 s: {'met' if median < TARGETS['sampling'] else 'NOT met'} |")
            print(f"| the namespace page's answer (a listing of its own) | "
                  f"{drawn['answer']:.3f} s | |")
            print(f"| its {drawn['sparklines']:g} sparklines drawn (answer to painted) | "
                  f"{drawn['drawn']:.3f} s | < 1 s: "
                  f"{'met' if drawn['drawn'] < TARGETS['drawn'] else 'NOT met'} |")
            print(f"| the page, asked to painted | {drawn['total']:.3f} s | |")
            print(f"| the same HTML drawn again, with / without its sparklines | "
                  f"{drawn['html']:.3f} s / {drawn['bare']:.3f} s | |")
            if args.memory_minutes > 0:
                points = memory(connection_string, client, args.memory_minutes,
                                args.memory_interval)
                full = [(s, kib) for s, kib, _, added in points if added >= 720]
                print(f"\nmemory, sampling every {args.memory_interval:g} s for "
                      f"{args.memory_minutes:g} min (history full after 720 samples):")
                print("| s | RSS MiB | history MiB | samples |")
                print("| --- | --- | --- | --- |")
                for seconds, kib, held, added in points[::3] + points[-1:]:
                    print(f"| {seconds:.0f} | {kib / 1024:.1f} | {held / 2**20:.1f} | "
                          f"{added} |")
                print(f"RSS slope once the history was full: {slope(full):.0f} KiB/hour "
                      f"over {len(full)} readings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
