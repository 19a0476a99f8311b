"""Messages put into the explorer tests' namespace the way a user's would: over the
connection string (the management client's schedule-message for now, which enqueues at
once; azure-servicebus's receiver to dead-letter), so that the embedded fake and
``python -m fakes`` are filled alike."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from azure.servicebus import ServiceBusClient

from sbmgmt import ManagementClient, Message

WAIT = 5


def send(client: ManagementClient, path: str, *messages: Message) -> list[int]:
    """Enqueue ``messages`` now; their sequence numbers."""
    numbers: list[int] = []
    for start in range(0, len(messages), 200):
        numbers += client.entity(path).schedule_messages(messages[start:start + 200],
                                                         datetime.now(timezone.utc))
    return numbers


def settle_received(connection_string: str, queue: str, count: int,
                    settle: Callable[[Any, Any], None]) -> list[int]:
    """Receive ``count`` messages of ``queue`` with the official SDK, call ``settle(receiver,
    message)`` on each; their sequence numbers, sorted."""
    with ServiceBusClient.from_connection_string(connection_string, retry_total=0) as sdk, \
            sdk.get_queue_receiver(queue, max_wait_time=WAIT) as receiver:
        received: list[Any] = []
        while len(received) < count:
            batch = receiver.receive_messages(count - len(received), max_wait_time=WAIT)
            assert batch, f"only {len(received)} of {count} messages came from {queue}"
            received += batch
        for message in received:
            settle(receiver, message)
        return sorted(message.sequence_number for message in received)


def dead_letter(connection_string: str, queue: str, count: int, reason: str,
                description: str) -> None:
    """Receive ``count`` messages of ``queue`` and dead-letter them with a reason."""
    settle_received(connection_string, queue, count, lambda receiver, message: (
        receiver.dead_letter_message(message, reason=reason, error_description=description)))
