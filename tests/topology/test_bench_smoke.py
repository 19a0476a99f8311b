"""bench/topology.py runs end to end on a tiny namespace (no figure asserted: speed is
measured by the bench, never tested)."""

from __future__ import annotations

import pytest

from bench.topology import main, shape


def test_the_bench_shape_is_the_entities_asked_for() -> None:
    found = shape(1000)
    kinds = [entity.kind.value for entity in found.entities]
    assert (kinds.count("queue"), kinds.count("topic"), kinds.count("subscription")) == (
        400, 60, 540)


@pytest.mark.timeout(300)
def test_the_bench_runs_and_prints_both_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--entities", "20", "--latency-ms", "1"]) == 0
    printed = capsys.readouterr().out
    assert "20 entities and 9 rules at 1 ms" in printed
    assert printed.count("x faster") == 2
