"""What telemetry costs a call: off (no OpenTelemetry, or the API without a provider) and on.

Three states, each in a child process of its own (the API's global providers can be
set only once per process), the rounds interleaved state by state:

- ``no-api``: ``opentelemetry`` cannot be imported (the ``otel`` extra not installed);
- ``api-no-provider``: the API installed, no provider set (its proxy providers);
- ``sdk``: the SDK's providers set, spans to an in-memory exporter, metrics to an
  in-memory reader (what recording costs when it is wanted).

For each it reports the cost of the hot paths' one check
(``sbmgmt.telemetry._switch.current()``, ns per call, best of 5 x 1,000,000), and the
client's CPU time per blocking ``peek_messages`` call (this process's CPU, the fake in
another process: ``bench/_fake.py``), sequential calls, median of the rounds.

``--tree`` (repeatable) runs the children on another checkout's ``sbmgmt`` too, for an
A/B against the code before telemetry (which has no check: "-"), interleaved tree by
tree within each round::

    git worktree add /tmp/ab-base 925afba
    .venv/bin/python bench/telemetry_overhead.py --tree /tmp/ab-base --tree . \
        --states no-api --states api-no-provider --requests 2000 --rounds 6
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: a child imports its --tree's sbmgmt

from bench._fake import FakeProcess  # noqa: E402

__all__ = ["main"]

STATES = ("no-api", "api-no-provider", "sdk")


def _child(state: str, conn_str: str, queue: str, requests: int) -> dict[str, float]:
    """Run in the child: set the state up, time the check and the calls."""
    if state == "no-api":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    elif state == "sdk":
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    import sbmgmt
    from sbmgmt import ManagementClient

    # (the test of the directory, not an import: the editable install's finder would
    # find this checkout's sbmgmt.telemetry for an older tree's sbmgmt)
    if not (Path(sbmgmt.__file__).parent / "telemetry").is_dir():  # a tree from before
        check_ns, recording = math.nan, False
    else:
        from sbmgmt.telemetry._switch import current

        current()
        check_ns = min(timeit.repeat(current, number=1_000_000, repeat=5)) * 1000
        recording = current() is not None
    with ManagementClient.from_connection_string(conn_str) as client:
        entity = client.entity(queue)
        for _ in range(200):  # warm: the connection, the links, the caches
            entity.peek_messages(1, 1)
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(requests):
            entity.peek_messages(1, 1)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"check_ns": check_ns, "cpu_us": cpu / requests * 1e6,
            "wall_us": wall / requests * 1e6, "recording": recording}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append",
                        help="a checkout whose sbmgmt the children import; repeatable "
                             "(default: this one)")
    parser.add_argument("--states", action="append", choices=STATES,
                        help="repeatable (default: all three)")
    parser.add_argument("--child", choices=STATES)
    parser.add_argument("--conn-str")
    parser.add_argument("--queue")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.conn_str, args.queue, args.requests)))
        return
    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    states = args.states or list(STATES)
    results: dict[tuple[Path, str], list[dict[str, float]]] = {
        (tree, state): [] for tree in trees for state in states}
    with FakeProcess() as fake:
        queue = fake.new_queue("telemetry")
        fake.fill(queue, 1, 256)
        for round_ in range(args.rounds):
            for tree in trees:
                for state in states:
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", state, "--conn-str",
                         fake.connection_string, "--queue", queue, "--requests",
                         str(args.requests)], capture_output=True, text=True, cwd=tree,
                        env={**os.environ, "PYTHONPATH": str(tree)}, check=True, timeout=600)
                    results[tree, state].append(json.loads(done.stdout))
                    print(f"round {round_ + 1} {tree} {state}: {done.stdout.strip()}",
                          file=sys.stderr)
    print("| tree | state | check (ns/call) | client CPU per call (us), median (min-max) "
          "| wall per call (us), median | recording |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for (tree, state), rows in results.items():
        cpu = [r["cpu_us"] for r in rows]
        check = min(r["check_ns"] for r in rows)
        print(f"| {tree.name} | {state} | {'-' if math.isnan(check) else f'{check:.0f}'} "
              f"| {statistics.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f}) "
              f"| {statistics.median(r['wall_us'] for r in rows):.1f} "
              f"| {rows[0]['recording']} |")


if __name__ == "__main__":
    main()
