"""The bench runs end to end on tiny sizes and writes JSON with every field.

No figure is asserted: speed is measured by ``python -m bench``, never tested. So the sizes
are the smallest that still give every row: one repetition (a figure of one sample still has
its median, lowest and highest, the same), a few messages, locks and requests each.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.__main__ import main
from bench._scenarios import SCENARIOS
from bench.latency_probe import main as latency_probe
from bench.thread_costs import ROLES
from bench.thread_costs import main as thread_costs

FIELDS = {"scenario", "latency_ms", "unit", "ours", "ours_min", "ours_max", "sdk", "sdk_min",
          "sdk_max", "bare", "bare_min", "bare_max", "ratio", "compared_with", "target", "met",
          "kept_at_latency", "kept_target"}


#: The scenarios (``--only``) in groups of about the same time, each group a test of its own
#: (a fake process each: the groups run side by side on the workers), and the rows each
#: group must give. Every scenario of bench._scenarios.SCENARIOS is in one group.
GROUPS = {
    "renew": ("renew 40 locks",),
    "independent": ("20 single-message peeks",),
    "peek": ("peek 60 x 1 KB",),
    "purge": ("purge 40 x 1 KB",),
    "kept": ("read 40 x 1 KB whole with peek_all",),
    "deferred,capacity": ("find 20 deferred among 60", "complete 20 deferred, batches",
                          "sustained: complete 40 deferred", "fake namespace capacity"),
}


@pytest.fixture(autouse=True)
def _heap_frozen() -> Iterator[None]:
    """The benches collect garbage before each measure (bench/_measure.rate, _kept,
    repair._timed, thread_costs, latency_probe), so that no figure pays for earlier garbage.
    In a pytest worker the heap holds whatever the worker's earlier tests left, and each full
    collection walks all of it: seconds each (the kept group took 301 s and 38 CPU-seconds
    in a whole-suite run, 6 s and 1.7 alone). What is there when the test starts is set
    aside (``gc.freeze``) for the test's time, and given back after."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_the_groups_cover_every_scenario() -> None:
    assert sorted(",".join(GROUPS).split(",")) == sorted(SCENARIOS)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("group", list(GROUPS))
def test_quick_bench_writes_valid_json(group: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    only = [arg for name in group.split(",") for arg in ("--only", name)]
    status = main([
        "--quick", "--json", str(out), "--latency-ms", "0", *only,
        "--locks", "40", "--sdk-locks", "10", "--requests", "20", "--sdk-requests", "10",
        "--peek-messages", "60", "--sdk-peek-messages", "30", "--page", "25",
        "--capacity-requests", "20", "--kept-locks", "200", "--small-read", "40",
        "--deferred", "20", "--sustained-deferred", "40", "--sdk-deferred", "10",
        "--find-among", "60", "--purge-messages", "40", "--sdk-purge-messages", "10",
        "--reps", "1",
    ])
    assert status == 0
    document = json.loads(out.read_text())
    assert document["machine"]["nproc"] >= 1
    assert document["sizes"]["locks"] == 40
    results = document["results"]
    scenarios = {entry["scenario"] for entry in results}
    for expected in GROUPS[group]:
        assert any(name.startswith(expected) for name in scenarios), expected
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


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.timeout(90)
def test_thread_costs_splits_every_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert thread_costs(["--requests", "64", "--reps", "1", "--rounds", "200"]) == 0
    document = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    paths = document["thread_costs"]
    assert len(paths) == 2
    for figures in paths.values():
        assert figures["calls_per_second"] > 0
        assert figures["wall_us"] > 0
        assert figures["voluntary_switches"] >= 0
        assert figures["involuntary_switches"] >= 0
        assert sum(figures[f"cpu_us_{role}"] for role in ROLES) > 0
    threads = next(f for name, f in paths.items() if "threads" in name)
    assert threads["cpu_us_callers"] > 0  # the callers are told apart from the I/O thread
    assert threads["cpu_us_I/O thread"] > 0
    assert document["hand_over"]["round_trip_us"] > 0


@pytest.mark.timeout(90)
def test_latency_probe_sweeps_windows(capsys: pytest.CaptureFixture[str]) -> None:
    assert latency_probe(["window", "--latency-ms", "0", "--windows", "2,8",
                          "--requests", "40"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["0 ms, window 2", "0 ms, window 8"]
    assert "at most 2 in flight" in lines[0]


@pytest.mark.slow("two rounds at three latencies, the official SDK's included, whose "
                  "receivers each take up to 1 s to close")
@pytest.mark.timeout(120)
def test_repair_bench_runs_rounds_and_reports_the_plan_and_the_move_apart(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.repair import main as repair_bench

    monkeypatch.setattr("sys.argv", ["bench.repair", "--messages", "30", "--sdk-messages", "5",
                                     "--latency-ms", "0,0p,5f", "--split", "--rounds", "2",
                                     "--json"])
    repair_bench()
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    # three latencies (0 ms straight to the fake, 0 ms through the proxy, 5 ms held in the
    # fake), two rounds
    assert [row["latency"] for row in rows] == ["0.0", "0.0p", "5.0f"] * 2
    for row in rows:
        assert (row["ours"], row["sdk"]) == (30, 5)
        for phase in ("plan", "move"):
            assert row[f"{phase}_s"] > 0 and row[f"{phase}_cpu"] >= 0
            assert row[f"{phase}_fake_cpu"] >= 0
    medians = out["medians"]["0.0"]
    assert medians["ours"] == pytest.approx(
        (rows[0]["ours_per_s"] + rows[3]["ours_per_s"]) / 2)
    assert out["medians"]["0.0p"]["ours"] == pytest.approx(
        (rows[1]["ours_per_s"] + rows[4]["ours_per_s"]) / 2)
    # kept round by round: each round's proxied rate against its own straight one
    assert out["kept_paired"]["0.0p"] == pytest.approx(
        (rows[1]["ours_per_s"] / rows[0]["ours_per_s"]
         + rows[4]["ours_per_s"] / rows[3]["ours_per_s"]) / 2)
