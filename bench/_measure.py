"""Figures: the median of several timed repetitions, with their min and max."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Figure", "rate", "repeat"]


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
    """Run ``work`` once; ``units`` divided by the seconds it took."""
    started = time.perf_counter()
    work()
    return units / (time.perf_counter() - started)


def repeat(reps: int, measure: Callable[[], float]) -> Figure:
    """Call ``measure`` (which returns a rate) ``reps`` times; their figure."""
    return Figure.of([measure() for _ in range(reps)])
