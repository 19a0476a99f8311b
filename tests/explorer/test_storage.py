"""The explorer shows where the namespace is kept (issue 61): the fake's data directory, or
memory only, as the fake's HTTP port says (``GET /metrics``, sbmgmt.actions.storage), in
every page's header; nothing for a namespace that does not say."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from fakes.sql import parse_action, parse_filter
from sbmgmt import ManagementClient
from sbmgmt.actions.entities import admin_client
from sbmgmt.actions.storage import Storage, storage_of
from sbmgmt.explorer import Explorer, Namespace


@contextlib.contextmanager
def _explorer_page(browser: Any, fake: FakeNamespace, storage: Storage | None,
                   ) -> Iterator[Any]:
    """Chromium on the explorer's first page, the explorer over ``fake`` with ``storage``."""
    assert fake.http_port is not None
    with ManagementClient.from_connection_string(fake.connection_string, timeout=20) as client, \
            admin_client(connection_string=fake.connection_string, http_port=fake.http_port,
                         timeout=20) as admin:
        namespace = Namespace(label="127.0.0.1", client=client, admin=admin,
                              check_sql_filter=parse_filter, check_sql_action=parse_action,
                              secrets=("SAS_KEY_VALUE",), storage=storage)
        with Explorer(namespace, refresh_seconds=1.0) as explorer:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.goto(explorer.url)
            yield page
            context.close()


@pytest.fixture
def kept_fake(tmp_path: Path) -> Iterator[FakeNamespace]:
    with FakeNamespace(data_dir=tmp_path / "sb-data", data_dir_sync="full",
                       http_port=0) as fake:
        fake.add_queue("orders")
        yield fake


def test_the_header_names_the_fakes_data_directory(browser: Any, kept_fake: FakeNamespace,
                                                   tmp_path: Path) -> None:
    assert kept_fake.http_port is not None
    storage = storage_of(kept_fake.connection_string, kept_fake.http_port)
    assert storage == Storage(str(tmp_path / "sb-data"), "full")
    with _explorer_page(browser, kept_fake, storage) as page:
        header = page.get_by_test_id("storage")
        assert header.inner_text() == f"kept in {tmp_path / 'sb-data'} (sync: full)"
        page.get_by_role("link", name="orders").first.click()  # on an entity's page too
        page.wait_for_url("**/messages?**")
        assert page.get_by_test_id("storage").inner_text() == header.inner_text()


def test_a_fake_in_memory_says_so_and_a_namespace_that_says_nothing_shows_nothing(
        browser: Any) -> None:
    with FakeNamespace(http_port=0) as fake:
        assert fake.http_port is not None
        storage = storage_of(fake.connection_string, fake.http_port)
        assert storage == Storage()
        with _explorer_page(browser, fake, storage) as page:
            assert page.get_by_test_id("storage").inner_text() == (
                "kept in memory only (gone when the fake stops)")
        with _explorer_page(browser, fake, None) as page:
            assert page.get_by_role("link", name="sbmgmt explorer").is_visible()
            assert page.get_by_test_id("storage").count() == 0


def test_a_port_without_the_fakes_page_says_nothing(kept_fake: FakeNamespace) -> None:
    # The AMQP port is no HTTP port: what a namespace without /metrics (the service, Microsoft's
    # emulator) answers is no storage, not an error.
    assert storage_of(kept_fake.connection_string, kept_fake.port, timeout=2) is None
