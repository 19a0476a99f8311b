"""The blocking driver of a repair: :mod:`.core`'s cores over the sync client, the batches
on a thread pool.

Theory of operation
-------------------
The calling thread drives :func:`~.core.receive_core` on one peek-lock receiver; each batch
it starts runs :func:`~.core.batch_core` on a pool thread (``in_flight`` at once, a
semaphore's slots, all pipelined on the client's one connection). A batch's
:class:`~.core.Transfer` submits every send and the settlement together and waits for all
of them. Transactions are declared ahead on the pool (:class:`_Mover`: up to
:data:`DECLARED_AHEAD`, never more than the batches still to come): the first while the
receiver and the senders attach, the next while earlier batches move; a batch given one
whose connection was lost since declares its own on the new connection, and any that no
batch took is rolled back at the end. While held, every received message's lock is kept
alive by a [LockRenewer][sbmgmt.renewer.LockRenewer].
"""

from __future__ import annotations

import threading
import time
from collections import deque
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
from .run import RunState, batches

__all__ = ["DECLARED_AHEAD", "run_blocking"]

_T = TypeVar("_T")
#: How many transactions are kept declared ahead of the batches that will take them (never
#: more than the batches still to come): a batch then waits for its sends and its commit,
#: not for a declare first. With 24 batches in flight, 8 ahead against none: a 10,000
#: message move at 20 ms 1.62-1.64 -> 1.39-1.40 s (the declare, a round trip and a turn in
#: the coordinator's queue, was a third of each batch's time).
DECLARED_AHEAD = 8


def _attached(attempt: Callable[[], _T]) -> _T:
    """``attempt()`` (an attach), again as the one retry policy says."""
    return ATTACH_RETRY.run(lambda _seconds: attempt(), idempotent=True,
                            timeout=ATTACH_DEADLINE)


class _Mover:
    """The links of one run, the transactions declared ahead, and each step's request."""

    def __init__(self, client: ManagementClient, run: RunState, stack: ExitStack,
                 pool: ThreadPoolExecutor) -> None:
        self.client = client
        self.run = run
        self.stack = stack
        self.pool = pool
        self.prefetch = run.settings.prefetch(len(run.plan.items))
        self._senders: dict[str, Any] = {}
        self._lock = threading.Lock()  # the senders
        self.receiver: Any = None
        #: Transactions declared ahead of the batches that will take them, oldest first.
        self._ahead: deque[Future[Transaction]] = deque()
        self._ahead_lock = threading.Lock()

    def open_receiver(self) -> Any:
        entity = self.client.entity(self.run.plan.source)
        self.receiver = _attached(lambda: self.stack.enter_context(
            entity.receiver(prefetch=self.prefetch)))
        return self.receiver

    def sender(self, target: str) -> Any:
        """The sender for ``target`` (a new link after a lost one)."""
        with self._lock:
            found = self._senders.get(target)
            if found is None or found.ended:
                found = self.stack.enter_context(
                    self.client.entity(target).sender(via=self.run.via(target)))
                self._senders[target] = found
            return found

    def attach_quietly(self, target: str) -> None:
        """Attach ``target``'s sender ahead of the first batch; a refusal is left for that
        batch to meet (and report) when it asks for the sender itself."""
        with suppress(ServiceBusManagementError):
            self.sender(target)

    def end_links(self) -> None:
        """Detach the receiver (which gives back what it holds) and the senders at once:
        each waits a round trip or two for the service's answer, all together."""
        links = [link for link in (self.receiver, *self._senders.values()) if link is not None]
        for ended in [self.pool.submit(link.__exit__, None, None, None) for link in links]:
            ended.result()

    def declare_ahead(self, batches_left: int) -> None:
        """Keep transactions declared ahead, on the pool, for the next of the batches still
        to come (at most :data:`DECLARED_AHEAD`). A refused declare (the Basic tier) is met
        by the batch that takes it, as its own would be."""
        with self._ahead_lock:
            while self.run.transactional and len(self._ahead) < min(batches_left,
                                                                     DECLARED_AHEAD):
                self._ahead.append(self.pool.submit(
                    lambda: self.client.transaction().__enter__()))

    def drop_ahead(self) -> None:
        """Roll back, all at once, the transactions declared ahead that no batch took."""
        with self._ahead_lock:
            unused, self._ahead = list(self._ahead), deque()
        wait_all([self.pool.submit(_roll_back, ahead) for ahead in unused])

    def declare(self) -> Transaction:
        """One declared ahead if still usable (its connection not lost since: else this
        batch declares its own on the new one rather than fail), else a new one."""
        with self._ahead_lock:
            ahead = self._ahead.popleft() if self._ahead else None
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
    source = run.plan.source
    settings = run.settings
    held: list[ReceivedMessage] = []
    with ExitStack() as stack:
        lock_renewer = renewer or stack.enter_context(LockRenewer(client))
        pool = stack.enter_context(ThreadPoolExecutor(settings.in_flight + DECLARED_AHEAD,
                                                      "sbmgmt-repair"))
        mover = _Mover(client, run, stack, pool)
        # The senders attach while the receiver does (round trips that would otherwise
        # come one after the other before the first batch).
        jobs: list[Future[None]] = [pool.submit(mover.attach_quietly, target)
                                    for target in run.target_names()]
        mover.declare_ahead(batches(len(run.remaining), settings.batch_size))
        stack.callback(mover.drop_ahead)  # before the pool shuts down, whatever ends the run
        slots = threading.Semaphore(settings.in_flight)

        def job(receiver: Any, batch: list[ReceivedMessage]) -> None:
            try:
                drive(core.batch_core(run, batch), partial(mover.batch_step, receiver))
            finally:
                for message in batch:
                    lock_renewer.unregister(source, message)
                slots.release()

        def receive_step(step: ReceiveStep) -> Any:
            if isinstance(step, core.Receive):
                received = mover.receiver.receive_messages(step.count, step.wait)
                for message in received:
                    lock_renewer.register(source, message)
                return received
            if isinstance(step, core.SetPrefetch):
                return mover.receiver.set_prefetch(step.count)
            if isinstance(step, core.Attach):
                return mover.open_receiver()
            if isinstance(step, core.Taken):
                held.extend(step.held)
                if step.batch:
                    slots.acquire()
                    jobs.append(pool.submit(job, mover.receiver, step.batch))
                return None
            assert isinstance(step, core.DeclareAhead)
            return mover.declare_ahead(step.batches)

        drive(core.receive_core(run, cancel, time.monotonic), receive_step)
        wait_all(jobs)
        for message in held:  # given back when the receiver's block ends
            lock_renewer.unregister(source, message)
        for finished in jobs:
            finished.result()  # a bug, not the service: raised, not reported
        mover.end_links()
    entity = client.entity(source)
    drive(core.unknown_core(run), lambda step: entity.peek_messages(step.sequence_number, 1))

