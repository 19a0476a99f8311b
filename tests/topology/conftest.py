"""The explorer's browser fixtures (tests/explorer/conftest.py), for the entity forms'
tests in Chromium (test_explorer_forms.py)."""

from tests.explorer.conftest import browser, page, served

__all__ = ["browser", "page", "served"]
