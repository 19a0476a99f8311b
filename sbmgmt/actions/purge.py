"""The purge action: count what a purge would delete, then delete it, reporting progress,
honouring cancellation, and returning a typed report of exactly what was done.

Every front end calls this (``sbmgmt purge``, the explorer, a script); the purge loop
itself is the clients' ``purge_messages`` (one implementation in the library). The action
adds what a front end needs around it:

- one cutoff for the whole job: :func:`plan` fixes it (``before``, or now) and counts the
  messages a purge with it would delete (:func:`count_purgeable`: peeked, every active
  message enqueued before the cutoff; a locked one is counted too, and stays), so what the
  user is asked about and what is deleted are the same set, and messages that arrive while
  the user decides are not deleted;
- progress as a running total (``on_progress(deleted_so_far)``);
- a :class:`PurgeReport` whatever happened: finished, cancelled (``cancel`` was set) or
  failed (the error that stopped it, and how many requests had an unknown outcome). Bad
  arguments are raised before anything is sent, as the clients raise them.
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..aio import AsyncEntityClient
from ..client import EntityClient
from ..errors import PurgeCancelledError, PurgeError, ServiceBusManagementError
from ..message import MessageState, ReceivedMessage

__all__ = [
    "Cancel",
    "PurgeOutcome",
    "PurgePlan",
    "PurgeReport",
    "count_purgeable",
    "count_purgeable_async",
    "plan",
    "plan_async",
    "purge",
    "purge_async",
]

#: A progress callback: how many messages the purge has deleted so far.
OnProgress = Callable[[int], None]

#: What stops a purge once set.
Cancel = threading.Event | asyncio.Event


class PurgeOutcome(str, enum.Enum):
    """How a purge ended."""

    FINISHED = "finished"
    """A request deleted nothing: no eligible message before the cutoff is left (or
    ``max_count`` were deleted)."""
    CANCELLED = "cancelled"
    """``cancel`` was set: nothing was sent after it; the requests in flight were counted."""
    FAILED = "failed"
    """A request failed; ``error`` says why."""


@dataclass(frozen=True)
class PurgePlan:
    """What a purge of ``entity`` would do: its cutoff and how many it would delete.

    Attributes:
        entity: The entity path (a queue, a subscription, a dead-letter queue).
        session_id: The one session purged, or None.
        before: The cutoff: messages enqueued before it are deleted.
        max_count: The most to delete, or None for all.
        eligible: The active messages enqueued before the cutoff when counted (peeked; a
            locked one is counted but stays), at most ``max_count``.
    """

    entity: str
    session_id: str | None
    before: datetime
    max_count: int | None
    eligible: int


@dataclass(frozen=True)
class PurgeReport:
    """What a purge did.

    Attributes:
        entity: The entity path.
        session_id: The one session purged, or None.
        before: The cutoff used.
        deleted: The messages the service confirmed deleted.
        outcome: How it ended.
        uncertain_requests: Requests whose replies never came (each may have deleted up to
            its batch); 0 unless it failed on a lost connection or a time-out.
        error: What stopped it (``outcome`` failed), else None.
    """

    entity: str
    session_id: str | None
    before: datetime
    deleted: int
    outcome: PurgeOutcome
    uncertain_requests: int = 0
    error: ServiceBusManagementError | None = None

    def as_record(self) -> dict[str, object]:
        """The report as plain values (JSON-ready: times in ISO 8601, the error as text).

        Returns:
            A dict with the report's fields.
        """
        return {
            "entity": self.entity,
            "session_id": self.session_id,
            "before": self.before.isoformat(),
            "deleted": self.deleted,
            "outcome": self.outcome.value,
            "uncertain_requests": self.uncertain_requests,
            "error": None if self.error is None else str(self.error),
        }


def _cutoff(before: datetime | None) -> datetime:
    if before is None:
        return datetime.now(timezone.utc)
    if not isinstance(before, datetime):
        raise TypeError(f"before must be a datetime, got {type(before).__name__}")
    return before


def _purgeable(message: ReceivedMessage, before: datetime) -> bool:
    when = message.enqueued_time
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    cutoff = before if before.tzinfo is not None else before.replace(tzinfo=timezone.utc)
    return message.state is MessageState.ACTIVE and when is not None and when < cutoff


def _planned(entity: EntityClient | AsyncEntityClient, session_id: str | None,
             cutoff: datetime, max_count: int | None, eligible: int) -> PurgePlan:
    capped = eligible if max_count is None else min(eligible, max_count)
    return PurgePlan(entity.path, session_id, cutoff, max_count, capped)


def count_purgeable(entity: EntityClient, before: datetime, *,
                    session_id: str | None = None,
                    on_looked_at: OnProgress | None = None) -> int:
    """How many messages a purge with cutoff ``before`` would delete, by peeking them all.

    Args:
        entity: The entity to look at.
        before: The cutoff.
        session_id: Only this session's messages; None: the entity's.
        on_looked_at: Called with the running total of messages peeked so far (a count of
            a large entity takes a while: a front end shows it is working).

    Returns:
        The active messages enqueued before ``before`` (deferred and scheduled ones are not
        counted; a locked one is, and a purge leaves it).

    Raises:
        sbmgmt.errors.ServiceBusManagementError: A peek failed (the client's errors).
    """
    eligible = 0
    for looked_at, message in enumerate(entity.peek_all(session_id=session_id), 1):
        eligible += _purgeable(message, before)
        if on_looked_at is not None:
            on_looked_at(looked_at)
    return eligible


async def count_purgeable_async(entity: AsyncEntityClient, before: datetime, *,
                                session_id: str | None = None) -> int:
    """:func:`count_purgeable` on the asyncio client.

    Args:
        entity: The entity to look at.
        before: The cutoff.
        session_id: Only this session's messages; None: the entity's.

    Returns:
        The active messages enqueued before ``before``.

    Raises:
        sbmgmt.errors.ServiceBusManagementError: A peek failed (the client's errors).
    """
    messages: AsyncIterator[ReceivedMessage] = entity.peek_all(session_id=session_id)
    return sum([1 async for m in messages if _purgeable(m, before)])


def plan(entity: EntityClient, *, before: datetime | None = None,
         session_id: str | None = None, max_count: int | None = None,
         on_looked_at: OnProgress | None = None) -> PurgePlan:
    """Fix a purge's cutoff and count what it would delete (nothing is deleted).

    Args:
        entity: The entity to purge.
        before: The cutoff; None: now.
        session_id: Only this session's messages; None: the entity's.
        max_count: The most to delete; None: all.
        on_looked_at: Called with the running total of messages peeked while counting.

    Returns:
        The plan, to show the user and to hand to :func:`purge`.

    Raises:
        TypeError: ``before`` is not a datetime.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    cutoff = _cutoff(before)
    return _planned(entity, session_id, cutoff, max_count,
                    count_purgeable(entity, cutoff, session_id=session_id,
                                    on_looked_at=on_looked_at))


async def plan_async(entity: AsyncEntityClient, *, before: datetime | None = None,
                     session_id: str | None = None, max_count: int | None = None) -> PurgePlan:
    """:func:`plan` on the asyncio client.

    Args:
        entity: The entity to purge.
        before: The cutoff; None: now.
        session_id: Only this session's messages; None: the entity's.
        max_count: The most to delete; None: all.

    Returns:
        The plan, to show the user and to hand to :func:`purge_async`.

    Raises:
        TypeError: ``before`` is not a datetime.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    cutoff = _cutoff(before)
    return _planned(entity, session_id, cutoff, max_count,
                    await count_purgeable_async(entity, cutoff, session_id=session_id))


class _Tally:
    """The running total handed to the caller's progress callback."""

    def __init__(self, on_progress: OnProgress | None) -> None:
        self.deleted = 0
        self._on_progress = on_progress

    def __call__(self, deleted: int) -> None:
        self.deleted += deleted
        if self._on_progress is not None:
            self._on_progress(self.deleted)


def _report(job: PurgePlan, deleted: int | None, error: PurgeError | None) -> PurgeReport:
    if error is None:
        return PurgeReport(job.entity, job.session_id, job.before, deleted or 0,
                           PurgeOutcome.FINISHED)
    cancelled = isinstance(error, PurgeCancelledError)
    stopped_by = None if cancelled or not isinstance(
        error.error, ServiceBusManagementError) else error.error
    return PurgeReport(job.entity, job.session_id, job.before, error.deleted,
                       PurgeOutcome.CANCELLED if cancelled else PurgeOutcome.FAILED,
                       error.uncertain_requests, stopped_by)


def _arguments(entity: EntityClient | AsyncEntityClient, job: PurgePlan,
               batch_size: int | None, requests_in_flight: int | None,
               on_progress: OnProgress | None, cancel: Cancel | None) -> dict[str, Any]:
    """``purge_messages``'s arguments for ``job`` (the client's defaults for the sizes not
    given); ValueError if ``entity`` is not the plan's."""
    if entity.path != job.entity:
        raise ValueError(f"the plan is for {job.entity!r}, not {entity.path!r}")
    sizes = {"batch_size": batch_size, "requests_in_flight": requests_in_flight}
    return {"before": job.before, "session_id": job.session_id, "max_count": job.max_count,
            "on_progress": _Tally(on_progress), "cancel": cancel,
            **{name: value for name, value in sizes.items() if value is not None}}


def purge(entity: EntityClient, job: PurgePlan, *, batch_size: int | None = None,
          requests_in_flight: int | None = None, on_progress: OnProgress | None = None,
          cancel: Cancel | None = None) -> PurgeReport:
    """Delete what ``job`` planned (every message before its cutoff, at most its
    ``max_count``) with the client's ``purge_messages``.

    Args:
        entity: The entity the plan is for.
        job: From :func:`plan`.
        batch_size: Messages per request; None: the client's default (500, every tier's
            quota; Premium takes 4,000).
        requests_in_flight: The most requests on the wire at once; None: the client's
            default.
        on_progress: Called with the running total deleted, as replies come.
        cancel: Polled while it runs (a ``threading.Event``): once set, the purge stops.

    Returns:
        The report: finished, cancelled or failed, with the count deleted.

    Raises:
        TypeError: An argument of the wrong type; nothing is sent.
        ValueError: ``batch_size`` or ``requests_in_flight`` below 1, or ``entity`` is not
            the plan's; nothing is sent.
    """
    arguments = _arguments(entity, job, batch_size, requests_in_flight, on_progress, cancel)
    try:
        deleted = entity.purge_messages(**arguments)
    except PurgeError as error:
        return _report(job, None, error)
    return _report(job, deleted, None)


async def purge_async(entity: AsyncEntityClient, job: PurgePlan, *,
                      batch_size: int | None = None, requests_in_flight: int | None = None,
                      on_progress: OnProgress | None = None,
                      cancel: Cancel | None = None) -> PurgeReport:
    """:func:`purge` on the asyncio client.

    Args:
        entity: The entity the plan is for.
        job: From :func:`plan_async`.
        batch_size: Messages per request; None: the client's default (500, every tier's
            quota; Premium takes 4,000).
        requests_in_flight: The most requests on the wire at once; None: the client's
            default.
        on_progress: Called with the running total deleted, as replies come.
        cancel: Polled while it runs (an ``asyncio.Event`` or a ``threading.Event``).

    Returns:
        The report: finished, cancelled or failed, with the count deleted.

    Raises:
        TypeError: An argument of the wrong type; nothing is sent.
        ValueError: ``batch_size`` or ``requests_in_flight`` below 1, or ``entity`` is not
            the plan's; nothing is sent.
    """
    arguments = _arguments(entity, job, batch_size, requests_in_flight, on_progress, cancel)
    try:
        deleted = await entity.purge_messages(**arguments)
    except PurgeError as error:
        return _report(job, None, error)
    return _report(job, deleted, None)
