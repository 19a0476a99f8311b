"""Import: send the messages of an export file (the format of
[sbmgmt.actions.export][sbmgmt.actions.export]) into an entity, unchanged or with
application properties set on the way.

Theory of operation
-------------------
The file is read line by line ([read_messages][sbmgmt.actions.export.read_messages]: every line is
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

from collections.abc import Iterable, Iterator, Mapping, Sized
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from sbmgmt.client import ManagementClient
from sbmgmt.errors import DuplicatesRefusedError, ServiceBusManagementError
from sbmgmt.message import Message, MessageId

from .contract import ActionReport, CancelToken, OnProgress, Outcome, Progress, is_cancelled
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


@dataclass(kw_only=True)
class ImportReport(ActionReport):
    """What an import did, counted message by message (``entity``: where they were sent;
    the outcome CANCELLED when a cancel stopped it before the end of the input).

    Attributes:
        sent: How many the service took.
        failed: The ones it did not take (or whose outcome was lost), each with why.
        left: The places (from 0) of the messages not sent by choice
            (``IfDuplicate.LEAVE``: the target detects duplicates).
        maybe_dropped: The MessageIds sent as they were into a target that detects
            duplicates (``IfDuplicate.SEND``): the service may have dropped them.
        new_message_ids: For each message sent with a new MessageId
            (``IfDuplicate.NEW_ID``), its place (from 0) and its new id.
    """

    sent: int = 0
    failed: list[ImportFailure] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    maybe_dropped: list[MessageId] = field(default_factory=list)
    new_message_ids: dict[int, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """``sent``, ``failed`` and ``left`` (out by choice)."""
        return {"sent": self.sent, "failed": len(self.failed), "left": len(self.left)}

    def details(self) -> dict[str, Any]:
        """Each failure (place from 0, MessageId, reason) and the duplicate choices' lists."""
        return {"failed": [{"index": f.index, "message_id": _id_text(f.message_id),
                            "reason": f.reason} for f in self.failed],
                "left": self.left,
                "maybe_dropped": [_id_text(i) for i in self.maybe_dropped],
                "new_message_ids": {str(i): new for i, new in self.new_message_ids.items()}}


def _id_text(message_id: MessageId | None) -> str | None:
    return None if message_id is None else str(message_id)


def _with_properties(message: Message, properties: Mapping[str, Any] | None) -> Message:
    if not properties:
        return message
    return message.model_copy(update={
        "application_properties": {**message.application_properties, **properties}})


def import_messages(client: ManagementClient, entity: str, messages: Iterable[Message], *,
                    set_properties: Mapping[str, Any] | None = None, batch_size: int = 100,
                    in_flight: int = 8, on_progress: OnProgress | None = None,
                    cancel: CancelToken | None = None,
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
        on_progress: Told after each batch settled: the messages done so far (of
            ``len(messages)`` when it has one), by outcome (``sent``, ``failed``,
            ``left``).
        cancel: Stops the import after the batches on the wire (the report's outcome is
            CANCELLED; nothing after them is sent).
        if_duplicate: What to do with the messages that have a MessageId when the target
            detects duplicates: refuse the import (the default), send each with a new
            MessageId, leave them out, or send them as they are.
        describe: Reads an entity's properties through the administration API, for the
            target's kind and duplicate detection; None: not read (unknown).
        check: The target's check, made already (the front ends check before they ask);
            None: made here, before anything is sent.

    Returns:
        The report (a cancellation is reported, never raised).

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
    report = ImportReport(entity=entity)
    total = len(messages) if isinstance(messages, Sized) else None
    outgoing = _outgoing(messages, report, set_properties,
                         if_duplicate if check.duplicate_detection else None)
    pending: list[tuple[int, Message, Future[None]]] = []
    with client.entity(entity).sender() as sender:
        while not is_cancelled(cancel):
            batch = list(islice(outgoing, batch_size))
            if not batch:
                break
            futures = sender.submit([message for _, message in batch])
            pending += [(index, message, future)
                        for (index, message), future in zip(batch, futures, strict=True)]
            if len(pending) >= batch_size * in_flight:
                _settle(pending[:batch_size], report, on_progress, total)
                del pending[:batch_size]
        else:
            report.outcome = Outcome.CANCELLED
        _settle(pending, report, on_progress, total)
    return report


def refuse_duplicates(check: TargetCheck, if_duplicate: IfDuplicate) -> None:
    """Refuse an import into a target that detects duplicates when no choice was made for
    the messages it may drop ([import_messages][sbmgmt.actions.import_file.import_messages]
    checks it first; the CLI before it asks).

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
            on_progress: OnProgress | None, total: int | None) -> None:
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
    if on_progress is not None and done:
        counts = report.counts()
        on_progress(Progress(sum(counts.values()), total, counts))
