"""Writing: each Spark task schedules its rows in pipelined schedule-message batches.

Exactly once, per row, across task retries:

- every row gets a message-id that is the same in every attempt of its task (the row's
  own ``message_id``, else a uuid5 of the write's id, the partition and the row's index);
- the driver notes the entity's last sequence number when the write starts (the
  *mark*); everything the write schedules gets a higher one. A retried attempt first
  peeks the entity from the mark on and skips the rows whose message-ids it finds
  (still scheduled, or enqueued and not yet received);
- a row consumed by a receiver between the attempts cannot be seen by a peek: an
  entity with duplicate detection (``RequiresDuplicateDetection``) drops the retry's
  copy, because it has the same message-id. With ``duplicateDetection=true`` the
  writer relies on that alone and skips the scan;
- a failing attempt raises :class:`ScheduleWriteError`, which says which rows were
  scheduled (with their sequence numbers) and which are in an unknown state (a batch
  whose reply was lost may have been applied).

A streaming write (``df.writeStream.format("servicebus")``) runs the same code once per
micro-batch: Spark makes a new writer, and so a new mark, for every micro-batch, and
the write's id is derived from the query's id and the batch id, which a restarted
query keeps, so a re-run micro-batch gives every row the message-id it had before.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    MapType,
    StringType,
    StructType,
    TimestampType,
)

from ..client import EntityClient
from ..errors import (
    ConnectionLostError,
    OperationError,
    ServerBusyError,
    ServiceBusManagementError,
)
from ..message import Message, id_text
from ..ops import schedule_message
from ._options import MAX_SEQUENCE_NUMBER, SparkOptionError, WriteOptions
from ._paging import EntityPager, peek_range
from ._planning import SequenceRange

__all__ = [
    "WRITE_COLUMNS",
    "ScheduleWriteError",
    "ScheduledRows",
    "ServiceBusStreamWriter",
    "ServiceBusWriter",
    "check_write_schema",
    "message_from_row",
    "row_message_id",
    "stream_write_id",
]

_log = logging.getLogger("sbmgmt.spark")

#: Batches one task keeps pending at once.
_IN_FLIGHT = 4
#: Page size of a retried attempt's scan for what earlier attempts scheduled.
_SCAN_PAGE = 250
_TEXT_COLUMNS = ("message_id", "session_id", "subject", "content_type", "correlation_id")

#: The columns the writer reads: name -> accepted Spark types. Only ``body`` is required.
WRITE_COLUMNS: dict[str, tuple[DataType, ...]] = {
    "body": (BinaryType(), StringType()),
    **{name: (StringType(),) for name in _TEXT_COLUMNS},
    "application_properties": (MapType(StringType(), StringType()),),
    "scheduled_enqueue_time": (TimestampType(),),
}


def _same_type(actual: DataType, expected: DataType) -> bool:
    if isinstance(expected, MapType):
        return (isinstance(actual, MapType) and actual.keyType == expected.keyType
                and actual.valueType == expected.valueType)
    return actual == expected


def check_write_schema(schema: StructType) -> None:
    """Raise :class:`SparkOptionError` unless every column is one the writer knows."""
    problems = []
    names = set()
    for column in schema.fields:
        names.add(column.name)
        accepted = WRITE_COLUMNS.get(column.name)
        if accepted is None:
            problems.append(f"unknown column {column.name!r}")
        elif not any(_same_type(column.dataType, t) for t in accepted):
            wanted = " or ".join(t.simpleString() for t in accepted)
            problems.append(f"column {column.name!r} is {column.dataType.simpleString()}, "
                            f"expected {wanted}")
    if "body" not in names:
        problems.append("column 'body' (binary or string) is required")
    if problems:
        raise SparkOptionError(
            "cannot write this DataFrame to servicebus: " + "; ".join(problems)
            + f". Writable columns: {', '.join(WRITE_COLUMNS)}")


def row_message_id(write_id: uuid.UUID, partition: int, index: int) -> str:
    """The message-id of a row without one: stable across attempts of the same task."""
    return str(uuid.uuid5(write_id, f"{partition}/{index}"))


#: The uuid5 namespace of streaming writes' ids.
_STREAM_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "sbmgmt.spark/writeStream")


def stream_write_id(query_id: str, batch_id: int) -> uuid.UUID:
    """The write id of one micro-batch: the same in every run of the query."""
    return uuid.uuid5(_STREAM_NAMESPACE, f"{query_id}/{batch_id}")


def _task() -> tuple[int, int, Any]:
    """This Spark task's partition, attempt and context (0, 0, None outside Spark)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return 0, 0, None
    return context.partitionId(), context.attemptNumber(), context


def message_from_row(row: Any, message_id: str, now: datetime) -> Message:
    """The message for one row (a ``Row`` or mapping); a null time means ``now``."""
    values = row.asDict() if hasattr(row, "asDict") else dict(row)
    body = values.get("body")
    scheduled = values.get("scheduled_enqueue_time") or now
    if scheduled.tzinfo is None:
        scheduled = scheduled.astimezone(timezone.utc)
    return Message(
        body=b"" if body is None else body.encode() if isinstance(body, str) else bytes(body),
        message_id=values.get("message_id") or message_id,
        session_id=values.get("session_id"),
        subject=values.get("subject"),
        content_type=values.get("content_type"),
        correlation_id=values.get("correlation_id"),
        application_properties=dict(values.get("application_properties") or {}),
        scheduled_enqueue_time=scheduled,
    )


def _ranges(numbers: Iterable[int]) -> str:
    """``0-99, 200, 300-310``: sorted integers as compact ranges."""
    spans: list[list[int]] = []
    for number in sorted(numbers):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "none"


@dataclass
class ScheduledRows(WriterCommitMessage):
    """One write task's commit message: what it scheduled, in row order.

    Attributes:
        partition: The task's partition.
        attempt: The task's attempt number.
        sequence_numbers: The sequence numbers of the rows it scheduled, in row order.
        skipped_rows: Rows it skipped because an earlier attempt had scheduled them.
    """

    partition: int
    attempt: int
    sequence_numbers: list[int] = field(default_factory=list)
    skipped_rows: int = 0


class ScheduleWriteError(ServiceBusManagementError):
    """A write task failed; says which rows were scheduled and which are unknown.

    Raised in a Spark task (Spark shows its text in its own error). The rows scheduled stay
    scheduled: cancel them by their sequence numbers if the job is given up.

    Args:
        message: The error's text.
        partition: The task's partition.
        attempt: The task's attempt number.
        scheduled_rows: The row indexes (within the partition) the service scheduled.
        sequence_numbers: Their sequence numbers, in the same order.
        unknown_rows: Rows in a batch whose outcome is unknown.

    Raises nothing (an exception class).
    """

    def __init__(self, message: str, *, partition: int, attempt: int,
                 scheduled_rows: Sequence[int], sequence_numbers: Sequence[int],
                 unknown_rows: Sequence[int]) -> None:
        super().__init__(message, operation=schedule_message.OPERATION)
        self.partition = partition
        self.attempt = attempt
        self.scheduled_rows = tuple(scheduled_rows)
        self.sequence_numbers = tuple(sequence_numbers)
        self.unknown_rows = tuple(unknown_rows)


def _not_applied(exc: BaseException) -> bool:
    """Whether a failed schedule request certainly changed nothing."""
    if isinstance(exc, ConnectionLostError):
        return not exc.may_have_been_applied
    if isinstance(exc, ServerBusyError):
        return True
    return (isinstance(exc, OperationError) and exc.status_code is not None
            and 400 <= exc.status_code < 500)


@dataclass
class _Batch:
    rows: list[int]
    future: Future[schedule_message.Response]


class _TaskScheduler:
    """One task's pending schedule batches and what became of its rows."""

    def __init__(self, entity: EntityClient) -> None:
        self._entity = entity
        self._pending: deque[_Batch] = deque()
        self.rows: list[int] = []
        self.sequence_numbers: list[int] = []
        self.unknown_rows: list[int] = []

    def submit(self, rows: list[int], messages: list[Message]) -> None:
        if len(self._pending) >= _IN_FLIGHT:
            self._complete_oldest()
        request = schedule_message.Request(messages=tuple(messages))
        self._pending.append(_Batch(rows, self._entity.submit(request)))

    def _complete_oldest(self) -> None:
        batch = self._pending.popleft()
        try:
            response = batch.future.result()
        except BaseException as exc:
            if not _not_applied(exc):
                self.unknown_rows.extend(batch.rows)
            raise
        self.rows.extend(batch.rows)
        self.sequence_numbers.extend(response.sequence_numbers)

    def finish(self) -> None:
        """Wait for every pending batch; raise the first failure."""
        while self._pending:
            self._complete_oldest()

    def settle(self) -> None:
        """After a failure: wait for what is pending, recording outcomes, raising nothing."""
        while self._pending:
            try:
                self._complete_oldest()
            except BaseException:
                _log.debug("a pending schedule batch failed after the task failed")


class ServiceBusWriter(DataSourceWriter):
    """Schedules each task's rows on the entity; see the module docstring.

    ``mark`` is the entity's last sequence number when the write started (0 if empty).
    """

    def __init__(self, options: WriteOptions, mark: int,
                 write_id: uuid.UUID | None = None) -> None:
        self.options = options
        self.mark = mark
        self.write_id = uuid.uuid4() if write_id is None else write_id

    def __repr__(self) -> str:
        return (f"ServiceBusWriter(entity={self.options.entity!r}, mark={self.mark}, "
                f"write_id={self.write_id})")

    def write(self, iterator: Iterator[Any]) -> ScheduledRows:
        """Schedule this task's rows; the commit message lists their sequence numbers."""
        partition, attempt, _ = _task()
        return self.write_partition(iterator, partition, attempt)

    def write_partition(self, rows: Iterator[Any], partition: int, attempt: int) -> ScheduledRows:
        """Schedule one partition's rows as attempt ``attempt`` of its task."""
        with self.options.connection.open() as client:
            entity = client.entity(self.options.entity)
            present = (set() if attempt == 0 or self.options.duplicate_detection
                       else self._message_ids_since_mark(entity))
            scheduler = _TaskScheduler(entity)
            try:
                skipped = self._schedule_all(scheduler, rows, partition, present)
            except Exception as exc:
                scheduler.settle()
                raise self._failure(scheduler, partition, attempt, exc) from exc
        if skipped:
            _log.info("servicebus write %s, partition %d attempt %d: skipped %d rows an "
                      "earlier attempt scheduled", self.write_id, partition, attempt, skipped)
        return ScheduledRows(partition, attempt, scheduler.sequence_numbers, skipped)

    def _message_ids_since_mark(self, entity: EntityClient) -> set[str]:
        """The message-ids of every message after the mark (what earlier attempts left)."""
        after_mark = SequenceRange(self.mark + 1, MAX_SEQUENCE_NUMBER)
        return {id_text(m.message_id)
                for m in peek_range(EntityPager(entity), after_mark, _SCAN_PAGE)
                if m.message_id is not None}

    def _schedule_all(self, scheduler: _TaskScheduler, rows: Iterator[Any], partition: int,
                      present: set[str]) -> int:
        indexes: list[int] = []
        messages: list[Message] = []
        skipped = 0
        for index, row in enumerate(rows):
            message = message_from_row(row, row_message_id(self.write_id, partition, index),
                                       datetime.now(timezone.utc))
            if message.message_id in present:
                skipped += 1
                continue
            indexes.append(index)
            messages.append(message)
            if len(messages) == self.options.batch_size:
                scheduler.submit(indexes, messages)
                indexes, messages = [], []
        if messages:
            scheduler.submit(indexes, messages)
        scheduler.finish()
        return skipped

    def _failure(self, scheduler: _TaskScheduler, partition: int, attempt: int,
                 exc: Exception) -> ScheduleWriteError:
        if scheduler.sequence_numbers:
            outcome = (f"rows {_ranges(scheduler.rows)} of partition {partition} were scheduled "
                       f"as sequence numbers {_ranges(scheduler.sequence_numbers)} and stay "
                       "scheduled; " + self._retry_note())
        else:
            outcome = f"no row of partition {partition} was scheduled"
        unknown = ""
        if scheduler.unknown_rows:
            unknown = (f"; rows {_ranges(scheduler.unknown_rows)} may or may not have been "
                       "scheduled (the reply was lost)")
        return ScheduleWriteError(
            f"servicebus write to {self.options.entity!r} failed in partition {partition} "
            f"(attempt {attempt}): {type(exc).__name__}: {exc}; {outcome}{unknown}",
            partition=partition, attempt=attempt, scheduled_rows=scheduler.rows,
            sequence_numbers=scheduler.sequence_numbers, unknown_rows=scheduler.unknown_rows)

    def _retry_note(self) -> str:
        if self.options.duplicate_detection:
            return ("a retry sends the same message-ids, which the entity's duplicate "
                    "detection drops")
        return ("a retry of this task finds their message-ids on the entity and skips them "
                "(one consumed in between is dropped only by duplicate detection on the entity)")

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Log how many messages each task scheduled."""
        _log_outcome(f"servicebus write {self.write_id} to {self.options.entity!r}", messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The job failed: log what the finished tasks scheduled (it stays scheduled)."""
        _log_outcome(f"servicebus write {self.write_id} to {self.options.entity!r} aborted;",
                     messages, aborted=True)


def _log_outcome(what: str, messages: list[WriterCommitMessage | None],
                 aborted: bool = False) -> None:
    committed = [m for m in messages if isinstance(m, ScheduledRows)]
    total = sum(len(m.sequence_numbers) for m in committed)
    if aborted:
        _log.warning("%s %d finished tasks had scheduled %d messages, which stay",
                     what, len(committed), total)
    else:
        _log.info("%s: %d messages scheduled by %d tasks", what, total, len(committed))


class ServiceBusStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("servicebus")``: each micro-batch is a batch write.

    Made by [ServiceBusDataSource][sbmgmt.spark.ServiceBusDataSource] for Spark, once per
    micro-batch on the driver (its ``mark`` is the entity's last sequence number then); its
    methods are Spark's streaming writer API, which Spark calls.
    """

    def __init__(self, options: WriteOptions, mark: int) -> None:
        self.options = options
        self.mark = mark

    def __repr__(self) -> str:
        return f"ServiceBusStreamWriter(entity={self.options.entity!r}, mark={self.mark})"

    def write(self, iterator: Iterator[Any]) -> ScheduledRows:
        """Schedule this task's rows of the micro-batch."""
        partition, attempt, context = _task()
        if context is None:
            raise RuntimeError("ServiceBusStreamWriter.write runs in a Spark streaming task")
        query = context.getLocalProperty("sql.streaming.queryId")
        batch = context.getLocalProperty("streaming.sql.batchId")
        if query is None or batch is None:
            raise RuntimeError("ServiceBusStreamWriter.write: no streaming query id or "
                               "batch id in the task's local properties")
        writer = ServiceBusWriter(self.options, self.mark, stream_write_id(query, int(batch)))
        return writer.write_partition(iterator, partition, attempt)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Log how many messages the micro-batch's tasks scheduled."""
        _log_outcome(f"servicebus stream to {self.options.entity!r}, batch {batchId}",
                     messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """The micro-batch failed: log what its finished tasks scheduled (it stays)."""
        _log_outcome(f"servicebus stream to {self.options.entity!r}, batch {batchId} "
                     "aborted;", messages, aborted=True)
