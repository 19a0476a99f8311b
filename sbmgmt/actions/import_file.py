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

Before anything is sent the target is checked
([check_target][sbmgmt.actions.targets.check_target]: not a subscription or a dead-letter
queue, it exists, it can be sent to, its duplicate detection). A target that detects
duplicates drops a message whose MessageId it saw within its window, and which ids it saw
cannot be read: every message of the file that has a MessageId may be dropped, so the import
is refused unless ``if_duplicate`` says what to do with them
([IfDuplicate][sbmgmt.actions.targets.IfDuplicate]).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from sbmgmt.client import ManagementClient
from sbmgmt.errors import DuplicatesRefusedError, ServiceBusManagementError
from sbmgmt.message import Message, MessageId

from .targets import Describe, IfDuplicate, TargetCheck, check_target, with_new_message_id

__all__ = ["ImportFailure", "ImportReport", "import_messages", "refuse_duplicates"]


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
        left: The places (from 0) of the messages not sent by choice
            (``IfDuplicate.LEAVE``: the target detects duplicates).
        maybe_dropped: The MessageIds sent as they were into a target that detects
            duplicates (``IfDuplicate.SEND``): the service may have dropped them.
        new_message_ids: For each message sent with a new MessageId
            (``IfDuplicate.NEW_ID``), its place (from 0) and its new id.
    """

    entity: str
    sent: int = 0
    failed: list[ImportFailure] = field(default_factory=list)
    cancelled: bool = False
    left: list[int] = field(default_factory=list)
    maybe_dropped: list[MessageId] = field(default_factory=list)
    new_message_ids: dict[int, str] = field(default_factory=dict)


def _with_properties(message: Message, properties: Mapping[str, Any] | None) -> Message:
    if not properties:
        return message
    return message.model_copy(update={
        "application_properties": {**message.application_properties, **properties}})


def import_messages(client: ManagementClient, entity: str, messages: Iterable[Message], *,
                    set_properties: Mapping[str, Any] | None = None, batch_size: int = 100,
                    in_flight: int = 8, progress: Callable[[int], None] | None = None,
                    cancel: threading.Event | None = None,
                    if_duplicate: IfDuplicate = IfDuplicate.REFUSE,
                    describe: Describe | None = None,
                    check: TargetCheck | None = None) -> ImportReport:
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
        if_duplicate: What to do with the messages that have a MessageId when the target
            detects duplicates: refuse the import (the default), send each with a new
            MessageId, leave them out, or send them as they are.
        describe: Reads an entity's properties through the administration API, for the
            target's kind and duplicate detection; None: not read (unknown).
        check: The target's check, made already (the front ends check before they ask);
            None: made here, before anything is sent.

    Returns:
        The report.

    Raises:
        ValueError: ``batch_size`` or ``in_flight`` out of range.
        sbmgmt.errors.WrongEntityError: The target is a subscription or a dead-letter queue.
        sbmgmt.errors.NotFoundError: The target does not exist.
        sbmgmt.errors.DuplicatesRefusedError: The target detects duplicates and
            ``if_duplicate`` is ``REFUSE`` (nothing was sent).
        sbmgmt.errors.ExportFormatError: A line of the file is not a message of the format
            (raised by the reader when it is reached; what came before was sent).
        sbmgmt.errors.ServiceBusManagementError: The sender could not be attached.
    """
    if not 1 <= batch_size <= 1000:
        raise ValueError(f"batch_size must be 1 to 1000, got {batch_size}")
    if not 1 <= in_flight <= 64:
        raise ValueError(f"in_flight must be 1 to 64, got {in_flight}")
    if check is None:
        check = check_target(client, entity, describe=describe)
    refuse_duplicates(check, if_duplicate)
    report = ImportReport(entity)
    outgoing = _outgoing(messages, report, set_properties,
                         if_duplicate if check.duplicate_detection else None)
    pending: list[tuple[int, Message, Future[None]]] = []
    with client.entity(entity).sender() as sender:
        while not (cancel is not None and cancel.is_set()):
            batch = list(islice(outgoing, batch_size))
            if not batch:
                break
            futures = sender.submit([message for _, message in batch])
            pending += [(index, message, future)
                        for (index, message), future in zip(batch, futures, strict=True)]
            if len(pending) >= batch_size * in_flight:
                _settle(pending[:batch_size], report, progress)
                del pending[:batch_size]
        else:
            report.cancelled = True
        _settle(pending, report, progress)
    return report


def refuse_duplicates(check: TargetCheck, if_duplicate: IfDuplicate) -> None:
    """Refuse an import into a target that detects duplicates when no choice was made for
    the messages it may drop (:func:`import_messages` checks it first; the CLI before it
    asks).

    Args:
        check: The target's check.
        if_duplicate: The choice made.

    Raises:
        sbmgmt.errors.DuplicatesRefusedError: The target detects duplicates and
            ``if_duplicate`` is ``REFUSE``.
    """
    if check.duplicate_detection and if_duplicate is IfDuplicate.REFUSE:
        raise DuplicatesRefusedError(
            f"{check.path} detects duplicates: it drops a message whose MessageId it saw "
            "within its window, and which ids it saw cannot be read; nothing was sent. Choose "
            "what to do with the messages that have one: a new MessageId (the old one kept "
            "in OriginalMessageId), leave them out, or send them as they are")


def _outgoing(messages: Iterable[Message], report: ImportReport,
              set_properties: Mapping[str, Any] | None, if_duplicate: IfDuplicate | None,
              ) -> Iterator[tuple[int, Message]]:
    """Each message to send with its place in the input; with ``if_duplicate`` (the target
    detects duplicates) those that have a MessageId are left out, renamed or noted."""
    for index, message in enumerate(messages):
        message_id = message.message_id
        if if_duplicate is not None and message_id is not None:
            if if_duplicate is IfDuplicate.LEAVE:
                report.left.append(index)
                continue
            if if_duplicate is IfDuplicate.NEW_ID:
                message = with_new_message_id(message)
                assert isinstance(message.message_id, str)
                report.new_message_ids[index] = message.message_id
            else:
                report.maybe_dropped.append(message_id)
        yield index, _with_properties(message, set_properties)


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
