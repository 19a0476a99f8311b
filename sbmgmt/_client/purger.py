"""Purging an entity: batch deletes with one cutoff, several in flight, until one deletes
nothing. The one purge loop of the library (the clients' ``purge_messages`` and, through
them, ``sbmgmt.actions.purge`` and the CLI).

Theory of operation
-------------------
A batch delete (``com.microsoft:batch-delete-messages``) of ``count`` with cutoff ``T``
deletes up to ``count`` of the oldest messages enqueued before ``T`` that are not locked,
and says how many. "Best effort": a reply may delete fewer than asked while more are
there, so only a reply that deleted *nothing* proves the entity holds no eligible message
before ``T`` (as every SDK's purge stops). ``T`` is fixed when the purge starts, so
messages sent during the purge are not chased.

Requests do not depend on each other: each deletes the oldest eligible messages *at the
moment the service applies it*, and two requests never delete the same message. So
:class:`PurgePlan` (sans-I/O) keeps several on the wire: it starts with one (an entity
that fits in one batch costs one request) and widens to ``requests_in_flight`` once a reply
deleted all it asked for. A surplus request near the end deletes nothing; its zero ends the
purge: no request is sent after it, and the ones still in flight are awaited and counted.

With ``limit`` (at most that many messages) the counts asked for never add up to more
than the limit: requests in flight ask for what the confirmed and the outstanding ones
leave, so the purge cannot delete more than ``limit``.

A failure ends the purge the same way (nothing more is sent, the requests in flight are
awaited); so does a cancellation (``cancel.is_set()``). Then
:class:`~sbmgmt.errors.PurgeError` (:class:`~sbmgmt.errors.PurgeCancelledError`) says
how many were deleted, and how many requests had an unknown outcome (their replies were
lost: each may have deleted up to its count). A request is never sent again
(batch-delete is not idempotent); a purge run again finishes the work.

The drivers: :func:`purge` (blocking, requests pipelined with the client's ``submit``,
waiting on their futures) and :func:`purge_async` (the same, awaited on the event loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from datetime import datetime
from typing import Protocol

from ..errors import (
    OperationTimeoutError,
    PurgeCancelledError,
    PurgeError,
    ServiceBusManagementError,
)
from ..ops import batch_delete_messages
from .method_calls import cutoff, delete_request

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_REQUESTS_IN_FLIGHT",
    "Cancel",
    "PurgePlan",
    "Submit",
    "purge",
    "purge_async",
    "start",
]

DEFAULT_BATCH_SIZE = 500
"""Messages asked per request: the Standard tier's quota ("Standard | 500 messages", the
batch-delete page), accepted on every tier; on Premium, 4,000 needs fewer requests."""

DEFAULT_REQUESTS_IN_FLIGHT = 32
"""Batch deletes kept on the wire at once once the first came back full (as many as
``peek_all``'s pages). The service applies them one after another and the fake answers
the ones it has read together: every burst of replies costs a round trip, so the more a
burst holds, the fewer round trips a large purge waits (docs/performance.md, "Purge");
a surplus request near the end deletes nothing."""

_POLL = 0.1  # how often a blocked purge looks at its cancel event (seconds)

#: A progress callback: the number of messages one reply deleted.
OnProgress = Callable[[int], None]


class Cancel(Protocol):
    """What a purge polls to stop: ``threading.Event`` and ``asyncio.Event`` both are."""

    def is_set(self) -> bool: ...


class Submit(Protocol):
    """The client's ``submit``: one request on the wire, its future back."""

    def __call__(self, request: batch_delete_messages.Request) -> Future[
            batch_delete_messages.Response]: ...


class PurgePlan:
    """How many to ask for next and when to stop; see the module's theory of operation."""

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 requests_in_flight: int = DEFAULT_REQUESTS_IN_FLIGHT,
                 limit: int | None = None) -> None:
        for name, value in (("batch_size", batch_size),
                            ("requests_in_flight", requests_in_flight), ("max_count", limit)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if batch_size > 2**31 - 1:
            raise ValueError(f"batch_size must be at most {2**31 - 1}, got {batch_size}")
        self._batch_size = batch_size
        self._most_in_flight = requests_in_flight
        self._limit = limit
        self._width = 1
        self._outstanding = 0
        self._asked = 0  # what the requests in flight asked for, together
        self._ended = False
        self._cancelled = False
        #: Messages whose deletion a reply confirmed.
        self.deleted = 0
        #: Requests whose replies never came (each may have deleted up to its count).
        self.uncertain_requests = 0
        #: The first failure, if one ended the purge.
        self.error: ServiceBusManagementError | None = None

    @property
    def done(self) -> bool:
        """Whether nothing is in flight and nothing more will be sent."""
        return self._outstanding == 0 and (self._ended or self._budget() == 0)

    def _budget(self) -> int | None:
        if self._limit is None:
            return None
        return self._limit - self.deleted - self._asked

    def to_send(self) -> list[int]:
        """The counts of the requests to send now."""
        counts: list[int] = []
        while not self._ended and self._outstanding < self._width:
            budget = self._budget()
            count = self._batch_size if budget is None else min(self._batch_size, budget)
            if count <= 0:
                break
            counts.append(count)
            self._outstanding += 1
            self._asked += count
        return counts

    def on_deleted(self, asked: int, deleted: int) -> None:
        """A reply: ``deleted`` of the ``asked`` messages were deleted."""
        self._outstanding -= 1
        self._asked -= asked
        self.deleted += deleted
        if deleted == 0:
            self._ended = True
        elif deleted >= asked:
            self._width = self._most_in_flight

    def on_failed(self, asked: int, error: ServiceBusManagementError) -> None:
        """A request failed: the purge ends; a lost reply's request is counted uncertain."""
        self._outstanding -= 1
        self._asked -= asked
        self._ended = True
        if error.may_have_been_applied or isinstance(error, OperationTimeoutError):
            self.uncertain_requests += 1
        if self.error is None:
            self.error = error

    def cancel(self) -> None:
        """Send nothing more (the requests in flight are still awaited)."""
        if not self._ended:
            self._cancelled = True
        self._ended = True

    def result(self) -> int:
        """The number deleted, once :attr:`done`; the purge's error if it did not finish."""
        if self.error is not None:
            raise PurgeError(
                f"the purge stopped after deleting {self.deleted} messages "
                f"({self.uncertain_requests} requests with an unknown outcome): {self.error}",
                deleted=self.deleted, uncertain_requests=self.uncertain_requests,
                error=self.error) from self.error
        if self._cancelled:
            raise PurgeCancelledError(
                f"the purge was cancelled after deleting {self.deleted} messages",
                deleted=self.deleted, uncertain_requests=self.uncertain_requests)
        return self.deleted


def start(before: datetime | None, max_count: int | None, batch_size: int,
          requests_in_flight: int) -> tuple[PurgePlan, datetime]:
    """A purge's plan and its cutoff (``before``, or now: fixed for the whole purge;
    :func:`~sbmgmt._client.method_calls.cutoff`), its arguments checked before anything is
    sent."""
    plan = PurgePlan(batch_size=batch_size, requests_in_flight=requests_in_flight,
                     limit=max_count)
    return plan, cutoff(before)


def _settle(plan: PurgePlan, asked: int, future: Future[batch_delete_messages.Response],
            on_progress: OnProgress | None) -> None:
    """Hand one finished request to the plan (and its count to the progress callback)."""
    try:
        deleted = future.result().message_count
    except ServiceBusManagementError as error:
        plan.on_failed(asked, error)
        return
    plan.on_deleted(asked, deleted)
    if deleted and on_progress is not None:
        on_progress(deleted)


def purge(submit: Submit, plan: PurgePlan, before: datetime, session_id: str | None, *,
          on_progress: OnProgress | None = None, cancel: Cancel | None = None) -> int:
    """Run ``plan`` with blocking waits; returns how many were deleted (or raises
    :class:`~sbmgmt.errors.PurgeError`)."""
    pending: dict[Future[batch_delete_messages.Response], int] = {}
    while True:
        if cancel is not None and cancel.is_set():
            plan.cancel()
        for count in plan.to_send():
            pending[submit(delete_request(count, before, session_id))] = count
        if not pending:
            return plan.result()
        finished, _ = wait(pending, timeout=_POLL if cancel is not None else None,
                           return_when=FIRST_COMPLETED)
        for future in finished:
            _settle(plan, pending.pop(future), future, on_progress)


async def purge_async(submit: Submit, plan: PurgePlan, before: datetime,
                      session_id: str | None, *, on_progress: OnProgress | None = None,
                      cancel: Cancel | None = None) -> int:
    """:func:`purge` awaited on the running event loop."""
    pending: dict[asyncio.Future[batch_delete_messages.Response], tuple[
        int, Future[batch_delete_messages.Response]]] = {}
    while True:
        if cancel is not None and cancel.is_set():
            plan.cancel()
        for count in plan.to_send():
            future = submit(delete_request(count, before, session_id))
            pending[asyncio.wrap_future(future)] = (count, future)
        if not pending:
            return plan.result()
        finished, _ = await asyncio.wait(
            pending, timeout=_POLL if cancel is not None else None,
            return_when=asyncio.FIRST_COMPLETED)
        for waited in finished:
            count, future = pending.pop(waited)
            _settle(plan, count, future, on_progress)
