"""How many management requests per second the fake namespace answers.

The fake runs in its own process (a child Python that builds a namespace, locks a few
messages, prints the connection string and the lock tokens, and serves until its stdin
closes). sbmgmt's client pipelines requests against it (``entity.submit`` futures, a
window of 64+ in flight) and this prints requests/second for renew-lock (a few tokens
per request) and small peeks, as a table and as JSON: the rate seen by the client, and
the fake's capacity from its own CPU time (requests per CPU-second of the fake's
process, read from /proc), which does not depend on what else shares the machine.

    .venv/bin/python bench/fake_capacity.py --requests 20000 --window 128
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._measure import cpu_seconds  # noqa: E402
from sbmgmt import ManagementClient  # noqa: E402
from sbmgmt._protocol.retry import RetryPolicy  # noqa: E402
from sbmgmt.ops import peek_message, renew_lock  # noqa: E402

_CHILD = """
import json, sys
from datetime import timedelta
from fakes import FakeNamespace
from sbmgmt.message import Message
ns = FakeNamespace(accept_any_token=True)
ns.add_queue("q", lock_duration=timedelta(minutes=5))
ns.send("q", *(Message(body=b"x" * 64, message_id=str(i)) for i in range(200)))
tokens = [str(m.lock_token) for m in ns.receive_and_lock("q", {tokens})]
ns.start()
print(json.dumps({{"connection_string": ns.connection_string, "tokens": tokens}}), flush=True)
sys.stdin.read()
ns.stop()
"""


def _start_fake(tokens: int) -> tuple[subprocess.Popen[str], str, list[uuid.UUID]]:
    process = subprocess.Popen([sys.executable, "-c", _CHILD.format(tokens=tokens)], cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    return process, ready["connection_string"], [uuid.UUID(t) for t in ready["tokens"]]


def _measure(submit: Callable[[], Future[Any]], requests: int, pid: int) -> tuple[float, float]:
    """(requests per wall second, requests per CPU second of the fake) for one round."""
    cpu_before = cpu_seconds(pid)
    started = time.perf_counter()
    futures = [submit() for _ in range(requests)]
    wait(futures)
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu_before
    failed = sum(1 for f in futures if f.exception() is not None)
    if failed:
        raise SystemExit(f"{failed} of {requests} requests failed: {futures[0].exception()!r}")
    return requests / elapsed, requests / cpu if cpu > 0 else float("inf")


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=4, help="lock tokens per renew-lock")
    parser.add_argument("--peek", type=int, default=2, help="messages per peek")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many rounds")
    args = parser.parse_args(argv)
    process, connection_string, tokens = _start_fake(args.tokens)
    results: dict[str, dict[str, float]] = {}
    try:
        with ManagementClient.from_connection_string(
                connection_string, timeout=60, window=args.window,
                retry=RetryPolicy(max_attempts=1)) as client:
            queue = client.entity("q")
            renew = renew_lock.Request(lock_tokens=tuple(tokens))
            peek = peek_message.Request(from_sequence_number=1, message_count=args.peek)
            scenarios: dict[str, Callable[[], Future[Any]]] = {
                f"renew-lock ({args.tokens} tokens)": lambda: queue.submit(renew),
                f"peek ({args.peek} x 64 B)": lambda: queue.submit(peek),
            }
            _measure(scenarios[next(iter(scenarios))], 500, process.pid)   # warm up
            for name, submit in scenarios.items():
                rounds = [_measure(submit, args.requests, process.pid)
                          for _ in range(args.rounds)]
                results[name] = {"requests_per_second": max(r[0] for r in rounds),
                                 "requests_per_fake_cpu_second": max(r[1] for r in rounds)}
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    print(f"{'scenario':<28} {'requests/s':>12} {'per fake CPU-s':>15}   (window "
          f"{args.window}, {args.requests} requests, best of {args.rounds})")
    for name, rates in results.items():
        print(f"{name:<28} {rates['requests_per_second']:>12,.0f} "
              f"{rates['requests_per_fake_cpu_second']:>15,.0f}")
    print(json.dumps({"fake_capacity": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
