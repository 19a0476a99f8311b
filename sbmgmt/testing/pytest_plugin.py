"""The ``sbmgmt_mock`` pytest fixture (registered as the ``sbmgmt_mock`` plugin).

``sbmgmt_mock``: a [MockManagementNode][sbmgmt.testing.MockManagementNode] that every
sbmgmt client created during the test talks to, in memory (pytest-mock's ``mocker``
patches ``ProtonLoop.connect``). At the end of the test, requests that no registration
answered, failed callbacks and unused registrations fail it
(``sbmgmt_mock.assert_all_requests_are_fired = False`` keeps unused ones quiet).

The fixture needs pytest-mock: ``pip install 'sbmgmt[testing]'`` installs it (and pytest,
nothing else). Without it, a test that asks for ``sbmgmt_mock`` fails with one line that
says so, not pytest's "fixture 'mocker' not found".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import pytest

from ._mock import MockManagementNode

if TYPE_CHECKING:  # pytest-mock is needed only by tests that use the fixture
    from pytest_mock import MockerFixture

__all__ = ["MISSING_PYTEST_MOCK", "sbmgmt_mock"]

#: How a test that uses ``sbmgmt_mock`` fails when pytest-mock is not installed.
MISSING_PYTEST_MOCK = ("the sbmgmt_mock fixture needs pytest-mock (its 'mocker' fixture), "
                       "which is not installed: pip install 'sbmgmt[testing]'")


def _mocker(request: pytest.FixtureRequest) -> MockerFixture:
    try:
        return cast("MockerFixture", request.getfixturevalue("mocker"))
    except pytest.FixtureLookupError:
        pytest.fail(MISSING_PYTEST_MOCK, pytrace=False)


@pytest.fixture
def sbmgmt_mock(request: pytest.FixtureRequest) -> Iterator[MockManagementNode]:
    """A mock management node in place of every sbmgmt client's connection.

    Yields:
        The mock: register replies with ``add``, read the requests from ``calls``.

    Raises:
        pytest.fail.Exception: pytest-mock is not installed (``sbmgmt[testing]``).
        AssertionError: at teardown, for a request nothing answered, a failed callback, or
            an unused registration.
    """
    mock = MockManagementNode()
    mock.intercept(_mocker(request).patch.object)
    try:
        yield mock
    finally:
        mock.close()
    mock.verify()
