"""The explorer in a real browser: Playwright for Python driving Debian's Chromium.

Each module's namespace is served twice: by the embedded fake (``FakeNamespace``) and by
``python -m fakes --port 0 --http-port 0`` (the emulator's drop-in), both from
``config.json``, reached with the emulator's connection string; the explorer is started
the way ``sbmgmt explore`` starts it (its clients, the fake's SQL checks). Playwright's own
browser download is not reachable from our machines: the system's ``/usr/bin/chromium`` is
launched. Without it a test skips, and fails under CI=true (tests/_peers.py);
``scripts/test.sh`` installs it.

Screenshots for docs/explorer.md are written when ``EXPLORER_SCREENSHOTS`` names a folder
(``scripts/explorer_screenshots.sh``), from the embedded fake's run only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from fakes.sql import parse_action, parse_filter
from sbmgmt import ManagementClient
from sbmgmt.actions.contract import Progress
from sbmgmt.actions.entities import admin_client
from tests._peers import missing_peer

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
CONFIG = Path(__file__).parent / "config.json"
ROOT = Path(__file__).resolve().parents[2]
#: How long a job held by ``held_until_cancelled`` waits for its Cancel at most (the bound
#: of a test that failed before it).
HOLD = 60
#: An entity name with markup: no namespace allows one (the service, the emulator and the
#: fake check names), so an administration listing that holds it is made up for the test.
MARKUP_ENTITY = "<b>bold&co"


@dataclass
class Served:
    """A namespace under test: how it was started, its connection string and HTTP port,
    the explorer's address (with its token) and the clients the tests check with."""

    mode: str
    connection_string: str
    http_port: int
    url: str
    base_url: str
    client: ManagementClient
    admin: Any
    fake: FakeNamespace | None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, headless, launched once a module. Not once a session: Playwright's sync
    API runs an event loop on the main thread while it is started, and every later test
    that calls ``asyncio.run`` would fail ("cannot be called from a running event loop")."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        missing_peer("no chromium: apt-get install chromium (scripts/test.sh does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing_peer("no playwright: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module", params=["fake", "emulator"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The module's namespace (``fake``: embedded; ``emulator``: ``python -m fakes``) with
    the explorer serving it."""
    from sbmgmt.explorer import Explorer, Namespace

    fake: FakeNamespace | None = None
    process: subprocess.Popen[str] | None = None
    if request.param == "fake":
        fake = FakeNamespace(str(CONFIG), http_port=0).start()
        connection_string = fake.connection_string
        assert fake.http_port is not None
        http_port = fake.http_port
    else:
        process = subprocess.Popen(
            [sys.executable, "-m", "fakes", "--port", "0", "--http-port", "0", "--host",
             "127.0.0.1", "--config", str(CONFIG)], cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        http_port = int(process.stdout.readline().strip().rsplit(":", 1)[1])
        assert connection_string.startswith("Endpoint=sb://127.0.0.1:")
    try:
        with ManagementClient.from_connection_string(connection_string, timeout=20) as client, \
                admin_client(connection_string=connection_string, http_port=http_port,
                             timeout=20) as admin:
            namespace = Namespace(label="127.0.0.1", client=client, admin=admin,
                                  check_sql_filter=parse_filter,
                                  check_sql_action=parse_action,
                                  secrets=("SAS_KEY_VALUE",))
            with Explorer(namespace, refresh_seconds=1.0) as explorer:
                yield Served(request.param, connection_string, http_port, explorer.url,
                             explorer.base_url, client, admin, fake)
    finally:
        if fake is not None:
            fake.stop()
        if process is not None:
            process.terminate()
            process.communicate(timeout=30)


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    """A fresh browser context (no cookie) on the explorer's address with its token."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(served.url)
    yield opened
    context.close()
    assert errors == [], errors


@pytest.fixture
def held_until_cancelled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every job's ``on_progress`` (:meth:`Job.told`): the count told as always, then, once
    something is done, the thread that told it waits there until the job is cancelled (or
    the test ends). A test that presses Cancel once the page shows a count so has it come
    in the middle of the action, whatever the machine's speed: every thread of the action
    that finishes a unit of work is held before it starts another, and each one let go
    sees the cancellation."""
    from sbmgmt.explorer._jobs import Job

    told = Job.told
    jobs: list[Job] = []

    def held(job: Job, progress: Progress) -> None:
        told(job, progress)
        if progress.done > 0:
            jobs.append(job)
            job.cancel.wait(HOLD)

    monkeypatch.setattr(Job, "told", held)
    yield
    for job in jobs:  # a test that failed before its Cancel: its job is let go, cancelled
        job.cancel.cancel()


def screenshot(page: Any, served: Served, name: str) -> None:
    """Save a screenshot for docs/explorer.md when ``EXPLORER_SCREENSHOTS`` names a folder."""
    folder = os.environ.get("EXPLORER_SCREENSHOTS")
    if folder and served.mode == "fake":
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def follow(page: Any, selector: str) -> None:
    """Click a link or a submit button and wait for the page it leads to."""
    with page.expect_navigation():
        page.click(selector)
