"""The deferred messages' settlement, driven: ``settle_deferred`` (batches on a thread pool
over the sync client) and ``settle_deferred_async`` (tasks on the caller's event loop), each
running ``_core``'s sans-I/O order of work and batch core with the contract's ``drive`` /
``drive_async``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from typing import Any, Protocol

from ...aio import AsyncEntityClient
from ...client import EntityClient
from ...message import ReceivedMessage
from ...renewer import AsyncLockRenewer, LockRenewer
from ..contract import CancelToken, OnProgress, drive, drive_async
from ._core import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_IN_FLIGHT,
    Batches,
    BatchOutcome,
    DeferredAction,
    DeferredReport,
    Plan,
    Probe,
    Receive,
    Selection,
    Unlock,
    Work,
    batch_steps,
    order,
    start,
)

__all__ = ["settle_deferred", "settle_deferred_async"]


class _Settler(Protocol):
    """What settles a batch: an entity's client, or the lock of one of its sessions."""

    def receive_deferred_messages(
        self, sequence_numbers: Iterable[int], settle_mode: Any = ...,
    ) -> list[ReceivedMessage]: ...

    def update_disposition(
        self, lock_tokens: Iterable[Any], status: Any, dead_letter_reason: str | None = ...,
        dead_letter_description: str | None = ...,
    ) -> object: ...


class _AsyncSettler(Protocol):
    """The asyncio twin of ``_Settler``."""

    async def receive_deferred_messages(
        self, sequence_numbers: Iterable[int], settle_mode: Any = ...,
    ) -> list[ReceivedMessage]: ...

    async def update_disposition(
        self, lock_tokens: Iterable[Any], status: Any, dead_letter_reason: str | None = ...,
        dead_letter_description: str | None = ...,
    ) -> object: ...


def _run_batch(settler: _Settler, plan: Plan, numbers: list[int]) -> BatchOutcome:
    """Drive ``batch_steps`` with blocking calls."""
    return drive(batch_steps(numbers), lambda step: (
        settler.receive_deferred_messages(step.numbers) if isinstance(step, Receive)
        else settler.update_disposition(*plan.settle_arguments(step.messages))))


async def _run_batch_async(settler: _AsyncSettler, plan: Plan, numbers: list[int]) -> BatchOutcome:
    """Drive ``batch_steps`` with awaited calls."""
    return await drive_async(batch_steps(numbers), lambda step: (
        settler.receive_deferred_messages(step.numbers) if isinstance(step, Receive)
        else settler.update_disposition(*plan.settle_arguments(step.messages))))


def _submit_through(entity: EntityClient | AsyncEntityClient) -> Any:
    """The renewer's ``submit`` over the entity's client (a session lock renews itself
    through its own ``renew_lock``; this is only the renewer's way to its connection)."""

    def submit(path: str, request: Any, timeout: float) -> Any:
        return entity.submit(request, timeout=timeout)

    return submit


def settle_deferred(
    entity: EntityClient,
    selection: Selection,
    action: DeferredAction | str,
    *,
    dead_letter_reason: str | None = None,
    dead_letter_description: str | None = None,
    requires_session: bool | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    in_flight: int = DEFAULT_IN_FLIGHT,
    on_progress: OnProgress | None = None,
    cancel: CancelToken | None = None,
) -> DeferredReport:
    """Complete, abandon or dead-letter deferred messages, in batches, several in flight.

    Each batch of sequence numbers is locked (receive-by-sequence-number), then settled
    (update-disposition). See the module's theory of operation for what is done when a
    number is no longer deferred, a reply is lost, or the entity requires sessions.

    Args:
        entity: The queue or subscription that holds them.
        selection: Messages [find_deferred][sbmgmt.actions.deferred.find_deferred] gave,
            or sequence numbers (of messages without a session); each is settled once.
        action: A [DeferredAction][sbmgmt.actions.deferred.DeferredAction] or its value.
        dead_letter_reason: With ``dead_letter``: the messages' ``DeadLetterReason``.
        dead_letter_description: With ``dead_letter``: their
            ``DeadLetterErrorDescription``.
        requires_session: Whether the entity requires sessions; None: found out from the
            first batch of messages that have a session id.
        batch_size: Sequence numbers per request (1 or more).
        in_flight: Batches worked on at once (1 or more).
        on_progress: Told after each batch: the numbers dealt with of those selected,
            and the counts so far (``settled``, ``not_found``, ``failed``; on a worker thread).
        cancel: Stops starting batches; those in flight finish, the others are counted in
            ``not_attempted`` and the report's outcome is CANCELLED.

    Returns:
        What was done, by sequence number:
        [DeferredReport][sbmgmt.actions.deferred.DeferredReport].

    Raises:
        TypeError: An item of ``selection`` is neither a message nor an int.
        ValueError: An unknown ``action``, a reason without ``dead_letter``, a bad
            ``batch_size`` or ``in_flight``, or a negative sequence number (before anything
            is sent).
    """
    run, groups = start(action, dead_letter_reason, dead_letter_description, batch_size,
                        in_flight, entity.path, selection, on_progress, cancel)
    plan = run.plan
    with ThreadPoolExecutor(plan.in_flight, thread_name_prefix="sbmgmt-deferred") as pool, \
            ExitStack() as renewing, ExitStack() as held:
        renewer: LockRenewer | None = None

        def each(settler: _Settler, numbers: list[int]) -> None:
            if run.may_start(numbers):
                run.done(_run_batch(settler, plan, numbers))

        def all_of(settler: _Settler, numbers: list[int]) -> None:
            for future in [pool.submit(each, settler, batch) for batch in plan.batches(numbers)]:
                future.result()

        def call(work: Work) -> Any:
            nonlocal renewer
            if isinstance(work, Probe):
                return _run_batch(entity, plan, work.numbers)
            if isinstance(work, Batches):
                return all_of(entity if work.lock is None else work.lock, work.numbers)
            if isinstance(work, Unlock):
                return held.close()
            if renewer is None:
                renewer = renewing.enter_context(LockRenewer(_submit_through(entity)))
            lock = held.enter_context(entity.session(work.session))
            renewer.register_session(entity, lock)
            held.callback(renewer.unregister_session, entity, lock)
            return lock

        drive(order(run, groups, requires_session), call)
    return run.report


async def settle_deferred_async(
    entity: AsyncEntityClient,
    selection: Selection,
    action: DeferredAction | str,
    *,
    dead_letter_reason: str | None = None,
    dead_letter_description: str | None = None,
    requires_session: bool | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    in_flight: int = DEFAULT_IN_FLIGHT,
    on_progress: OnProgress | None = None,
    cancel: CancelToken | None = None,
) -> DeferredReport:
    """The asyncio twin of [settle_deferred][sbmgmt.actions.deferred.settle_deferred]: the
    same settlement and report, its batches as tasks on the event loop.

    Args:
        entity: The queue or subscription's asyncio client.
        selection: Messages
            [find_deferred_async][sbmgmt.actions.deferred.find_deferred_async] gave, or
            sequence numbers; as for ``settle_deferred``.
        action: As for ``settle_deferred``.
        dead_letter_reason: As for ``settle_deferred``.
        dead_letter_description: As for ``settle_deferred``.
        requires_session: As for ``settle_deferred``.
        batch_size: As for ``settle_deferred``.
        in_flight: Batches worked on at once, as tasks (1 or more).
        on_progress: As for ``settle_deferred``, called on the event loop.
        cancel: As for ``settle_deferred``.

    Returns:
        What was done, by sequence number, as ``settle_deferred`` reports it.

    Raises:
        TypeError: As for ``settle_deferred``.
        ValueError: As for ``settle_deferred`` (before anything is sent).
    """
    run, groups = start(action, dead_letter_reason, dead_letter_description, batch_size,
                        in_flight, entity.path, selection, on_progress, cancel)
    plan = run.plan
    slots = asyncio.Semaphore(plan.in_flight)

    async def each(settler: _AsyncSettler, numbers: list[int]) -> None:
        async with slots:
            if run.may_start(numbers):
                run.done(await _run_batch_async(settler, plan, numbers))

    async def all_of(settler: _AsyncSettler, numbers: list[int]) -> None:
        await asyncio.gather(*(each(settler, batch) for batch in plan.batches(numbers)))

    async with AsyncExitStack() as renewing, AsyncExitStack() as held:
        renewer: AsyncLockRenewer | None = None

        async def call(work: Work) -> Any:
            nonlocal renewer
            if isinstance(work, Probe):
                return await _run_batch_async(entity, plan, work.numbers)
            if isinstance(work, Batches):
                return await all_of(entity if work.lock is None else work.lock, work.numbers)
            if isinstance(work, Unlock):
                return await held.aclose()
            if renewer is None:
                renewer = await renewing.enter_async_context(
                    AsyncLockRenewer(_submit_through(entity)))
            lock = await held.enter_async_context(entity.session(work.session))
            renewer.register_session(entity, lock)
            held.callback(renewer.unregister_session, entity, lock)
            return lock

        await drive_async(order(run, groups, requires_session), call)
    return run.report
