"""The bench runs end to end on tiny sizes and writes JSON with every field.

No figure is asserted: speed is measured by ``python -m bench``, never tested.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import main

FIELDS = {"scenario", "latency_ms", "unit", "ours", "ours_min", "ours_max", "sdk", "sdk_min",
          "sdk_max", "bare", "bare_min", "bare_max", "ratio", "compared_with", "target", "met"}


@pytest.mark.timeout(90)
def test_quick_bench_writes_valid_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    status = main([
        "--quick", "--json", str(out), "--latency-ms", "0",
        "--locks", "40", "--sdk-locks", "10", "--requests", "20", "--sdk-requests", "10",
        "--peek-messages", "60", "--sdk-peek-messages", "30", "--page", "25",
        "--capacity-requests", "20", "--reps", "2",
    ])
    assert status == 0
    document = json.loads(out.read_text())
    assert document["machine"]["nproc"] >= 1
    assert document["sizes"]["locks"] == 40
    results = document["results"]
    scenarios = {entry["scenario"] for entry in results}
    assert any(name.startswith("renew 40 locks") for name in scenarios)
    assert any("single-message peeks" in name for name in scenarios)
    assert any(name.startswith("peek 60 x 1 KB") for name in scenarios)
    assert any(name.startswith("fake namespace capacity") for name in scenarios)
    for entry in results:
        assert set(entry) >= FIELDS
        assert entry["ours"] > 0
        assert entry["ours_min"] <= entry["ours"] <= entry["ours_max"]
        compared = entry["compared_with"]
        if compared in ("sdk", "bare"):
            other = entry[compared]
            assert other > 0
            assert entry["ratio"] == pytest.approx(entry["ours"] / other, rel=0.01)
    table = capsys.readouterr().out
    assert table.startswith("| scenario |")
    assert len(table.strip().splitlines()) == len(results) + 2
