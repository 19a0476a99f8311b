"""The ``sbmgmt_mock`` pytest fixture (registered as the ``sbmgmt_mock`` plugin).

``sbmgmt_mock``: a :class:`~sbmgmt.testing.MockManagementNode` that every sbmgmt client
created during the test talks to, in memory (pytest-mock's ``mocker`` patches
``ProtonLoop.connect``). At the end of the test, requests that no registration
answered, failed callbacks and unused registrations fail it
(``sbmgmt_mock.assert_all_requests_are_fired = False`` keeps unused ones quiet).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ._mock import MockManagementNode

if TYPE_CHECKING:  # pytest-mock is needed only by tests that use the fixture
    from pytest_mock import MockerFixture

__all__ = ["sbmgmt_mock"]


@pytest.fixture
def sbmgmt_mock(mocker: MockerFixture) -> Iterator[MockManagementNode]:
    """A mock management node in place of every sbmgmt client's connection."""
    mock = MockManagementNode()
    mock.intercept(mocker.patch.object)
    try:
        yield mock
    finally:
        mock.close()
    mock.verify()
