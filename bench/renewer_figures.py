"""The lock renewer at scale: N message locks kept alive through rounds of renewal.

    python -m bench.renewer_figures --locks 10000 --latency-ms 5 --rounds 3

The fake namespace runs in this process with a movable clock; each round moves the clock
to the renewal point and measures, in real time, how long the renewer takes to renew every
lock, with how many requests.
"""

from __future__ import annotations

import argparse
import time
from datetime import timedelta

from fakes import FakeClock, FakeNamespace
from sbmgmt import LockRenewer, ManagementClient, Message

LOCK = timedelta(seconds=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--locks", type=int, default=10_000)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with FakeNamespace(clock=FakeClock()) as fake:
        fake.add_queue("work", lock_duration=LOCK)
        fake.send("work", *(Message(body=b"x", message_id=str(i)) for i in range(args.locks)))
        locked = fake.receive_and_lock("work", args.locks)
        fake.faults.latency(args.latency_ms / 1000)
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=30) as client, \
                LockRenewer(client, clock=fake.clock.now, max_renewal_duration=None) as renewer:
            fake.clock.on_advance(renewer.wake)
            for message in locked:
                renewer.register("work", message)
            print(f"{args.locks} locks, {args.latency_ms:g} ms reply latency, "
                  f"lock duration {LOCK.total_seconds():g} s")
            for n in range(1, args.rounds + 1):
                before = renewer.stats()
                started = time.perf_counter()
                fake.clock.advance(LOCK.total_seconds() * 0.7)
                while renewer.stats().tokens_renewed - before.tokens_renewed < args.locks:
                    time.sleep(0.005)
                elapsed = time.perf_counter() - started
                after = renewer.stats()
                print(f"round {n}: {args.locks} locks renewed in {elapsed * 1000:.0f} ms "
                      f"with {after.renew_requests - before.renew_requests} requests "
                      f"({args.locks / elapsed:,.0f} locks/s); lost so far: {after.lost_total}")
            fake.clock.remove_listener(renewer.wake)
            print(f"tracked {renewer.stats().tracked}, worst lateness "
                  f"{renewer.stats().max_lateness:.3f} s")


if __name__ == "__main__":
    main()
