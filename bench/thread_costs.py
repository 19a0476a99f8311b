"""Where the client's CPU goes when 32 threads make blocking calls, against pipelined
``submit``: the CPU time of each kind of thread and its context switches, per call.

Both paths run against the fake in a child process, the fake on a CPU of its own and
this process on the others (as ``python -m bench`` does), single-message peeks, the two
interleaved repetition by repetition. Around each timed repetition it reads, for every
thread of this process, the CPU time the kernel has charged it
(``/proc/self/task/<id>/schedstat``) and its voluntary and involuntary context switches
(``/proc/self/task/<id>/status``). A thread is the client's I/O thread
(``sbmgmt-io-*``), the main thread, or a caller (the 32 pool threads). What is left of
the wall time, with one CPU for the client, is time the client waited for the fake.

It also times the least a hand-over between two Python threads costs on this process's
CPUs: two threads passing control back and forth through two locks. Each blocking call
needs one such hand-over at least (the caller sleeps until the I/O thread has its reply).

    .venv/bin/python bench/thread_costs.py --requests 2000 --reps 5

Linux only (``/proc``).
"""

from __future__ import annotations

import _thread
import argparse
import gc
import json
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _ours  # noqa: E402
from bench._fake import FakeProcess  # noqa: E402
from sbmgmt._protocol.dispatcher import DEFAULT_WINDOW  # noqa: E402

__all__ = ["PathCosts", "Split", "hand_over", "main"]

ROLES = ("I/O thread", "callers", "main")
WINDOW = DEFAULT_WINDOW
"""Requests ``submit`` keeps in flight (the client's default window, as in the bench)."""


@dataclass(frozen=True, slots=True)
class _Task:
    cpu_ns: int
    voluntary: int
    involuntary: int


def _tasks() -> dict[int, _Task]:
    """Every thread of this process now, by its native id."""
    tasks: dict[int, _Task] = {}
    for entry in Path("/proc/self/task").iterdir():
        try:
            cpu_ns = int((entry / "schedstat").read_text().split()[0])
            status = dict(line.split(":", 1) for line in
                          (entry / "status").read_text().splitlines() if ":" in line)
        except OSError:  # the thread ended meanwhile
            continue
        tasks[int(entry.name)] = _Task(cpu_ns, int(status["voluntary_ctxt_switches"]),
                                       int(status["nonvoluntary_ctxt_switches"]))
    return tasks


def _role(name: str) -> str:
    if name.startswith("sbmgmt-io"):
        return "I/O thread"
    return "main" if name == "MainThread" else "callers"


@dataclass(frozen=True, slots=True)
class PathCosts:
    """One timed repetition, per call: wall and CPU microseconds by role, switches."""

    calls_per_second: float
    wall_us: float
    cpu_us: dict[str, float]
    voluntary: float
    involuntary: float

    @property
    def idle_us(self) -> float:
        """Wall time no thread of the client ran (with one CPU for the client)."""
        return self.wall_us - sum(self.cpu_us.values())


class Split:
    """A :data:`bench._ours.Measure` that also keeps each repetition's :class:`PathCosts`.

    Like :func:`bench._measure.rate`, a full collection first, untimed; the threads are
    read just outside the clock.
    """

    def __init__(self) -> None:
        self.costs: list[PathCosts] = []

    def __call__(self, units: int, work: Callable[[], object]) -> float:
        gc.collect()
        before = _tasks()
        started = time.perf_counter()
        work()
        elapsed = time.perf_counter() - started
        after = _tasks()
        roles = {thread.native_id: _role(thread.name) for thread in threading.enumerate()}
        cpu_ns = dict.fromkeys(ROLES, 0)
        voluntary = involuntary = 0
        for ident, now in after.items():
            then = before.get(ident, _Task(0, 0, 0))
            cpu_ns[roles.get(ident, "callers")] += now.cpu_ns - then.cpu_ns
            voluntary += now.voluntary - then.voluntary
            involuntary += now.involuntary - then.involuntary
        self.costs.append(PathCosts(
            units / elapsed, elapsed / units * 1e6,
            {role: ns / units / 1000 for role, ns in cpu_ns.items()},
            voluntary / units, involuntary / units))
        return units / elapsed


def hand_over(rounds: int) -> tuple[float, float]:
    """(microseconds, context switches) per round trip of control between two Python
    threads through two locks: the fewest switches one could take is two."""
    there, back = _thread.allocate_lock(), _thread.allocate_lock()
    there.acquire()
    back.acquire()

    def other() -> None:
        for _ in range(rounds):
            there.acquire()
            back.release()

    thread = threading.Thread(target=other)
    thread.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    for _ in range(rounds):
        there.release()
        back.acquire()
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    thread.join()
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return elapsed / rounds * 1e6, switches / rounds


def _median(costs: list[PathCosts]) -> dict[str, float]:
    figures = {
        "calls_per_second": statistics.median(c.calls_per_second for c in costs),
        "wall_us": statistics.median(c.wall_us for c in costs),
        "idle_us": statistics.median(c.idle_us for c in costs),
        "voluntary_switches": statistics.median(c.voluntary for c in costs),
        "involuntary_switches": statistics.median(c.involuntary for c in costs),
    }
    for role in ROLES:
        figures[f"cpu_us_{role}"] = statistics.median(c.cpu_us[role] for c in costs)
    return figures


def main(argv: list[str] | None = None) -> int:
    """Measure both paths and the hand-over; print a table and a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2_000, help="peeks a repetition")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=100_000, help="hand-over round trips")
    args = parser.parse_args(argv)
    paths = {f"submit ({WINDOW} in flight)": Split(),
             f"{_ours.THREADS} threads on peek_messages": Split()}
    submit, threads = paths.values()
    with FakeProcess() as fake:
        queue = fake.new_queue("costs")
        fake.fill(queue, args.requests, 32)
        with fake.apart() as placement:
            for _ in range(args.reps):
                _ours.peek_singles(fake.connection_string, queue, args.requests, 1,
                                   window=WINDOW, measure=submit)
                _ours.peek_singles_threads(fake.connection_string, queue, args.requests, 1,
                                           measure=threads)
            round_trip_us, switches = hand_over(args.rounds)
    results = {name: _median(split.costs) for name, split in paths.items()}
    print(f"{placement}; {args.requests} single-message peeks, median of {args.reps}; "
          "per call:")
    print(f"{'path':<30} {'calls/s':>8} {'wall µs':>8} {'I/O µs':>7} {'callers':>8} "
          f"{'main':>6} {'idle':>6} {'vol sw':>7} {'invol sw':>8}")
    for name, f in results.items():
        print(f"{name:<30} {f['calls_per_second']:>8,.0f} {f['wall_us']:>8.1f} "
              f"{f['cpu_us_I/O thread']:>7.1f} {f['cpu_us_callers']:>8.1f} "
              f"{f['cpu_us_main']:>6.1f} {f['idle_us']:>6.1f} "
              f"{f['voluntary_switches']:>7.2f} {f['involuntary_switches']:>8.2f}")
    print(f"hand-over between two Python threads: {round_trip_us:.2f} µs and "
          f"{switches:.2f} context switches per round trip ({args.rounds:,} round trips)")
    print(json.dumps({"thread_costs": results, "hand_over": {
        "round_trip_us": round_trip_us, "switches_per_round_trip": switches}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
