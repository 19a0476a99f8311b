"""Figures: the median of several timed repetitions, with their min and max."""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Figure", "cpu_seconds", "rate", "repeat"]


@dataclass(frozen=True, slots=True)
class Figure:
    """A rate (units per second) over several repetitions."""

    median: float
    low: float
    high: float
    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples: list[float]) -> Figure:
        """The figure of these samples (at least one)."""
        if not samples:
            raise ValueError("a figure needs at least one sample")
        return cls(statistics.median(samples), min(samples), max(samples), tuple(samples))


def rate(units: int, work: Callable[[], object]) -> float:
    """Run ``work`` once; ``units`` divided by the seconds it took.

    A full garbage collection first, untimed: every repetition, ours and the SDK's,
    starts with the collector in the same state, and pays for the collections its own
    objects set off, not for those the measures before it left due (a full collection
    with thousands of requests in flight takes 25-50 ms, a repetition 0.1-0.5 s).
    """
    gc.collect()
    started = time.perf_counter()
    work()
    return units / (time.perf_counter() - started)


def repeat(reps: int, measure: Callable[[], float]) -> Figure:
    """Call ``measure`` (which returns a rate) ``reps`` times; their figure."""
    return Figure.of([measure() for _ in range(reps)])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
