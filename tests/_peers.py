"""Tests that need a peer (Node, the JavaScript SDK, Java, ...) that may be missing.

On a developer's machine a missing peer skips the test with its reason; with ``CI=true``
the same test fails, because CI must run every peer (a skip there would hide a gap).
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, any case)."""
    return os.environ.get("CI", "").strip().lower() == "true"


def missing_peer(reason: str) -> NoReturn:
    """Skip the calling test for ``reason``, or fail it under CI."""
    if in_ci():
        pytest.fail(f"peer missing under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)
