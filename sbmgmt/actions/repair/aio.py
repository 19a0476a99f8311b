"""The asyncio driver of a repair: :mod:`.core`'s cores over
[AsyncManagementClient][sbmgmt.AsyncManagementClient], the batches as tasks.

Theory of operation
-------------------
The blocking driver's (:mod:`.blocking`) with a task where it has a thread: the calling
task drives :func:`~.core.receive_core`; each batch runs :func:`~.core.batch_core` in a
task of its own (``in_flight`` at once, an :class:`asyncio.Semaphore`'s slots); a
:class:`~.core.Transfer`'s sends and settlement are gathered; transactions are declared
ahead in tasks (at most :data:`~.links.DECLARED_AHEAD`) and those no batch took are
rolled back at the end; an [AsyncLockRenewer][sbmgmt.renewer.AsyncLockRenewer] keeps the
received messages' locks alive. Everything runs on the client's event loop, so the state
the batches share is never touched by two at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, suppress
from typing import Any, TypeVar

from sbmgmt.aio import AsyncManagementClient, AsyncTransaction
from sbmgmt.errors import ConnectionLostError, OperationTimeoutError, ServiceBusManagementError
from sbmgmt.message import ReceivedMessage
from sbmgmt.renewer import AsyncLockRenewer

from ..contract import CancelToken, drive_async
from . import core
from .core import ATTACH_DEADLINE, ATTACH_RETRY, BATCH_TIMEOUT, BatchStep, ReceiveStep
from .links import Links
from .run import RunState, batches

__all__ = ["run_async"]

_T = TypeVar("_T")


async def _attached(attempt: Callable[[], Awaitable[_T]]) -> _T:
    """``await attempt()`` (an attach), again as the one retry policy says."""
    return await ATTACH_RETRY.run_async(lambda _seconds: attempt(), idempotent=True,
                                        timeout=ATTACH_DEADLINE)


class _AsyncMover(Links[asyncio.Task[AsyncTransaction]]):
    """The run's :class:`~.links.Links` on tasks, and each step's request."""

    def __init__(self, client: AsyncManagementClient, run: RunState, stack: AsyncExitStack,
                 renewer: AsyncLockRenewer) -> None:
        self.slots = asyncio.Semaphore(run.settings.in_flight)
        super().__init__(run, renewer, self.slots)
        self.client = client
        self.stack = stack
        self._lock = asyncio.Lock()  # the senders
        self.tasks: list[asyncio.Task[Any]] = []

    async def open_receiver(self) -> Any:
        entity = self.client.entity(self.run.plan.source)
        self.receiver = await _attached(lambda: self.stack.enter_async_context(
            entity.receiver(prefetch=self.prefetch)))
        return self.receiver

    async def sender(self, target: str) -> Any:
        """The sender for ``target`` (a new link after a lost one)."""
        async with self._lock:
            found = self.usable_sender(target)
            if found is None:
                found = self.senders[target] = await self.stack.enter_async_context(
                    self.client.entity(target).sender(via=self.run.via(target)))
            return found

    async def attach_quietly(self, target: str) -> None:
        """Attach ``target``'s sender ahead of the first batch (a refusal is met by the
        first batch that asks for it)."""
        with suppress(ServiceBusManagementError):
            await self.sender(target)

    async def end_links(self) -> None:
        """Detach the receiver (which gives back what it holds) and the senders at once."""
        await asyncio.gather(*(link.__aexit__(None, None, None) for link in self.attached()))

    def start(self, work: Coroutine[Any, Any, Any]) -> None:
        self.tasks.append(asyncio.ensure_future(work))

    def declare_ahead(self, batches_left: int) -> None:
        """Keep transactions declared ahead for the next of the batches still to come."""
        for _ in range(self.to_declare(batches_left)):
            self.ahead.append(asyncio.ensure_future(self.client.transaction().__aenter__()))

    async def drop_ahead(self) -> None:
        """Roll back, all at once, the transactions declared ahead that no batch took."""
        await asyncio.gather(*(_roll_back(ahead) for ahead in self.unused_ahead()))

    async def declare(self) -> AsyncTransaction:
        """One declared ahead if still usable, else a new one (as the blocking driver)."""
        ahead = self.next_ahead()
        if ahead is not None:
            try:
                declared = await ahead
                declared.check_usable("send")
                return declared
            except ConnectionLostError:  # TransactionLostError too
                pass
        return await self.client.transaction().__aenter__()

    async def batch_step(self, receiver: Any, step: BatchStep) -> Any:
        if isinstance(step, core.Declare):
            return await self.declare()
        if isinstance(step, core.Transfer):
            senders = [(await self.sender(target), copies)
                       for target, copies in step.sends.items()]
            work = [sender.send_messages(copies, transaction=step.transaction)
                    for sender, copies in senders]
            if step.complete:
                work.append(receiver.complete_messages(step.complete,
                                                       transaction=step.transaction))
            return await _gathered(work)
        if isinstance(step, core.Commit):
            return await step.transaction.commit()
        return await step.transaction.rollback()


async def _roll_back(declared: asyncio.Task[AsyncTransaction]) -> None:
    with suppress(ServiceBusManagementError, ValueError):
        await (await declared).rollback()


async def _gathered(work: list[Coroutine[Any, Any, None]]) -> None:
    """Await a batch's sends and settlements together (at most a transaction's life); the
    first error is raised once every outcome is in."""
    try:
        outcomes = await asyncio.wait_for(asyncio.gather(*work, return_exceptions=True),
                                          BATCH_TIMEOUT)
    except asyncio.TimeoutError:
        raise OperationTimeoutError(
            f"sends or settlements got no outcome in {BATCH_TIMEOUT:g} s",
            operation="move") from None
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


async def run_async(client: AsyncManagementClient, run: RunState,
                    cancel: CancelToken | None, renewer: AsyncLockRenewer | None) -> None:
    """Carry out ``run`` over the asyncio client (the module's theory)."""
    async with AsyncExitStack() as stack:
        lock_renewer = (renewer if renewer is not None
                        else await stack.enter_async_context(AsyncLockRenewer(client)))
        mover = _AsyncMover(client, run, stack, lock_renewer)
        for target in run.target_names():
            mover.start(mover.attach_quietly(target))
        mover.declare_ahead(batches(len(run.remaining), run.settings.batch_size))
        stack.push_async_callback(mover.drop_ahead)

        async def job(receiver: Any, batch: list[ReceivedMessage]) -> None:
            try:
                await drive_async(core.batch_core(run, batch),
                                  lambda step: mover.batch_step(receiver, step))
            finally:
                mover.batch_ended(batch)

        async def receive_step(step: ReceiveStep) -> Any:
            if isinstance(step, core.Receive):
                return mover.received(await mover.receiver.receive_messages(step.count,
                                                                            step.wait))
            if isinstance(step, core.SetPrefetch):
                return mover.receiver.set_prefetch(step.count)
            if isinstance(step, core.Attach):
                return await mover.open_receiver()
            if isinstance(step, core.Start):
                await mover.slots.acquire()
                return mover.start(job(mover.receiver, step.batch))
            return mover.declare_ahead(step.batches)

        await drive_async(core.receive_core(run, cancel, time.monotonic), receive_step)
        outcomes = await asyncio.gather(*mover.tasks, return_exceptions=True)
        mover.give_back_held()
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome  # a bug, not the service: raised, not reported
        await mover.end_links()
    entity = client.entity(run.plan.source)
    await drive_async(core.unknown_core(run),
                      lambda step: entity.peek_messages(step.sequence_number, 1))
