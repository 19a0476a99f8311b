"""The purge action: count what a purge would delete, then delete it, on the contract of
every long action (:mod:`sbmgmt.actions.contract`): progress records, a cancel token, and a
report of exactly what was done.

Every front end calls this (``sbmgmt purge``, the explorer, a script); the purge loop
itself is the clients' ``purge_messages`` (one implementation in the library:
``sbmgmt/_client/purger.py``). The action adds what a front end needs around it:

- one cutoff for the whole job: :func:`plan` fixes it with the library's one rule
  (:func:`sbmgmt.ops.batch_delete_messages.cutoff`: ``before`` to the millisecond it
  travels as, or the start of the next millisecond for now) and counts the messages a
  purge with it would delete (:func:`count_purgeable`: peeked, every active message
  enqueued before the cutoff; a locked one is counted too, and stays), so what the user
  is asked about and what is deleted are the same set, and messages that arrive while the
  user decides are not deleted;
- progress as the contract's ``Progress`` records: ``done`` the running
  total deleted, ``total`` the plan's count, ``counts`` ``{"deleted": done}`` (the client's
  own ``on_progress`` is told each reply's count, a delta: :class:`_Tally` adds them up);
- the contract's ``CancelToken``: once cancelled, no request is sent, the
  ones in flight are awaited and counted;
- a :class:`PurgeReport` whatever happened, never an exception for a cancellation or a
  failed request: finished, cancelled, or failed (the error that stopped it, and how many
  requests had an unknown outcome). Bad arguments are raised before anything is sent, as
  the clients raise them.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..aio import AsyncEntityClient
from ..client import EntityClient
from ..errors import PurgeCancelledError, PurgeError, ServiceBusManagementError
from ..message import MessageState, ReceivedMessage
from ..ops.batch_delete_messages import cutoff
from .contract import ActionReport, CancelToken, OnProgress, Outcome, Progress

__all__ = [
    "PurgePlan",
    "PurgeReport",
    "count_purgeable",
    "count_purgeable_async",
    "plan",
    "plan_async",
    "purge",
    "purge_async",
]

#: Told the running total of messages peeked while a plan counts (a count of a large
#: entity takes a while: a front end shows it is working).
OnLookedAt = Callable[[int], None]


@dataclass(frozen=True)
class PurgePlan:
    """What a purge of ``entity`` would do, as confirmed: its cutoff and how many it
    would delete.

    Attributes:
        entity: The entity path (a queue, a subscription, a dead-letter queue).
        session_id: The one session purged, or None.
        before: The cutoff: messages enqueued before it are deleted (to the millisecond).
        max_count: The most to delete, or None for all.
        eligible: The active messages enqueued before the cutoff when counted (peeked; a
            locked one is counted but stays), at most ``max_count``.
    """

    entity: str
    session_id: str | None
    before: datetime
    max_count: int | None
    eligible: int


@dataclass(kw_only=True)
class PurgeReport(ActionReport):
    """What a purge did: an ``ActionReport`` of ``sbmgmt.actions.contract``.

    Attributes:
        session_id: The one session purged, or None.
        before: The cutoff used.
        deleted: The messages the service confirmed deleted.
        uncertain_requests: Requests whose replies never came (each may have deleted up to
            its batch); 0 unless it failed on a lost connection or a time-out.
        failure: The error that stopped it (``outcome`` failed; its text is ``error``),
            else None.
    """

    session_id: str | None = None
    before: datetime
    deleted: int = 0
    uncertain_requests: int = 0
    failure: ServiceBusManagementError | None = None

    def counts(self) -> dict[str, int]:
        """The messages by outcome.

        Returns:
            ``{"deleted": n}``.
        """
        return {"deleted": self.deleted}

    def details(self) -> dict[str, Any]:
        """The purge's own fields of :meth:`record`.

        Returns:
            The session, the cutoff (ISO 8601), the count deleted and the requests with an
            unknown outcome.
        """
        return {"session_id": self.session_id, "before": self.before.isoformat(),
                "deleted": self.deleted, "uncertain_requests": self.uncertain_requests}

    def as_record(self) -> dict[str, Any]:
        """Deprecated: :meth:`record` (removed in the next release).

        Returns:
            The report as :meth:`record` gives it.
        """
        warnings.warn("PurgeReport.as_record() is deprecated: use record()",
                      DeprecationWarning, stacklevel=2)
        return self.record()


def __getattr__(name: str) -> Any:
    # PurgeOutcome was the purge's own outcome; it is the contract's Outcome now.
    if name == "PurgeOutcome":
        warnings.warn("sbmgmt.actions.purge.PurgeOutcome is deprecated: use "
                      "sbmgmt.actions.contract.Outcome", DeprecationWarning, stacklevel=2)
        return Outcome
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _purgeable(message: ReceivedMessage, before: datetime) -> bool:
    when = message.enqueued_time
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return message.state is MessageState.ACTIVE and when is not None and when < before


def _planned(entity: EntityClient | AsyncEntityClient, session_id: str | None,
             before: datetime, max_count: int | None, eligible: int) -> PurgePlan:
    capped = eligible if max_count is None else min(eligible, max_count)
    return PurgePlan(entity.path, session_id, before, max_count, capped)


def count_purgeable(entity: EntityClient, before: datetime, *,
                    session_id: str | None = None,
                    on_looked_at: OnLookedAt | None = None) -> int:
    """How many messages a purge with cutoff ``before`` would delete, by peeking them all.

    Args:
        entity: The entity to look at.
        before: The cutoff (a plan's: :func:`sbmgmt.ops.batch_delete_messages.cutoff`).
        session_id: Only this session's messages; None: the entity's.
        on_looked_at: Called with the running total of messages peeked so far.

    Returns:
        The active messages enqueued before ``before`` (deferred and scheduled ones are not
        counted; a locked one is, and a purge leaves it).

    Raises:
        TypeError: ``before`` is not a datetime.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (the client's errors).
    """
    before = cutoff(before)
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
        TypeError: ``before`` is not a datetime.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (the client's errors).
    """
    before = cutoff(before)
    messages: AsyncIterator[ReceivedMessage] = entity.peek_all(session_id=session_id)
    return sum([1 async for m in messages if _purgeable(m, before)])


def plan(entity: EntityClient, *, before: datetime | None = None,
         session_id: str | None = None, max_count: int | None = None,
         on_looked_at: OnLookedAt | None = None) -> PurgePlan:
    """Fix a purge's cutoff and count what it would delete (nothing is deleted).

    Args:
        entity: The entity to purge.
        before: The cutoff; None: now (the start of the next millisecond).
        session_id: Only this session's messages; None: the entity's.
        max_count: The most to delete; None: all.
        on_looked_at: Called with the running total of messages peeked while counting.

    Returns:
        The plan, to show the user and to hand to :func:`purge`.

    Raises:
        TypeError: ``before`` is not a datetime.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    fixed = cutoff(before)
    return _planned(entity, session_id, fixed, max_count,
                    count_purgeable(entity, fixed, session_id=session_id,
                                    on_looked_at=on_looked_at))


async def plan_async(entity: AsyncEntityClient, *, before: datetime | None = None,
                     session_id: str | None = None, max_count: int | None = None) -> PurgePlan:
    """:func:`plan` on the asyncio client.

    Args:
        entity: The entity to purge.
        before: The cutoff; None: now (the start of the next millisecond).
        session_id: Only this session's messages; None: the entity's.
        max_count: The most to delete; None: all.

    Returns:
        The plan, to show the user and to hand to :func:`purge_async`.

    Raises:
        TypeError: ``before`` is not a datetime.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    fixed = cutoff(before)
    return _planned(entity, session_id, fixed, max_count,
                    await count_purgeable_async(entity, fixed, session_id=session_id))


class _Tally:
    """The client's ``on_progress`` (each reply's count) made the action's: the running
    total, told as a :class:`Progress` of the plan's count."""

    def __init__(self, job: PurgePlan, on_progress: OnProgress | None) -> None:
        self.deleted = 0
        self._total = job.eligible
        self._on_progress = on_progress

    def __call__(self, deleted: int) -> None:
        self.deleted += deleted
        if self._on_progress is not None:
            self._on_progress(Progress(self.deleted, self._total, {"deleted": self.deleted}))


@dataclass(frozen=True)
class _Run:
    """``purge_messages``'s arguments for one plan, checked before anything is sent."""

    job: PurgePlan
    batch_size: int | None
    in_flight: int | None
    tally: _Tally
    cancel: threading.Event | None  # the token's own event: the clients poll is_set()

    def report(self, deleted: int | None, error: PurgeError | None) -> PurgeReport:
        job = self.job
        if error is None:
            return PurgeReport(entity=job.entity, session_id=job.session_id, before=job.before,
                               deleted=deleted or 0)
        if isinstance(error, PurgeCancelledError):
            return PurgeReport(entity=job.entity, session_id=job.session_id, before=job.before,
                               deleted=error.deleted, outcome=Outcome.CANCELLED,
                               uncertain_requests=error.uncertain_requests)
        failure = error.error if isinstance(error.error, ServiceBusManagementError) else None
        return PurgeReport(entity=job.entity, session_id=job.session_id, before=job.before,
                           deleted=error.deleted, outcome=Outcome.FAILED,
                           uncertain_requests=error.uncertain_requests, failure=failure,
                           error=str(failure if failure is not None else error))


def _run(entity: EntityClient | AsyncEntityClient, job: PurgePlan, batch_size: int | None,
         in_flight: int | None, on_progress: OnProgress | None,
         cancel: CancelToken | None) -> _Run:
    if entity.path != job.entity:
        raise ValueError(f"the plan is for {job.entity!r}, not {entity.path!r}")
    if cancel is not None and not isinstance(cancel, CancelToken):
        raise TypeError(f"cancel must be a sbmgmt.actions.contract.CancelToken, got "
                        f"{type(cancel).__name__}")
    return _Run(job, batch_size, in_flight, _Tally(job, on_progress),
                None if cancel is None else cancel.event)


def purge(entity: EntityClient, job: PurgePlan, *, batch_size: int | None = None,
          in_flight: int | None = None, on_progress: OnProgress | None = None,
          cancel: CancelToken | None = None) -> PurgeReport:
    """Delete what ``job`` planned (every message before its cutoff, at most its
    ``max_count``) with the client's ``purge_messages``.

    Args:
        entity: The entity the plan is for.
        job: From :func:`plan`.
        batch_size: Messages per request; None: the client's default (500, every tier's
            quota; Premium takes 4,000).
        in_flight: The most requests on the wire at once; None: the client's default.
        on_progress: Told a ``Progress`` (``sbmgmt.actions.contract``) as replies come:
            the running total deleted, of the plan's count.
        cancel: Once cancelled (from any thread), no request is sent; the ones in flight
            are awaited and counted, and the report says cancelled.

    Returns:
        The report: finished, cancelled or failed, with the count deleted.

    Raises:
        TypeError: An argument of the wrong type (``cancel`` not a ``CancelToken``);
            nothing is sent.
        ValueError: ``batch_size`` or ``in_flight`` below 1, or ``entity`` is not the
            plan's; nothing is sent.
    """
    run = _run(entity, job, batch_size, in_flight, on_progress, cancel)
    try:
        deleted = entity.purge_messages(
            before=job.before, session_id=job.session_id, max_count=job.max_count,
            batch_size=run.batch_size, in_flight=run.in_flight, on_progress=run.tally,
            cancel=run.cancel)
    except PurgeError as error:
        return run.report(None, error)
    return run.report(deleted, None)


async def purge_async(entity: AsyncEntityClient, job: PurgePlan, *,
                      batch_size: int | None = None, in_flight: int | None = None,
                      on_progress: OnProgress | None = None,
                      cancel: CancelToken | None = None) -> PurgeReport:
    """:func:`purge` on the asyncio client.

    Args:
        entity: The entity the plan is for.
        job: From :func:`plan_async`.
        batch_size: Messages per request; None: the client's default (500, every tier's
            quota; Premium takes 4,000).
        in_flight: The most requests on the wire at once; None: the client's default.
        on_progress: Told a ``Progress`` (``sbmgmt.actions.contract``) as replies come.
        cancel: Once cancelled (from any thread), no request is sent; the ones in flight
            are awaited and counted, and the report says cancelled.

    Returns:
        The report: finished, cancelled or failed, with the count deleted.

    Raises:
        TypeError: An argument of the wrong type (``cancel`` not a ``CancelToken``);
            nothing is sent.
        ValueError: ``batch_size`` or ``in_flight`` below 1, or ``entity`` is not the
            plan's; nothing is sent.
    """
    run = _run(entity, job, batch_size, in_flight, on_progress, cancel)
    try:
        deleted = await entity.purge_messages(
            before=job.before, session_id=job.session_id, max_count=job.max_count,
            batch_size=run.batch_size, in_flight=run.in_flight, on_progress=run.tally,
            cancel=run.cancel)
    except PurgeError as error:
        return run.report(None, error)
    return run.report(deleted, None)
