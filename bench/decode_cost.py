"""What one peeked 1 KB message costs to decode: sbmgmt against the official SDK.

Builds one peek reply of 250 messages (1 KB body, a message id, subject, content type,
three application properties, a partition key, sequence number and enqueued time) and
times, per message, the whole reply path of each library:

- ours: ``reply_parts`` -> ``reply_of`` -> ``decode_reply`` (a tuple of ``ReceivedMessage``,
  decoded as their fields are read: ``sbmgmt/_messages/lazy_decoder.py``);
- the SDK: its pure-Python ``decode_payload`` of the reply, then of each message, and a
  ``ServiceBusReceivedMessage`` for each (what its ``peek_messages`` does with a reply).

Best of several ``timeit`` repeats, with the garbage collector off (timeit's default) and
on, since collections are a large share of allocation-heavy decoding.

Then the lazy decoding against the eager one, in CPU time (``time.process_time``, best of
several repeats: the machine may be shared), per message of the same reply:

- ``peek_message.decode`` alone (``decode_message_list``), reading only
  ``sequence_number`` (what a page-after-page loop reads), reading every field, and the
  eager decode (``ReceivedMessage.from_bytes`` of each message, as before the lazy
  decoding);
- the whole reply path as above, the same three ways, and the SDK's.

``--instructions`` counts instructions instead (``valgrind --tool=callgrind``, which must
be installed): each scenario runs in a child under callgrind, once with no round and once
with ``--rounds`` rounds, and the difference is divided by the messages decoded.

    .venv/bin/python bench/decode_cost.py
    .venv/bin/python bench/decode_cost.py --instructions [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusReceivedMessage  # noqa: E402
from azure.servicebus._pyamqp._decode import decode_payload  # noqa: E402

from sbmgmt.amqp.envelope import encode_reply, reply_of, reply_parts  # noqa: E402
from sbmgmt.message import ReceivedMessage  # noqa: E402
from sbmgmt.ops import _messages, decode_reply, peek_message  # noqa: E402
from sbmgmt.ops._messages import encoded_message_list  # noqa: E402

PAGE = 250
_REPEATS = 7


def _reply() -> bytes:
    enqueued = datetime(2026, 11, 22, tzinfo=timezone.utc)
    messages = [
        ReceivedMessage(body=b"x" * 1024, message_id=f"m-{n}", subject="order",
                        content_type="application/octet-stream", partition_key="p",
                        application_properties={"n": n, "kind": "test", "weight": 1.5},
                        sequence_number=n, enqueued_time=enqueued)
        for n in range(1, PAGE + 1)
    ]
    return encode_reply(uuid.uuid4(), 200,
                        {"messages": encoded_message_list([m.to_bytes() for m in messages])})


def _ours(raw: bytes) -> Callable[[], object]:
    request = peek_message.Request(from_sequence_number=1, message_count=PAGE)

    def decode() -> object:
        return decode_reply(request, reply_of(*reply_parts(raw)))

    return decode


def _sdk(raw: bytes) -> Callable[[], object]:
    def decode() -> object:
        body: Any = decode_payload(memoryview(raw)).value
        return [ServiceBusReceivedMessage(decode_payload(memoryview(entry[b"message"])),
                                          receiver=None, is_peeked_message=True)
                for entry in body[b"messages"]]

    return decode


def _per_message(decode: Callable[[], object], *, collect: bool) -> float:
    setup = "import gc; gc.enable()" if collect else "pass"
    best = min(timeit.repeat(decode, setup=setup, number=20, repeat=_REPEATS))
    return best / 20 / PAGE * 1e6


# --- the lazy decoding against the eager one ------------------------------------

_NAMES = tuple(ReceivedMessage.model_fields)
_CPU_ROUNDS = 10


@contextlib.contextmanager
def _eager() -> Iterator[None]:
    """decode_message_list decoding each message at once, as before the lazy decoding."""
    lazy = _messages._decode_lazily
    _messages._decode_lazily = lambda raw, token: ReceivedMessage.from_bytes(raw, lock_token=token)
    try:
        yield
    finally:
        _messages._decode_lazily = lazy


def _read(messages: tuple[ReceivedMessage, ...], names: tuple[str, ...]) -> None:
    for message in messages:
        for name in names:
            getattr(message, name)


def _scenarios(raw: bytes) -> dict[str, Callable[[], object]]:
    """What decodes the reply of 250 once, by name."""
    _, properties, body = reply_parts(raw)
    request = peek_message.Request(from_sequence_number=1, message_count=PAGE)

    def decode() -> tuple[ReceivedMessage, ...]:
        return peek_message.decode(200, properties, body).messages

    def eagerly(run: Callable[[], tuple[ReceivedMessage, ...]]) -> Callable[[], object]:
        def call() -> None:
            with _eager():
                _read(run(), ("sequence_number",))
        return call

    def reply() -> tuple[ReceivedMessage, ...]:
        return decode_reply(request, reply_of(*reply_parts(raw))).messages

    return {
        "decode: lazy, sequence_number read": lambda: _read(decode(), ("sequence_number",)),
        "decode: lazy, every field read": lambda: _read(decode(), _NAMES),
        "decode: eager (from_bytes)": eagerly(decode),
        "reply path: lazy, sequence_number read": lambda: _read(reply(), ("sequence_number",)),
        "reply path: lazy, every field read": lambda: _read(reply(), _NAMES),
        "reply path: eager (from_bytes)": eagerly(reply),
        "azure-servicebus (reply path)": _sdk(raw),
    }


def _cpu_per_message(run: Callable[[], object]) -> float:
    """Best CPU time of several repeats, the collector on, in µs per message."""
    run()
    best = float("inf")
    for _ in range(_REPEATS):
        start = time.process_time()
        for _ in range(_CPU_ROUNDS):
            run()
        best = min(best, time.process_time() - start)
    return best / _CPU_ROUNDS / PAGE * 1e6


def _instructions(scenario: str, rounds: int) -> int:
    """Instructions callgrind counts for ``rounds`` rounds of ``scenario`` in a child."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             __file__, "--scenario", scenario, "--rounds", str(rounds)],
            check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        for line in out.read_text().splitlines():
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("callgrind wrote no totals")


def _run_scenario(scenario: str, rounds: int) -> None:
    run = _scenarios(_reply())[scenario]
    run()  # warm: caches, the first messages' allocations
    gc.disable()
    for _ in range(rounds):
        run()


def main() -> int:
    """Print microseconds per message for both libraries, collector off and on; then the
    lazy decoding against the eager one, in CPU time or (``--instructions``) instructions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions with valgrind --tool=callgrind")
    parser.add_argument("--rounds", type=int, default=2,
                        help="replies decoded per scenario under callgrind")
    parser.add_argument("--scenario", help=argparse.SUPPRESS)  # a child under callgrind
    args = parser.parse_args()
    if args.scenario is not None:
        _run_scenario(args.scenario, args.rounds)
        return 0
    raw = _reply()
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("valgrind is not installed", file=sys.stderr)
            return 2
        print(f"{'instructions per 1 KB message (reply of 250)':<44} {'count':>10}")
        for name in _scenarios(raw):
            base = _instructions(name, 0)
            counted = _instructions(name, args.rounds)
            print(f"{name:<44} {(counted - base) / args.rounds / PAGE:>10,.0f}")
        return 0
    print(f"{'µs per 1 KB message (reply of 250)':<36} {'gc off':>8} {'gc on':>8}")
    for name, decode in (("sbmgmt", _ours(raw)), ("azure-servicebus", _sdk(raw))):
        print(f"{name:<36} {_per_message(decode, collect=False):>8.1f} "
              f"{_per_message(decode, collect=True):>8.1f}")
    print()
    print(f"{'CPU µs per 1 KB message (reply of 250)':<44} {'best':>8}")
    for name, run in _scenarios(raw).items():
        print(f"{name:<44} {_cpu_per_message(run):>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
