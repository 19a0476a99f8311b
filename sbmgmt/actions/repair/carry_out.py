"""Carrying out a plan: [repair][sbmgmt.actions.repair.repair] (the sync client) and
[repair_async][sbmgmt.actions.repair.repair_async] (the asyncio client), the one action
with its two drivers (:mod:`.blocking`, :mod:`.aio`) over the same cores (:mod:`.core`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import ManagementClient
from sbmgmt.renewer import AsyncLockRenewer, LockRenewer

from ..contract import CancelToken, OnProgress
from ..targets import IfDuplicate
from .aio import run_async
from .blocking import run_blocking
from .keywords import LegacyProgress, contract_keywords
from .report import RepairReport
from .run import DEFAULT_IN_FLIGHT, RepairSettings, RunState
from .selection import RepairPlan

__all__ = ["repair", "repair_async"]


def repair(client: ManagementClient, plan: RepairPlan, *,
           set_properties: Mapping[str, Any] | None = None,
           keep_dead_letter_fields: bool = False,
           if_duplicate: IfDuplicate = IfDuplicate.REFUSE,
           transactional: bool = True,
           batch_size: int = 100,
           in_flight: int = DEFAULT_IN_FLIGHT,
           idle_wait: float = 2.0,
           on_progress: OnProgress | None = None,
           cancel: CancelToken | threading.Event | None = None,
           renewer: LockRenewer | None = None,
           progress: LegacyProgress | None = None) -> RepairReport:
    """Carry out a plan: move each planned message to its target and remove it from the
    source, each batch in a transaction (the package's docstring: what is guaranteed).

    Args:
        client: The namespace's client (the plan's).
        plan: What to move ([plan_resubmit][sbmgmt.actions.repair.plan_resubmit] or
            [plan_move][sbmgmt.actions.repair.plan_move]).
        set_properties: Application properties to set on every copy.
        keep_dead_letter_fields: Keep ``DeadLetterReason`` / ``DeadLetterErrorDescription``
            on the copies (cleared by default).
        if_duplicate: What to do with the plan's ``at_risk`` items, copies the target's
            duplicate detection may drop ([IfDuplicate][sbmgmt.actions.targets.IfDuplicate]):
            refuse the run (the default), give them a new MessageId, leave them in the
            source, or send them as they are.
        transactional: Move each batch in a transaction (the default); False sends, then
            completes (a drop in between leaves a duplicate, reported). A namespace that
            refuses to declare a transaction (the Basic tier) falls back to False, found by
            the first batch's declare (``RepairReport.transactional`` says which ran).
        batch_size: Messages per batch (and per transaction), 1 to 1,000; with
            ``transactional``, at most ``TRANSACTION_MESSAGES`` (100).
        in_flight: Batches moving at once, 1 to 64 (24, with 8 transactions declared
            ahead: against the fake at 20 ms of latency, a 10,000 message move took
            1.18-1.26 s against 1.42-1.52 s with 16 and none ahead; 32 was no faster).
        idle_wait: Seconds without a planned message arriving after which the rest of the
            plan is reported as not found.
        on_progress: Told a ``sbmgmt.actions.contract.Progress`` after each batch
            (done and planned messages; moved and failed so far), from a worker thread.
        cancel: Cancel it to stop: the batches in flight finish, no new one starts, and
            the report's outcome is CANCELLED (a ``threading.Event`` is taken for one
            release, deprecated).
        renewer: The lock renewer keeping the received messages' locks alive; None: one of
            the action's own, stopped at the end.
        progress: Deprecated (one release): ``progress(done, planned)``; use
            ``on_progress``.

    Returns:
        The report; its outcome is FAILED (and ``error`` says why) when the receiver could
        not be attached (at the start, or again after its link was lost), even after the
        retries of the one retry policy: it counts what was moved by then.

    Raises:
        ValueError: ``batch_size``, ``in_flight`` or ``idle_wait`` is out of range (a
            transactional batch of more than 100 messages included: nothing was locked).
        sbmgmt.errors.DuplicatesRefusedError: The plan has items at risk and
            ``if_duplicate`` is ``REFUSE`` (nothing was locked or sent).
    """
    on_progress, token = contract_keywords(on_progress, cancel, progress)
    run = RunState.begin(plan, RepairSettings(
        set_properties, keep_dead_letter_fields, if_duplicate, transactional, batch_size,
        in_flight, idle_wait), on_progress)
    run_blocking(client, run, token, renewer)
    return run.close()


async def repair_async(client: AsyncManagementClient, plan: RepairPlan, *,
                       set_properties: Mapping[str, Any] | None = None,
                       keep_dead_letter_fields: bool = False,
                       if_duplicate: IfDuplicate = IfDuplicate.REFUSE,
                       transactional: bool = True,
                       batch_size: int = 100,
                       in_flight: int = DEFAULT_IN_FLIGHT,
                       idle_wait: float = 2.0,
                       on_progress: OnProgress | None = None,
                       cancel: CancelToken | None = None,
                       renewer: AsyncLockRenewer | None = None) -> RepairReport:
    """[repair][sbmgmt.actions.repair.repair] over the asyncio client: the same decisions
    (the same cores), the batches as tasks on the client's loop, the same report.

    The plan is made as for ``repair`` (``plan_resubmit`` / ``plan_move`` take the sync
    client: a plan is data, it does not care which client carries it out). Arguments,
    report and errors: as for ``repair``; ``on_progress`` is called on the loop, and
    ``renewer`` is an [AsyncLockRenewer][sbmgmt.renewer.AsyncLockRenewer].
    """
    run = RunState.begin(plan, RepairSettings(
        set_properties, keep_dead_letter_fields, if_duplicate, transactional, batch_size,
        in_flight, idle_wait), on_progress)
    await run_async(client, run, cancel, renewer)
    return run.close()
