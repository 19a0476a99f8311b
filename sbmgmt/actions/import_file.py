"""Import: send the messages of an export file (:mod:`sbmgmt.actions.export`'s format)
into an entity, unchanged or with application properties set on the way.

Theory of operation
-------------------
The file is read line by line (:func:`sbmgmt.actions.export.read_messages`: every line is
checked as it is read, and a bad one stops the import before anything after it is sent).
Messages go out on one sender in batches of ``batch_size``; ``in_flight`` batches are on
the wire at once (the sender's futures), so the speed holds at a distance. Each message's
outcome is counted: sent, or failed with the service's reason. A message whose outcome was
lost with the connection may have been stored; it keeps its ``MessageId``, so a target with
duplicate detection keeps one copy if the import is run again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from sbmgmt.client import ManagementClient
from sbmgmt.errors import ServiceBusManagementError
from sbmgmt.message import Message, MessageId

__all__ = ["ImportFailure", "ImportReport", "import_messages"]


@dataclass(frozen=True)
class ImportFailure:
    """A message that was not sent, and why.

    Attributes:
        index: Its place in the input, counted from 0.
        message_id: Its MessageId.
        reason: The service's error (or the lost connection).
    """

    index: int
    message_id: MessageId | None
    reason: str


@dataclass
class ImportReport:
    """What an import did, counted message by message.

    Attributes:
        entity: The entity the messages were sent to.
        sent: How many the service took.
        failed: The ones it did not take (or whose outcome was lost), each with why.
        cancelled: Whether the import was cancelled before the end of the input.
    """

    entity: str
    sent: int = 0
    failed: list[ImportFailure] = field(default_factory=list)
    cancelled: bool = False


def _with_properties(message: Message, properties: Mapping[str, Any] | None) -> Message:
    if not properties:
        return message
    return message.model_copy(update={
        "application_properties": {**message.application_properties, **properties}})


def import_messages(client: ManagementClient, entity: str, messages: Iterable[Message], *,
                    set_properties: Mapping[str, Any] | None = None, batch_size: int = 100,
                    in_flight: int = 8, progress: Callable[[int], None] | None = None,
                    cancel: threading.Event | None = None) -> ImportReport:
    """Send messages (an export file's, read by
    [read_messages][sbmgmt.actions.export.read_messages]) to ``entity``.

    Args:
        client: The namespace's client.
        entity: The queue or topic to send them to.
        messages: The messages, in order.
        set_properties: Application properties to set (or replace) on every message.
        batch_size: Messages per batch, 1 to 1,000.
        in_flight: Batches on the wire at once, 1 to 64.
        progress: Called with the number of messages done so far after each batch.
        cancel: Set it to stop after the batches on the wire.

    Returns:
        The report.

    Raises:
        ValueError: ``batch_size`` or ``in_flight`` out of range.
        sbmgmt.errors.ExportFormatError: A line of the file is not a message of the format
            (raised by the reader when it is reached; what came before was sent).
        sbmgmt.errors.ServiceBusManagementError: The sender could not be attached.
    """
    if not 1 <= batch_size <= 1000:
        raise ValueError(f"batch_size must be 1 to 1000, got {batch_size}")
    if not 1 <= in_flight <= 64:
        raise ValueError(f"in_flight must be 1 to 64, got {in_flight}")
    report = ImportReport(entity)
    source = iter(messages)
    index = 0
    pending: list[tuple[int, Message, Future[None]]] = []
    with client.entity(entity).sender() as sender:
        while not (cancel is not None and cancel.is_set()):
            batch = [_with_properties(m, set_properties) for m in islice(source, batch_size)]
            if not batch:
                break
            futures = sender.submit(batch)
            pending += [(index + i, m, f)
                        for i, (m, f) in enumerate(zip(batch, futures, strict=True))]
            index += len(batch)
            if len(pending) >= batch_size * in_flight:
                _settle(pending[:batch_size], report, progress)
                del pending[:batch_size]
        else:
            report.cancelled = True
        _settle(pending, report, progress)
    return report


def _settle(done: list[tuple[int, Message, Future[None]]], report: ImportReport,
            progress: Callable[[int], None] | None) -> None:
    wait_all([future for _, _, future in done])
    for index, message, future in done:
        error = future.exception()
        if error is None:
            report.sent += 1
        elif isinstance(error, ServiceBusManagementError):
            report.failed.append(ImportFailure(index, message.message_id,
                                               f"{type(error).__name__}: {error}"))
        else:
            raise error
    if progress is not None and done:
        progress(report.sent + len(report.failed))
