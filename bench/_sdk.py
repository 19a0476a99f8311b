"""The official azure-servicebus SDK doing the same work, the way its users do it.

- renew: ``receiver.renew_message_lock(message)`` per message, as its
  AutoLockRenewer does; sequentially, and from a pool of 10 threads. The sync
  receiver is not safe for concurrent management calls (it fails with
  ``IndexError`` inside its link handling), so each pool thread uses its own
  receiver and renews the messages that receiver holds;
- independent requests: ``peek_messages(1, sequence_number=n)`` one after
  another, and with the asyncio client under ``asyncio.gather``;
- bulk peek: ``peek_messages(250, sequence_number=next)`` page after page;
- purge: what a Python user does today (7.15 has no batch delete): a receiver in
  receive-and-delete mode, ``receive_messages(max_message_count=250)`` in a loop. Such a
  loop stops on a call that returns nothing (a wait of ``max_wait_time``); the clock here
  stops at the last message instead, so that wait is not counted (the SDK's best case).

Connections and links are opened (and the messages to renew received) before the
clock starts.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from azure.servicebus import ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiveMode
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient

from ._measure import rate

__all__ = [
    "PURGE_PAGE",
    "peek_pages",
    "peek_singles_gather",
    "peek_singles_sequential",
    "receive_and_delete",
    "renew_pool",
    "renew_sequential",
]

_RETRY_TOTAL = 1
_RECEIVE_WAIT = 10.0
_POOL = 10
PURGE_PAGE = 250
"""Messages per ``receive_messages`` call in the receive-and-delete loop."""
_RECEIVE_WAIT_PER_CALL = 1.0


def _client(conn_str: str) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(conn_str, retry_total=_RETRY_TOTAL)


def _receive(receiver: Any, count: int) -> list[ServiceBusReceivedMessage]:
    messages: list[ServiceBusReceivedMessage] = []
    while len(messages) < count:
        batch = receiver.receive_messages(
            max_message_count=count - len(messages), max_wait_time=_RECEIVE_WAIT
        )
        if not batch:
            raise RuntimeError(f"the SDK received {len(messages)} of {count} messages")
        messages.extend(batch)
    return messages


def renew_sequential(conn_str: str, queue: str, count: int, reps: int) -> list[float]:
    """Locks renewed per second, one ``renew_message_lock`` after another."""
    with _client(conn_str) as client, client.get_queue_receiver(queue) as receiver:
        messages = _receive(receiver, count)
        receiver.renew_message_lock(messages[0])

        def work() -> None:
            for message in messages:
                receiver.renew_message_lock(message)

        return [rate(count, work) for _ in range(reps)]


def renew_pool(conn_str: str, queue: str, count: int, reps: int) -> list[float]:
    """Locks renewed per second by 10 threads, each renewing its own receiver's messages."""
    share = max(1, count // _POOL)

    def hold(receiver: Any) -> tuple[Any, list[ServiceBusReceivedMessage]]:
        receiver.__enter__()
        messages = _receive(receiver, share)
        receiver.renew_message_lock(messages[0])
        return receiver, messages

    def renew_all(item: tuple[Any, list[ServiceBusReceivedMessage]]) -> None:
        receiver, messages = item
        for message in messages:
            receiver.renew_message_lock(message)

    def close(receiver: Any) -> None:
        receiver.__exit__(None, None, None)

    # The receivers open and close in the pool too (each open is about 0.5 s of the SDK's
    # frame-by-frame pacing: ten in a row made this set-up most of the quick bench's time).
    with _client(conn_str) as client, ThreadPoolExecutor(_POOL) as pool:
        receivers = [client.get_queue_receiver(queue) for _ in range(_POOL)]
        try:
            held = list(pool.map(hold, receivers))

            def work() -> None:
                list(pool.map(renew_all, held))

            return [rate(share * _POOL, work) for _ in range(reps)]
        finally:
            list(pool.map(close, receivers))


def peek_singles_sequential(conn_str: str, queue: str, count: int, reps: int) -> list[float]:
    """Single-message peeks per second, one after another."""
    with _client(conn_str) as client, client.get_queue_receiver(queue) as receiver:
        receiver.peek_messages(1, sequence_number=1)

        def work() -> None:
            for n in range(1, count + 1):
                receiver.peek_messages(1, sequence_number=n)

        return [rate(count, work) for _ in range(reps)]


def peek_singles_gather(conn_str: str, queue: str, count: int, reps: int) -> list[float]:
    """Single-message peeks per second, all started at once with ``asyncio.gather``."""

    async def main() -> list[float]:
        client = AsyncServiceBusClient.from_connection_string(
            conn_str, retry_total=_RETRY_TOTAL
        )
        async with client, client.get_queue_receiver(queue) as receiver:
            await receiver.peek_messages(1, sequence_number=1)
            loop = asyncio.get_running_loop()
            samples = []
            for _ in range(reps):
                started = loop.time()
                await asyncio.gather(*(
                    receiver.peek_messages(1, sequence_number=n) for n in range(1, count + 1)
                ))
                samples.append(count / (loop.time() - started))
            return samples

    return asyncio.run(main())


def peek_pages(conn_str: str, queue: str, count: int, page: int, reps: int) -> list[float]:
    """Messages peeked per second, page after page from sequence number 1."""
    with _client(conn_str) as client, client.get_queue_receiver(queue) as receiver:
        receiver.peek_messages(1, sequence_number=1)

        def work() -> None:
            seen = 0
            next_number = 1
            while seen < count:
                batch = receiver.peek_messages(
                    min(page, count - seen), sequence_number=next_number
                )
                if not batch:
                    raise RuntimeError(f"the SDK peeked {seen} of {count} messages")
                seen += len(batch)
                next_number = (batch[-1].sequence_number or 0) + 1

        return [rate(count, work) for _ in range(reps)]


def receive_and_delete(conn_str: str, queue: str, count: int) -> float:
    """Messages deleted per second by a receive-and-delete loop that empties a queue
    holding ``count`` (timed to its last message: the final empty wait is not counted)."""
    with _client(conn_str) as client, client.get_queue_receiver(
            queue, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as receiver:
        receiver.peek_messages(1, sequence_number=1)  # connection and links before the clock
        received = 0

        def work() -> None:
            nonlocal received
            while received < count:
                batch = receiver.receive_messages(max_message_count=PURGE_PAGE,
                                                  max_wait_time=_RECEIVE_WAIT_PER_CALL)
                if not batch:
                    break
                received += len(batch)

        per_second = rate(count, work)
    if received != count:
        raise RuntimeError(f"the SDK received {received} of {count} messages")
    return per_second
