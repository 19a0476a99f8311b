"""The asyncio driver of a repair: :mod:`.core`'s cores over
[AsyncManagementClient][sbmgmt.AsyncManagementClient], the batches as tasks.

Theory of operation
-------------------
The blocking driver's (:mod:`.blocking`) with a task where it has a thread: the calling
task drives :func:`~.core.receive_core`; each batch runs :func:`~.core.batch_core` in a
task of its own (``in_flight`` at once, an :class:`asyncio.Semaphore`'s slots); a
:class:`~.core.Transfer`'s sends and settlement are gathered; transactions are declared
ahead in tasks (at most :data:`~.blocking.DECLARED_AHEAD`) and those no batch took are
rolled back at the end; an [AsyncLockRenewer][sbmgmt.renewer.AsyncLockRenewer] keeps the
received messages' locks alive. Everything runs on the client's event loop, so the state
the batches share is never touched by two at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, suppress
from typing import Any, TypeVar

from sbmgmt.aio import AsyncManagementClient, AsyncTransaction
from sbmgmt.errors import ConnectionLostError, OperationTimeoutError, ServiceBusManagementError
from sbmgmt.message import ReceivedMessage
from sbmgmt.renewer import AsyncLockRenewer

from ..contract import CancelToken, drive_async
from . import core
from .blocking import DECLARED_AHEAD
from .core import ATTACH_DEADLINE, ATTACH_RETRY, BATCH_TIMEOUT, BatchStep, ReceiveStep
from .run import RunState, batches

__all__ = ["run_async"]

_T = TypeVar("_T")


async def _attached(attempt: Callable[[], Awaitable[_T]]) -> _T:
    """``await attempt()`` (an attach), again as the one retry policy says."""
    return await ATTACH_RETRY.run_async(lambda _seconds: attempt(), idempotent=True,
                                        timeout=ATTACH_DEADLINE)


class _AsyncMover:
    """The links of one run, the transactions declared ahead, and each step's request."""

    def __init__(self, client: AsyncManagementClient, run: RunState,
                 stack: AsyncExitStack) -> None:
        self.client = client
        self.run = run
        self.stack = stack
        self.prefetch = run.settings.prefetch(len(run.plan.items))
        self._senders: dict[str, Any] = {}
        self._lock = asyncio.Lock()  # the senders
        self.receiver: Any = None
        self._ahead: deque[asyncio.Task[AsyncTransaction]] = deque()
        self.tasks: list[asyncio.Task[Any]] = []

    async def open_receiver(self) -> Any:
        entity = self.client.entity(self.run.plan.source)
        self.receiver = await _attached(lambda: self.stack.enter_async_context(
            entity.receiver(prefetch=self.prefetch)))
        return self.receiver

    async def sender(self, target: str) -> Any:
        """The sender for ``target`` (a new link after a lost one)."""
        async with self._lock:
            found = self._senders.get(target)
            if found is None or found.ended:
                found = await self.stack.enter_async_context(
                    self.client.entity(target).sender(via=self.run.via(target)))
                self._senders[target] = found
            return found

    async def attach_quietly(self, target: str) -> None:
        """Attach ``target``'s sender ahead of the first batch (a refusal is met by the
        first batch that asks for it)."""
        with suppress(ServiceBusManagementError):
            await self.sender(target)

    async def end_links(self) -> None:
        """Detach the receiver (which gives back what it holds) and the senders at once."""
        links = [link for link in (self.receiver, *self._senders.values()) if link is not None]
        await asyncio.gather(*(link.__aexit__(None, None, None) for link in links))

    def start(self, work: Coroutine[Any, Any, Any]) -> None:
        self.tasks.append(asyncio.ensure_future(work))

    def declare_ahead(self, batches_left: int) -> None:
        """Keep transactions declared ahead for the next of the batches still to come."""
        while self.run.transactional and len(self._ahead) < min(batches_left,
                                                                 DECLARED_AHEAD):
            self._ahead.append(asyncio.ensure_future(self.client.transaction().__aenter__()))

    async def drop_ahead(self) -> None:
        """Roll back, all at once, the transactions declared ahead that no batch took."""
        unused, self._ahead = list(self._ahead), deque()
        await asyncio.gather(*(_roll_back(ahead) for ahead in unused))

    async def declare(self) -> AsyncTransaction:
        """One declared ahead if still usable, else a new one (as the blocking driver)."""
        ahead = self._ahead.popleft() if self._ahead else None
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
    source = run.plan.source
    settings = run.settings
    held: list[ReceivedMessage] = []
    async with AsyncExitStack() as stack:
        lock_renewer = (renewer if renewer is not None
                        else await stack.enter_async_context(AsyncLockRenewer(client)))
        mover = _AsyncMover(client, run, stack)
        for target in run.target_names():
            mover.start(mover.attach_quietly(target))
        mover.declare_ahead(batches(len(run.remaining), settings.batch_size))
        stack.push_async_callback(mover.drop_ahead)
        slots = asyncio.Semaphore(settings.in_flight)

        async def job(receiver: Any, batch: list[ReceivedMessage]) -> None:
            try:
                await drive_async(core.batch_core(run, batch),
                                  lambda step: mover.batch_step(receiver, step))
            finally:
                for message in batch:
                    lock_renewer.unregister(source, message)
                slots.release()

        async def receive_step(step: ReceiveStep) -> Any:
            if isinstance(step, core.Receive):
                received = await mover.receiver.receive_messages(step.count, step.wait)
                for message in received:
                    lock_renewer.register(source, message)
                return received
            if isinstance(step, core.SetPrefetch):
                return mover.receiver.set_prefetch(step.count)
            if isinstance(step, core.Attach):
                return await mover.open_receiver()
            if isinstance(step, core.Taken):
                held.extend(step.held)
                if step.batch:
                    await slots.acquire()
                    mover.start(job(mover.receiver, step.batch))
                return None
            assert isinstance(step, core.DeclareAhead)
            return mover.declare_ahead(step.batches)

        await drive_async(core.receive_core(run, cancel, time.monotonic), receive_step)
        outcomes = await asyncio.gather(*mover.tasks, return_exceptions=True)
        for message in held:  # given back when the receiver's block ends
            lock_renewer.unregister(source, message)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome  # a bug, not the service: raised, not reported
        await mover.end_links()
    entity = client.entity(source)
    await drive_async(core.unknown_core(run),
                      lambda step: entity.peek_messages(step.sequence_number, 1))
