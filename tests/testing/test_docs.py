"""docs/testing.md's examples run: every ``python`` code block is a test module, run by
pytest (through pytester) with the ``sbmgmt_mock`` fixture, and all its tests pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"),
                    flags=re.MULTILINE | re.DOTALL)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_the_guide_example_passes(number: int, pytester: pytest.Pytester,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    block = BLOCKS[number]
    # Only the plugins the examples need (loading every installed one costs a second a run).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(**{f"test_example_{number}": block})
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "pytest_mock",
                                          "-p", "sbmgmt.testing.pytest_plugin", "-q")
    tests = len(re.findall(r"^def test_", block, flags=re.MULTILINE))
    result.assert_outcomes(passed=tests)
