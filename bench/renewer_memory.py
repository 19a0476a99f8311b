"""The lock renewer's memory: RSS growth for N registrations (Linux, /proc/self/status).

    python -m bench.renewer_memory --locks 100000

No network: the renewer's requests go to a submit function that never answers, and
every lock expires an hour from now, so nothing falls due while it is measured. Two
figures: the growth for the registrations alone (the tokens already exist: what the
renewer itself holds), and with the tokens created for them (what a caller that keeps
nothing else pays).
"""

from __future__ import annotations

import argparse
import gc
import time
import uuid
from concurrent.futures import Future
from datetime import datetime, timedelta, timezone
from typing import Any

from sbmgmt import LockRenewer


def rss_bytes() -> int:
    """This process's resident set size now."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status (not Linux?)")


def _never(_entity: str, _request: Any, _timeout: float) -> Future[Any]:
    return Future()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--locks", type=int, default=100_000)
    args = parser.parse_args()
    until = datetime.now(timezone.utc) + timedelta(hours=1)
    gc.collect()
    start = rss_bytes()
    tokens = [uuid.uuid4() for _ in range(args.locks)]
    gc.collect()
    with_tokens = rss_bytes()
    with LockRenewer(_never, max_renewal_duration=None) as renewer:
        began = time.perf_counter()
        for token in tokens:
            renewer.register("work", token, until)
        elapsed = time.perf_counter() - began
        gc.collect()
        registered = rss_bytes()
        assert renewer.stats().tracked == args.locks
    mib = 1024 * 1024
    print(f"{args.locks:,} registrations in {elapsed:.2f} s")
    print(f"RSS growth, registrations alone: {(registered - with_tokens) / mib:.1f} MiB "
          f"({(registered - with_tokens) / args.locks:.0f} bytes each)")
    print(f"RSS growth, tokens included:     {(registered - start) / mib:.1f} MiB")


if __name__ == "__main__":
    main()
