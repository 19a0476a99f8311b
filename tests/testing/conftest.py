"""The ``sbmgmt_mock`` fixture (also registered by the package's pytest11 entry point)."""

from __future__ import annotations

from sbmgmt.testing.pytest_plugin import sbmgmt_mock

__all__ = ["sbmgmt_mock"]
