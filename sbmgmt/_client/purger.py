"""Purging an entity: batch deletes with one cutoff, several in flight, until one deletes
nothing. The one purge loop of the library (the clients' ``purge_messages`` and, through
them, ``sbmgmt.actions.purge`` and the CLI).

Theory of operation
-------------------
A batch delete (``com.microsoft:batch-delete-messages``) of ``count`` with cutoff ``T``
deletes up to ``count`` of the oldest messages enqueued before ``T`` that are not locked,
and says how many. "Best effort": a reply may delete fewer than asked while more are
there, so only a reply that deleted *nothing* proves the entity holds no eligible message
before ``T`` (as every SDK's purge stops). ``T`` is fixed when the purge starts
(:func:`sbmgmt.ops.batch_delete_messages.cutoff`, the library's one rule for it), so
messages sent during the purge are not chased.

Requests do not depend on each other: each deletes the oldest eligible messages *at the
moment the service applies it*, and two requests never delete the same message. So
:class:`BatchDeletePipeline` (sans-I/O) keeps several on the wire: it starts with one (an
entity that fits in one batch costs one request) and widens to ``in_flight`` once a reply
deleted all it asked for. A surplus request near the end deletes nothing; its zero ends the
purge: no request is sent after it, and the ones still in flight are awaited and counted.

With ``max_count`` (at most that many messages) the counts asked for never add up to more
than it: requests in flight ask for what the confirmed and the outstanding ones leave, so
the purge cannot delete more than ``max_count``.

A failure ends the purge the same way (nothing more is sent, the requests in flight are
awaited); so does a cancellation (``cancel.is_set()``). Then
:class:`~sbmgmt.errors.PurgeError` (:class:`~sbmgmt.errors.PurgeCancelledError`) says
how many were deleted, and how many requests had an unknown outcome (their replies were
lost: each may have deleted up to its count). A request is never sent again
(batch-delete is not idempotent); a purge run again finishes the work.

The drivers: :func:`purge` (blocking, requests pipelined with the client's ``submit``,
waiting on their futures) and :func:`purge_async` (the same, awaited on the event loop).
Their ``on_progress`` is the clients' documented one: called with the count ONE reply
deleted (a delta, not a running total); ``sbmgmt.actions.purge`` turns the deltas into the
actions' :class:`~sbmgmt.actions.contract.Progress` records.
"""

from __future__ import annotations

import asyncio
import warnings
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
from .method_calls import delete_request

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_IN_FLIGHT",
    "BatchDeletePipeline",
    "Cancel",
    "Submit",
    "purge",
    "purge_async",
    "start",
]

DEFAULT_BATCH_SIZE = 500
"""Messages asked per request: the Standard tier's quota ("Standard | 500 messages", the
batch-delete page), accepted on every tier; on Premium, 4,000 needs fewer requests."""

DEFAULT_IN_FLIGHT = 32
"""Batch deletes kept on the wire at once once the first came back full (as many as
``peek_all``'s pages). The service applies them one after another and the fake answers
the ones it has read together: every burst of replies costs a round trip, so the more a
burst holds, the fewer round trips a large purge waits (docs/performance.md, "Purge");
a surplus request near the end deletes nothing."""

_POLL = 0.1  # how often a blocked purge looks at its cancel event (seconds)

#: A progress callback: the number of messages ONE reply deleted (a delta, as the clients'
#: ``purge_messages`` documents it).
OnProgress = Callable[[int], None]


class Cancel(Protocol):
    """What a purge polls to stop: ``threading.Event`` and ``asyncio.Event`` both are."""

    def is_set(self) -> bool: ...


class Submit(Protocol):
    """The client's ``submit``: one request on the wire, its future back."""

    def __call__(self, request: batch_delete_messages.Request) -> Future[
            batch_delete_messages.Response]: ...


def _count(name: str, value: object) -> None:
    """A count argument: an int (not a bool), 1 or more; else TypeError / ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


class BatchDeletePipeline:
    """The batch deletes of one purge: how many to ask for next, how many on the wire, and
    when to stop (sans-I/O); see the module's theory of operation."""

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 in_flight: int = DEFAULT_IN_FLIGHT, max_count: int | None = None) -> None:
        _count("batch_size", batch_size)
        _count("in_flight", in_flight)
        if max_count is not None:
            _count("max_count", max_count)
        if batch_size > 2**31 - 1:
            raise ValueError(f"batch_size must be at most {2**31 - 1}, got {batch_size}")
        self._batch_size = batch_size
        self._most_in_flight = in_flight
        self._max_count = max_count
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
        if self._max_count is None:
            return None
        return self._max_count - self.deleted - self._asked

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


def start(before: datetime | None, max_count: int | None, batch_size: int | None,
          in_flight: int | None, requests_in_flight: int | None = None,
          ) -> tuple[BatchDeletePipeline, datetime]:
    """A purge's pipeline and its cutoff (:func:`sbmgmt.ops.batch_delete_messages.cutoff`:
    ``before``, or now, fixed for the whole purge), its arguments checked before anything is
    sent. None sizes are the defaults; ``requests_in_flight`` is ``in_flight``'s old name
    (deprecated: a ``DeprecationWarning`` at the clients' caller, removed in the next
    release)."""
    if requests_in_flight is not None:
        warnings.warn("purge_messages(requests_in_flight=...) is deprecated: pass "
                      "in_flight=... (requests_in_flight goes in the next release)",
                      DeprecationWarning, stacklevel=3)
        if in_flight is not None:
            raise TypeError("pass in_flight only (requests_in_flight is its old name)")
        _count("requests_in_flight", requests_in_flight)
        in_flight = requests_in_flight
    pipeline = BatchDeletePipeline(
        batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
        in_flight=DEFAULT_IN_FLIGHT if in_flight is None else in_flight, max_count=max_count)
    return pipeline, batch_delete_messages.cutoff(before)


def _settle(pipeline: BatchDeletePipeline, asked: int,
            future: Future[batch_delete_messages.Response],
            on_progress: OnProgress | None) -> None:
    """Hand one finished request to the pipeline (and its count to the progress callback)."""
    try:
        deleted = future.result().message_count
    except ServiceBusManagementError as error:
        pipeline.on_failed(asked, error)
        return
    pipeline.on_deleted(asked, deleted)
    if deleted and on_progress is not None:
        on_progress(deleted)


def purge(submit: Submit, pipeline: BatchDeletePipeline, before: datetime,
          session_id: str | None, *, on_progress: OnProgress | None = None,
          cancel: Cancel | None = None) -> int:
    """Run ``pipeline`` with blocking waits; returns how many were deleted (or raises
    :class:`~sbmgmt.errors.PurgeError`)."""
    pending: dict[Future[batch_delete_messages.Response], int] = {}
    while True:
        if cancel is not None and cancel.is_set():
            pipeline.cancel()
        for count in pipeline.to_send():
            pending[submit(delete_request(count, before, session_id))] = count
        if not pending:
            return pipeline.result()
        finished, _ = wait(pending, timeout=_POLL if cancel is not None else None,
                           return_when=FIRST_COMPLETED)
        for future in finished:
            _settle(pipeline, pending.pop(future), future, on_progress)


async def purge_async(submit: Submit, pipeline: BatchDeletePipeline, before: datetime,
                      session_id: str | None, *, on_progress: OnProgress | None = None,
                      cancel: Cancel | None = None) -> int:
    """:func:`purge` awaited on the running event loop."""
    pending: dict[asyncio.Future[batch_delete_messages.Response], tuple[
        int, Future[batch_delete_messages.Response]]] = {}
    while True:
        if cancel is not None and cancel.is_set():
            pipeline.cancel()
        for count in pipeline.to_send():
            future = submit(delete_request(count, before, session_id))
            pending[asyncio.wrap_future(future)] = (count, future)
        if not pending:
            return pipeline.result()
        finished, _ = await asyncio.wait(
            pending, timeout=_POLL if cancel is not None else None,
            return_when=asyncio.FIRST_COMPLETED)
        for waited in finished:
            count, future = pending.pop(waited)
            _settle(pipeline, count, future, on_progress)
