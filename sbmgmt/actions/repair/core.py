"""Repair's sans-I/O cores: every decision of a run, written once, driven by the blocking
driver (:mod:`.blocking`: threads over the sync client) and the asyncio one (:mod:`.aio`).

Theory of operation
-------------------
A run is three kinds of core (generators, :data:`~sbmgmt.actions.contract.Core`), each
yielding the requests it wants made and being sent their replies, or having their
:class:`~sbmgmt.errors.ServiceBusManagementError` thrown in:

- :func:`receive_core`, one a run: receive the next messages (:class:`Receive`), keep the
  planned ones as a batch (:class:`Start`: the driver starts the batch's core when one of
  ``in_flight`` slots is free) and hold the others (``RunState.held``), keep transactions
  declared ahead of the batches still to come (:class:`DeclareAhead`), lower the receiver's
  prefetch to what the plan still needs (:class:`SetPrefetch`: the last planned message
  leaves it no credit, so its detach drains nothing), attach the receiver (:class:`Attach`:
  at the start, and again after its link was lost; when it cannot be, the run FAILED),
  and stop when the plan is done, the caller cancelled,
  or nothing planned came for ``idle_wait`` seconds.
- :func:`batch_core`, one a batch: in a transaction (:class:`Declare`; the driver gives
  one declared ahead when it is still usable), send the copies to their targets and
  complete the originals together (:class:`Transfer`), then :class:`Commit`; a failure
  before the commit rolls it back (:class:`RollBack`) and fails the batch's messages; a
  commit whose outcome was lost leaves the batch for :func:`unknown_core`. Without a
  transaction (asked for, or the namespace refused the first declare: the Basic tier)
  each target's copies are sent, then the originals completed.
- :func:`unknown_core`, at the end: each message of a batch whose commit's outcome was
  lost is peeked for (:class:`Peek`): still in the source, it was not moved; gone, it was.

The drivers know how to make each step's request and nothing of what it means; the state
the batches share is the :class:`~.run.RunState`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from sbmgmt import RetryPolicy
from sbmgmt.errors import (
    ServiceBusManagementError,
    TransactionDeclareError,
    TransactionOutcomeUnknownError,
)
from sbmgmt.message import Message, ReceivedMessage

from ..contract import CancelToken, Outcome, is_cancelled
from .report import Failure
from .run import RunState, batches

__all__ = [
    "ATTACH_DEADLINE",
    "ATTACH_RETRY",
    "Attach",
    "BATCH_TIMEOUT",
    "BatchStep",
    "Commit",
    "Declare",
    "DeclareAhead",
    "Peek",
    "Receive",
    "ReceiveStep",
    "RollBack",
    "SetPrefetch",
    "Start",
    "Transfer",
    "batch_core",
    "receive_core",
    "unknown_core",
]

#: Attaching a link again after its connection was lost (the client reconnects meanwhile)
#: goes through the project's one retry policy (``sbmgmt.RetryPolicy``: what is retried
#: is its ``is_retryable``; an attach is idempotent, so a lost connection and an attach
#: that got no answer are), with more attempts than a call's default: a run outlives
#: several cuts of a flaky connection.
ATTACH_RETRY = RetryPolicy(max_attempts=20, initial_backoff=0.05, max_backoff=1.0,
                           jitter=0.05)
#: The longest an attach and its retries may take, in seconds.
ATTACH_DEADLINE = 120.0
#: The longest a batch's sends and settlements may take (a transaction's limit).
BATCH_TIMEOUT = 120.0


@dataclass(frozen=True)
class Receive:
    """Receive up to ``count`` messages, waiting up to ``wait`` seconds: the reply is the
    list (the driver registers each with the lock renewer)."""

    count: int
    wait: float


@dataclass(frozen=True)
class SetPrefetch:
    """Lower the receiver's prefetch to ``count``."""

    count: int


@dataclass(frozen=True)
class Attach:
    """Attach a receiver: at the start, or a new one after the link was lost (the locks
    the lost one held expire)."""


@dataclass(frozen=True)
class Start:
    """Start moving ``batch`` (the planned messages of a receive) when a slot is free."""

    batch: list[ReceivedMessage]


@dataclass(frozen=True)
class DeclareAhead:
    """Keep transactions declared ahead for the next of ``batches`` still to come."""

    batches: int


@dataclass(frozen=True)
class Declare:
    """A transaction for this batch: one declared ahead and still usable, else a new one;
    the reply is the transaction."""


@dataclass(frozen=True)
class Transfer:
    """Send each target's copies and complete ``complete`` on the receiver of the batch,
    all at once, in ``transaction`` (None: none); wait for every outcome, raise the first
    error."""

    sends: Mapping[str, list[Message]]
    complete: Sequence[ReceivedMessage]
    transaction: Any


@dataclass(frozen=True)
class Commit:
    """Commit ``transaction``."""

    transaction: Any


@dataclass(frozen=True)
class RollBack:
    """Roll ``transaction`` back."""

    transaction: Any


@dataclass(frozen=True)
class Peek:
    """Peek one message from ``sequence_number`` on in the source: the reply is the list."""

    sequence_number: int


ReceiveStep = Receive | SetPrefetch | Attach | Start | DeclareAhead
BatchStep = Declare | Transfer | Commit | RollBack


def receive_core(run: RunState, cancel: CancelToken | None,
                 clock: Callable[[], float]) -> Generator[ReceiveStep, Any, None]:
    """Receive the plan's messages and start their batches (the module's theory)."""
    settings = run.settings
    if not (yield from _attach(run)):
        return
    prefetch = settings.prefetch(len(run.plan.items))
    last = clock()
    while run.remaining and not is_cancelled(cancel):
        count = min(settings.batch_size, len(run.remaining))
        after = len(run.remaining) - count
        try:
            if after < prefetch:
                yield SetPrefetch(after)
                prefetch = after
            received: list[ReceivedMessage] = yield Receive(count, min(settings.idle_wait, 1.0))
        except ServiceBusManagementError:
            if clock() - last >= settings.idle_wait:
                break  # no progress for that long: what is left is reported
            if not (yield from _attach(run)):
                return
            prefetch = settings.prefetch(len(run.plan.items))
            continue
        batch = run.take(received)
        if batch:
            yield Start(batch)
            last = clock()
            yield DeclareAhead(batches(len(run.remaining), settings.batch_size))
        elif clock() - last >= settings.idle_wait:
            break
    if run.remaining and is_cancelled(cancel):
        run.report.outcome = Outcome.CANCELLED


def _attach(run: RunState) -> Generator[ReceiveStep, Any, bool]:
    """Attach the receiver; when it cannot be (after the retries of the one policy), the
    run fails: what was moved by then is reported."""
    try:
        yield Attach()
    except ServiceBusManagementError as error:
        run.report.outcome = Outcome.FAILED
        run.report.error = f"the receiver of {run.plan.source} could not be attached: {error}"
        return False
    return True


def _failures(messages: Sequence[ReceivedMessage], error: BaseException) -> list[Failure]:
    reason = f"{type(error).__name__}: {error}"
    return [Failure(m.sequence_number or 0, m.message_id, reason) for m in messages]


def batch_core(run: RunState, batch: Sequence[ReceivedMessage]
               ) -> Generator[BatchStep, Any, None]:
    """Move one batch: all of it or none in a transaction; else send, then complete."""
    groups = run.copies(batch)
    try:
        if run.transactional:
            try:
                transaction = yield Declare()
            except TransactionDeclareError:
                if not run.without_transactions():
                    raise
                yield from _send_then_complete(run, groups)
                return
            run.note_declared()
            try:
                yield Transfer({target: copies for target, (_, copies) in groups.items()},
                               batch, transaction)
            except ServiceBusManagementError:
                with suppress(ServiceBusManagementError):  # the service rolls it back anyway
                    yield RollBack(transaction)
                raise
            yield Commit(transaction)
            run.finished(batch, ())
        else:
            yield from _send_then_complete(run, groups)
    except TransactionOutcomeUnknownError:
        run.note_unknown(batch)
    except ServiceBusManagementError as error:
        run.finished((), _failures(batch, error))


def _send_then_complete(
        run: RunState, groups: Mapping[str, tuple[list[ReceivedMessage], list[Message]]],
) -> Generator[BatchStep, Any, None]:
    for target, (originals, copies) in groups.items():
        run.note_sent(copies)
        yield Transfer({target: copies}, (), None)
        # Sent: a drop from here to the completion leaves a copy in both places (the next
        # attempt sends it again, with the same MessageId: reported as a duplicate).
        yield Transfer({}, originals, None)
        run.finished(originals, ())


def unknown_core(run: RunState) -> Generator[Peek, Any, None]:
    """The batches whose commit's outcome was lost: a message still in the source was not
    moved (its copy was not sent either); one gone was."""
    for batch in run.unknown:
        moved: list[ReceivedMessage] = []
        failed: list[Failure] = []
        for message in batch:
            assert message.sequence_number is not None
            try:
                still: list[ReceivedMessage] = yield Peek(message.sequence_number)
            except ServiceBusManagementError as error:
                failed.append(Failure(
                    message.sequence_number, message.message_id,
                    "the transaction's outcome was lost and the source could not be read "
                    f"to tell whether it was applied: {error}"))
                continue
            if still and still[0].sequence_number == message.sequence_number:
                failed.append(Failure(message.sequence_number, message.message_id,
                                      "the transaction's outcome was lost and it was not "
                                      "applied (still in the source)"))
            else:
                moved.append(message)
        run.finished(moved, failed)
