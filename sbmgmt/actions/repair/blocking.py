"""The blocking driver of a repair: :mod:`.core`'s cores over the sync client, the batches
on a thread pool.

Theory of operation
-------------------
The calling thread drives :func:`~.core.receive_core` on one peek-lock receiver; each batch
it starts runs :func:`~.core.batch_core` on a pool thread (``in_flight`` at once, a
semaphore's slots, all pipelined on the client's one connection). A batch's
:class:`~.core.Transfer` submits every send and the settlement together and waits for all
of them. Transactions are declared ahead on the pool (:class:`_Mover`: up to
:data:`~.links.DECLARED_AHEAD`, never more than the batches still to come): the first while
the receiver and the senders attach, the next while earlier batches move; a batch given one
whose connection was lost since declares its own on the new connection, and any that no
batch took is rolled back at the end. While held, every received message's lock is kept
alive by a [LockRenewer][sbmgmt.renewer.LockRenewer]. What the asyncio driver does alike is
written once in :class:`~.links.Links`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from contextlib import ExitStack, suppress
from functools import partial
from typing import Any, TypeVar

from sbmgmt.client import ManagementClient, Transaction
from sbmgmt.errors import ConnectionLostError, OperationTimeoutError, ServiceBusManagementError
from sbmgmt.message import ReceivedMessage
from sbmgmt.renewer import LockRenewer

from ..contract import CancelToken, drive
from . import core
from .core import ATTACH_DEADLINE, ATTACH_RETRY, BATCH_TIMEOUT, BatchStep, ReceiveStep
from .links import DECLARED_AHEAD, Links
from .run import RunState, batches

__all__ = ["run_blocking"]

_T = TypeVar("_T")


def _attached(attempt: Callable[[], _T]) -> _T:
    """``attempt()`` (an attach), again as the one retry policy says."""
    return ATTACH_RETRY.run(lambda _seconds: attempt(), idempotent=True,
                            timeout=ATTACH_DEADLINE)


class _Mover(Links[Future[Transaction]]):
    """The run's :class:`~.links.Links` on threads, and each step's request."""

    def __init__(self, client: ManagementClient, run: RunState, stack: ExitStack,
                 pool: ThreadPoolExecutor, renewer: LockRenewer) -> None:
        self.slots = threading.Semaphore(run.settings.in_flight)
        super().__init__(run, renewer, self.slots)
        self.client = client
        self.stack = stack
        self.pool = pool
        self._lock = threading.Lock()  # the senders
        self._ahead_lock = threading.Lock()

    def open_receiver(self) -> Any:
        entity = self.client.entity(self.run.plan.source)
        self.receiver = _attached(lambda: self.stack.enter_context(
            entity.receiver(prefetch=self.prefetch)))
        return self.receiver

    def sender(self, target: str) -> Any:
        """The sender for ``target`` (a new link after a lost one)."""
        with self._lock:
            found = self.usable_sender(target)
            if found is None:
                found = self.senders[target] = self.stack.enter_context(
                    self.client.entity(target).sender(via=self.run.via(target)))
            return found

    def attach_quietly(self, target: str) -> None:
        """Attach ``target``'s sender ahead of the first batch; a refusal is left for that
        batch to meet (and report) when it asks for the sender itself."""
        with suppress(ServiceBusManagementError):
            self.sender(target)

    def end_links(self) -> None:
        """Detach the receiver (which gives back what it holds) and the senders at once:
        each waits a round trip or two for the service's answer, all together."""
        ending = [self.pool.submit(link.__exit__, None, None, None) for link in self.attached()]
        for ended in ending:
            ended.result()

    def declare_ahead(self, batches_left: int) -> None:
        """Keep transactions declared ahead, on the pool, for the next of the batches still
        to come. A refused declare (the Basic tier) is met by the batch that takes it, as
        its own would be."""
        with self._ahead_lock:
            for _ in range(self.to_declare(batches_left)):
                self.ahead.append(self.pool.submit(
                    lambda: self.client.transaction().__enter__()))

    def drop_ahead(self) -> None:
        """Roll back, all at once, the transactions declared ahead that no batch took."""
        with self._ahead_lock:
            unused = self.unused_ahead()
        wait_all([self.pool.submit(_roll_back, ahead) for ahead in unused])

    def declare(self) -> Transaction:
        """One declared ahead if still usable (its connection not lost since: else this
        batch declares its own on the new one rather than fail), else a new one."""
        with self._ahead_lock:
            ahead = self.next_ahead()
        if ahead is not None:
            try:
                declared = ahead.result()
                declared.check_usable("send")
                return declared
            except ConnectionLostError:  # TransactionLostError too
                pass
        return self.client.transaction().__enter__()

    def batch_step(self, receiver: Any, step: BatchStep) -> Any:
        if isinstance(step, core.Declare):
            return self.declare()
        if isinstance(step, core.Transfer):
            futures = [self.sender(target).submit_all(copies, transaction=step.transaction)
                       for target, copies in step.sends.items()]
            if step.complete:
                futures.append(receiver.settle(step.complete, "completed",
                                               transaction=step.transaction))
            return _wait(futures)
        if isinstance(step, core.Commit):
            return step.transaction.commit()
        return step.transaction.rollback()


def _roll_back(declared: Future[Transaction]) -> None:
    """Roll back a transaction declared ahead (none if its declare failed)."""
    with suppress(ServiceBusManagementError, ValueError):
        declared.result().rollback()


def _wait(futures: Sequence[Future[Any]]) -> None:
    """Wait for a batch's sends and settlements (at most a transaction's life: two
    minutes); the first error is raised."""
    _done, pending = wait_all(futures, timeout=BATCH_TIMEOUT)
    if pending:
        raise OperationTimeoutError(
            f"{len(pending)} sends or settlements got no outcome in {BATCH_TIMEOUT:g} s",
            operation="move")
    for future in futures:
        future.result(0)


def run_blocking(client: ManagementClient, run: RunState, cancel: CancelToken | None,
                 renewer: LockRenewer | None) -> None:
    """Carry out ``run`` over the sync client (the module's theory)."""
    settings = run.settings
    with ExitStack() as stack:
        lock_renewer = renewer or stack.enter_context(LockRenewer(client))
        pool = stack.enter_context(ThreadPoolExecutor(settings.in_flight + DECLARED_AHEAD,
                                                      "sbmgmt-repair"))
        mover = _Mover(client, run, stack, pool, lock_renewer)
        # The senders attach while the receiver does (round trips that would otherwise
        # come one after the other before the first batch).
        jobs: list[Future[None]] = [pool.submit(mover.attach_quietly, target)
                                    for target in run.target_names()]
        mover.declare_ahead(batches(len(run.remaining), settings.batch_size))
        stack.callback(mover.drop_ahead)  # before the pool shuts down, whatever ends the run

        def job(receiver: Any, batch: list[ReceivedMessage]) -> None:
            try:
                drive(core.batch_core(run, batch), partial(mover.batch_step, receiver))
            finally:
                mover.batch_ended(batch)

        def receive_step(step: ReceiveStep) -> Any:
            if isinstance(step, core.Receive):
                return mover.received(mover.receiver.receive_messages(step.count, step.wait))
            if isinstance(step, core.SetPrefetch):
                return mover.receiver.set_prefetch(step.count)
            if isinstance(step, core.Attach):
                return mover.open_receiver()
            if isinstance(step, core.Start):
                mover.slots.acquire()
                jobs.append(pool.submit(job, mover.receiver, step.batch))
                return None
            return mover.declare_ahead(step.batches)

        drive(core.receive_core(run, cancel, time.monotonic), receive_step)
        wait_all(jobs)
        mover.give_back_held()
        for finished in jobs:
            finished.result()  # a bug, not the service: raised, not reported
        mover.end_links()
    entity = client.entity(run.plan.source)
    drive(core.unknown_core(run), lambda step: entity.peek_messages(step.sequence_number, 1))
