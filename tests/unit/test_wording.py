"""``counted``: the CLI's and the explorer's counts in words."""

from __future__ import annotations

import pytest

from sbmgmt._wording import counted


@pytest.mark.parametrize(("count", "expected"), [
    (0, "0 messages"), (1, "1 message"), (2, "2 messages"), (-1, "-1 messages"),
    (10_000, "10000 messages"),
])
def test_the_noun_is_singular_only_for_exactly_one(count: int, expected: str) -> None:
    assert counted(count, "message") == expected


def test_an_irregular_plural_is_given() -> None:
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"
