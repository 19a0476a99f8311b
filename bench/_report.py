"""The results as a text table and as JSON (with the machine they ran on)."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from ._measure import Figure
from ._scenarios import Row, Sizes

__all__ = ["kept_at_latency", "machine", "table", "to_json", "write_json"]


def machine() -> dict[str, Any]:
    """CPU count and model, Python and library versions."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib.metadata import version

    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "python-qpid-proton": version("python-qpid-proton"),
        "azure-servicebus": version("azure-servicebus"),
    }


def _figure(prefix: str, figure: Figure | None) -> dict[str, Any]:
    if figure is None:
        return {prefix: None, f"{prefix}_min": None, f"{prefix}_max": None}
    return {
        prefix: round(figure.median, 1),
        f"{prefix}_min": round(figure.low, 1),
        f"{prefix}_max": round(figure.high, 1),
    }


def kept_at_latency(row: Row, rows: list[Row]) -> float | None:
    """``row``'s figure over the same scenario's at 0 ms in the same run (None at 0 ms,
    or without such a row)."""
    if not row.latency_ms or row.ours is None:
        return None
    zero = next((r for r in rows if r.scenario == row.scenario and not r.latency_ms
                 and r.ours is not None), None)
    return None if zero is None or zero.ours is None else row.ours.median / zero.ours.median


def _kept_cell(row: Row, rows: list[Row]) -> str:
    kept = kept_at_latency(row, rows)
    if kept is None:
        return "-"
    cell = f"{kept:.0%}"
    if row.kept_target is not None:
        cell += f" (>= {row.kept_target:.0%} {'met' if kept >= row.kept_target else 'NOT met'})"
    return cell


def to_json(rows: list[Row], sizes: Sizes, command: str, cpus: str) -> dict[str, Any]:
    """The JSON document: one entry per row, plus the run's settings and machine (and
    ``cpus``: which CPUs the fake and the clients ran on)."""
    results = []
    for row in rows:
        entry: dict[str, Any] = {"scenario": row.scenario, "latency_ms": row.latency_ms,
                                 "unit": row.unit}
        entry.update(_figure("ours", row.ours))
        entry.update(_figure("sdk", row.other if row.other_name == "sdk" else None))
        entry.update(_figure("bare", row.other if row.other_name == "bare" else None))
        entry.update(_figure("submit", row.other if row.other_name == "submit" else None))
        ratio = row.ratio
        entry["ratio"] = None if ratio is None else round(ratio, 3)
        entry["compared_with"] = row.other_name
        entry["target"] = row.target
        entry["met"] = row.met
        entry["note"] = row.note
        kept = kept_at_latency(row, rows)
        entry["kept_at_latency"] = None if kept is None else round(kept, 3)
        entry["kept_target"] = row.kept_target
        results.append(entry)
    return {
        "command": command,
        "machine": machine(),
        "cpus": cpus,
        "sizes": {name: getattr(sizes, name) for name in sizes.__slots__},
        "results": results,
    }


def write_json(document: dict[str, Any], path: Path) -> None:
    """Write the document, pretty-printed."""
    path.write_text(json.dumps(document, indent=2) + "\n")


def _cell(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    return f"{figure.median:,.0f} ({figure.low:,.0f}-{figure.high:,.0f})"


def table(rows: list[Row]) -> str:
    """A Markdown table: median (min-max) of each figure, the ratio and the target, and
    the share of the same scenario's figure at 0 ms kept at latency."""
    header = ("| scenario | latency | unit | ours | SDK | bare proton | our submit | ratio "
              "| target | kept at latency |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    lines = list(header)
    for row in rows:
        sdk = row.other if row.other_name == "sdk" else None
        bare = row.other if row.other_name == "bare" else None
        submit = row.other if row.other_name == "submit" else None
        ratio = row.ratio
        if row.target is None:
            target = ""
        elif row.other_name == "absolute":
            target = f">= {row.target:,.0f}"
        else:
            target = f">= {row.target:g}x"
        if row.met is not None:
            target += " met" if row.met else " NOT met"
        lines.append(
            f"| {row.scenario} | {row.latency_ms:g} ms | {row.unit} | {_cell(row.ours)} "
            f"| {_cell(sdk)} | {_cell(bare)} | {_cell(submit)} "
            f"| {'-' if ratio is None else f'{ratio:,.2f}x'} | {target} "
            f"| {_kept_cell(row, rows)} |"
        )
    return "\n".join(lines)
