"""``python -m bench [--quick]``: sbmgmt against the official SDK on the fake namespace.

Prints a Markdown table (median, min-max of each figure over the repetitions, the
ratio ours / theirs and the issue's target) and writes the same as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time
from pathlib import Path

from ._report import table, to_json, write_json
from ._scenarios import FULL, QUICK, SCENARIOS, run

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="smaller SDK samples and peek volume (under two minutes)")
    parser.add_argument("--json", type=Path, default=Path("bench-results.json"),
                        help="where to write the JSON results (default: %(default)s)")
    parser.add_argument("--latency-ms", type=float, action="append", dest="latencies",
                        help="injected reply latency; repeatable (default: 0, 5 and 20)")
    parser.add_argument("--only", action="append", choices=SCENARIOS,
                        help="run only these scenarios; repeatable (default: all)")
    for field in dataclasses.fields(FULL):
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=int, default=None,
                            help=f"override the size {field.name}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the bench; 0 when it completed (targets missed are reported, not failed)."""
    args = _parser().parse_args(argv)
    sizes = QUICK if args.quick else FULL
    overrides = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(sizes)
        if getattr(args, field.name) is not None
    }
    sizes = dataclasses.replace(sizes, **overrides)
    latencies = args.latencies or [0.0, 5.0, 20.0]
    only = set(args.only or SCENARIOS)
    started = time.perf_counter()

    def say(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {text}", file=sys.stderr, flush=True)

    rows, cpus = run(sizes, latencies, only, say)
    command = "python -m bench " + shlex.join(argv if argv is not None else sys.argv[1:])
    write_json(to_json(rows, sizes, command.strip(), cpus), args.json)
    print(table(rows))
    say(f"done; JSON in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
