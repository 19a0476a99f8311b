"""What one peeked 1 KB message costs to decode: sbmgmt against the official SDK.

Builds one peek reply of 250 messages (1 KB body, a message id, subject, content type,
three application properties, a partition key, sequence number and enqueued time) and
times, per message, the whole reply path of each library:

- ours: ``reply_parts`` -> ``reply_of`` -> ``decode_reply`` (a tuple of ``ReceivedMessage``);
- the SDK: its pure-Python ``decode_payload`` of the reply, then of each message, and a
  ``ServiceBusReceivedMessage`` for each (what its ``peek_messages`` does with a reply).

Best of several ``timeit`` repeats, with the garbage collector off (timeit's default) and
on, since collections are a large share of allocation-heavy decoding.

    .venv/bin/python bench/decode_cost.py
"""

from __future__ import annotations

import sys
import timeit
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusReceivedMessage  # noqa: E402
from azure.servicebus._pyamqp._decode import decode_payload  # noqa: E402

from sbmgmt.amqp.envelope import decode_reply, encode_reply, reply_of, reply_parts  # noqa: E402
from sbmgmt.message import ReceivedMessage  # noqa: E402
from sbmgmt.ops import peek_message  # noqa: E402
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


def main() -> int:
    """Print microseconds per message for both libraries, collector off and on."""
    raw = _reply()
    print(f"{'µs per 1 KB message (reply of 250)':<36} {'gc off':>8} {'gc on':>8}")
    for name, decode in (("sbmgmt", _ours(raw)), ("azure-servicebus", _sdk(raw))):
        print(f"{name:<36} {_per_message(decode, collect=False):>8.1f} "
              f"{_per_message(decode, collect=True):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
