"""Purge by number: remove exactly the messages a search found (``sbmgmt find -o ndjson``,
[Found][sbmgmt.actions.search.Found]), each by its sequence number and MessageId.

What the service allows, by state:

- *scheduled*: cancel-scheduled-message takes sequence numbers
  (``EntityClient.cancel_scheduled_messages``): the messages are removed by number.
- *deferred*: receive-by-sequence-number locks them by number, update-disposition
  completes them (:func:`sbmgmt.actions.deferred.settle_deferred`, as ``sbmgmt deferred
  complete`` does).
- *active*: the service has no operation that takes an active message by number.
  Receive-by-sequence-number is for deferred messages only ("Receives a deferred message
  identified by sequenceNumber [...] Throws if the message has not been deferred": the
  .NET SDK's ``ServiceBusReceiver.ReceiveDeferredMessageAsync``, learn.microsoft.com), and
  batch delete (``sbmgmt purge``) takes a count and an enqueued-time cutoff, not numbers.
  The closest honest thing, and what this action does: a peek-lock receiver takes the
  entity's messages in order; a message of the plan (same sequence number, same
  MessageId) is completed, any other is *held* (locked, so it is not handed out again,
  its lock kept alive by a [LockRenewer][sbmgmt.renewer.LockRenewer]) and released when
  the receiver ends (AMQP ``released``: its delivery count unchanged). While the run
  lasts, the messages before the last planned one are locked by it: other consumers do
  not get them until it ends. The receiver stops when every planned message was
  removed, when a receive brings none (``RECEIVE_WAIT`` seconds), or once it has passed
  the highest planned number (the service hands a queue's messages out in
  sequence-number order; the planned numbers it never handed out were locked by another
  receiver or gone: not found). A session's active messages can only be received on its
  session lock: they are left, and counted as ``in_sessions``.

*Planning* (:func:`plan_purge_found`) peeks the numbers' range (nothing is locked or
changed) and sorts the messages named into scheduled, deferred, active and in sessions;
a number that is not in the entity, or holds a message with another MessageId now, is
``not_found`` from the start. *Carrying out* (:func:`purge_found`) removes the scheduled
ones, then the deferred ones, then the active ones, and speaks the actions' contract
(:mod:`sbmgmt.actions.contract`): progress after each request, the cancel token checked
between requests (what was asked finishes, the rest is ``not_attempted``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field

from ..client import EntityClient, ManagementClient
from ..errors import ScheduledMessagesNotFoundError, ServiceBusManagementError
from ..message import MessageId, MessageState, ReceivedMessage
from ..renewer import LockRenewer
from .contract import ActionReport, CancelToken, OnProgress, Outcome, Progress, is_cancelled
from .deferred import DeferredReport, settle_deferred
from .search import Found, FoundLines

__all__ = ["RECEIVE_WAIT", "FoundPurgePlan", "FoundPurgeReport", "Named", "plan_purge_found",
           "purge_found"]

#: Seconds a receive of active messages waits for more before the run ends.
RECEIVE_WAIT = 2.0
#: Messages asked for by one receive of active messages (the service's most is 5,000).
_RECEIVE_COUNT = 250
#: Sequence numbers per cancel-scheduled-message request.
_SCHEDULED_BATCH = 100


@dataclass(frozen=True)
class FoundPurgePlan:
    """The messages a purge by number will remove, as the entity holds them now.

    Attributes:
        entity: The queue or subscription (or a dead-letter queue).
        active: The active messages named, in sequence-number order.
        deferred: The deferred ones.
        scheduled: The scheduled ones.
        in_sessions: Active messages of a session: not removed (see the module's docstring).
        not_found: Numbers not in the entity, or holding a message with another MessageId.
    """

    entity: str
    active: tuple[ReceivedMessage, ...] = ()
    deferred: tuple[ReceivedMessage, ...] = ()
    scheduled: tuple[ReceivedMessage, ...] = ()
    in_sessions: tuple[int, ...] = ()
    not_found: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        """The messages it will remove."""
        return len(self.active) + len(self.deferred) + len(self.scheduled)

    def describe(self) -> str:
        """What it will do, in one sentence."""
        parts = [f"{len(group)} {name}" for name, group in (
            ("active", self.active), ("deferred", self.deferred),
            ("scheduled", self.scheduled)) if group]
        said = f"remove {self.count} messages from {self.entity}"
        if parts:
            said += f" ({', '.join(parts)})"
        if self.in_sessions:
            said += (f"; {len(self.in_sessions)} active messages of sessions are left (a "
                     "session's messages are received only on its lock)")
        if self.not_found:
            said += f"; {len(self.not_found)} of the numbers are not there any more"
        return said


@dataclass(kw_only=True)
class FoundPurgeReport(ActionReport):
    """Exactly what a purge by number did, by sequence number.

    Attributes:
        removed: The numbers removed (completed, or cancelled when scheduled).
        not_found: Those not in the entity as planned (at planning or when their turn came).
        in_sessions: Active messages of sessions, left.
        failed: Those that failed otherwise, each with the error's text.
        not_attempted: Those not started because the run was cancelled.
    """

    removed: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    in_sessions: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    not_attempted: list[int] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """The numbers by outcome."""
        return {"removed": len(self.removed), "not_found": len(self.not_found),
                "in_sessions": len(self.in_sessions), "failed": len(self.failed),
                "not_attempted": len(self.not_attempted)}

    def details(self) -> dict[str, object]:
        """The numbers of each outcome."""
        return {"removed": sorted(self.removed), "not_found": sorted(self.not_found),
                "in_sessions": sorted(self.in_sessions),
                "failed": {str(number): why for number, why in sorted(self.failed.items())},
                "not_attempted": sorted(self.not_attempted)}


#: A number given alone: whatever message is at it (a number is never reused in an entity).
_ANY_ID = object()

Named = Mapping[int, MessageId | None] | FoundLines | Iterable[Found] | Iterable[int]
"""What a purge by number is given: sequence number -> MessageId, the lines of ``sbmgmt
find -o ndjson`` read by ``read_found``, what a search found, or numbers alone."""


def _named(found: Named) -> dict[int, object]:
    if isinstance(found, FoundLines):
        return dict(found.ids)
    if isinstance(found, Mapping):
        return dict(found)
    named: dict[int, object] = {}
    for item in found:
        if isinstance(item, Found):
            if item.message.sequence_number is not None:
                named[item.message.sequence_number] = item.message.message_id
        else:
            named[item] = _ANY_ID
    return named


def plan_purge_found(client: ManagementClient, entity: str, found: Named) -> FoundPurgePlan:
    """Peek what ``found`` names in ``entity`` (nothing is locked or changed) and sort it.

    Args:
        client: The namespace's client.
        entity: The queue or subscription the messages were found in.
        found: Sequence number -> MessageId, what ``read_found`` read from ``sbmgmt find
            -o ndjson``, what a search found, or sequence numbers alone (ticked in the
            explorer: whatever message is at each).

    Returns:
        The plan.

    Raises:
        ValueError: ``found`` names no message.
        sbmgmt.errors.ServiceBusManagementError: The peek failed.
    """
    ids = _named(found)
    if not ids:
        raise ValueError("no messages named: nothing to remove")
    sorted_by: dict[MessageState, list[ReceivedMessage]] = {state: [] for state in MessageState}
    in_sessions: list[int] = []
    seen: set[int] = set()
    for message in client.entity(entity).peek_all(min(ids), max(ids)):
        number = message.sequence_number
        if number not in ids or ids[number] not in (_ANY_ID, message.message_id):
            continue
        seen.add(number)
        if message.state is MessageState.ACTIVE and message.session_id is not None:
            in_sessions.append(number)
        else:
            sorted_by[message.state].append(message)
    return FoundPurgePlan(
        entity, tuple(sorted_by[MessageState.ACTIVE]), tuple(sorted_by[MessageState.DEFERRED]),
        tuple(sorted_by[MessageState.SCHEDULED]), tuple(in_sessions),
        tuple(sorted(set(ids) - seen)))


class _Run:
    """A purge's report as it fills, told to ``on_progress`` after each request."""

    def __init__(self, plan: FoundPurgePlan, on_progress: OnProgress | None,
                 cancel: CancelToken | None) -> None:
        self.report = FoundPurgeReport(entity=plan.entity, not_found=list(plan.not_found),
                                       in_sessions=list(plan.in_sessions))
        self.total = plan.count + len(plan.not_found) + len(plan.in_sessions)
        self.on_progress, self.cancel = on_progress, cancel

    def stopped(self, numbers: Iterable[int]) -> bool:
        """Whether the run is cancelled (``numbers`` are then not attempted)."""
        if not is_cancelled(self.cancel):
            return False
        self.report.not_attempted.extend(numbers)
        self.report.outcome = Outcome.CANCELLED
        return True

    def tell(self) -> None:
        if self.on_progress is not None:
            counts = self.report.counts()
            self.on_progress(Progress(sum(counts.values()) - counts["not_attempted"],
                                      self.total, counts))


def purge_found(client: ManagementClient, plan: FoundPurgePlan, *,
                on_progress: OnProgress | None = None,
                cancel: CancelToken | None = None) -> FoundPurgeReport:
    """Remove the plan's messages: the scheduled by number, the deferred by number, the
    active by receiving them (see the module's docstring).

    Args:
        client: The namespace's client.
        plan: What [plan_purge_found][sbmgmt.actions.purge_found.plan_purge_found] found.
        on_progress: Told after each request: the numbers dealt with of the plan's, and the
            counts by outcome.
        cancel: Stops starting requests; those on the wire finish, the rest is counted in
            ``not_attempted`` and the outcome is CANCELLED.

    Returns:
        What was done, by sequence number. A refusal of the service is counted as
        ``failed`` with its text; nothing is raised for it.
    """
    run = _Run(plan, on_progress, cancel)
    entity = client.entity(plan.entity)
    _cancel_scheduled(entity, [m.sequence_number or 0 for m in plan.scheduled], run)
    if plan.deferred and not run.stopped(m.sequence_number or 0 for m in plan.deferred):
        _merge(run, settle_deferred(entity, list(plan.deferred), "complete", cancel=cancel))
    if plan.active and not run.stopped(m.sequence_number or 0 for m in plan.active):
        _receive_active(client, entity, plan.active, run)
    run.tell()
    return run.report


def _cancel_scheduled(entity: EntityClient, numbers: list[int], run: _Run) -> None:
    report = run.report
    for start in range(0, len(numbers), _SCHEDULED_BATCH):
        batch = numbers[start:start + _SCHEDULED_BATCH]
        if run.stopped(batch):
            continue
        try:
            entity.cancel_scheduled_messages(batch)
        except ScheduledMessagesNotFoundError as error:  # the others, asked once more
            gone = set(error.sequence_numbers or ())
            report.not_found.extend(n for n in batch if n in gone)
            rest = [n for n in batch if n not in gone]
            try:
                if rest:
                    entity.cancel_scheduled_messages(rest)
                report.removed.extend(rest)
            except ServiceBusManagementError as again:
                report.failed.update(dict.fromkeys(rest, str(again)))
        except ServiceBusManagementError as error:
            report.failed.update(dict.fromkeys(batch, str(error)))
        else:
            report.removed.extend(batch)
        run.tell()


def _merge(run: _Run, settled: DeferredReport) -> None:
    report = run.report
    report.removed.extend(settled.settled)
    report.not_found.extend(settled.not_found)
    report.failed.update(settled.failed)
    report.not_attempted.extend(settled.not_attempted)
    if settled.outcome is Outcome.CANCELLED:
        report.outcome = Outcome.CANCELLED
    run.tell()


def _receive_active(client: ManagementClient, entity: EntityClient,
                    active: tuple[ReceivedMessage, ...], run: _Run) -> None:
    """The active messages, received in order: the planned completed, the others held and
    released at the end (the module's docstring)."""
    report = run.report
    wanted = {m.sequence_number or 0: m.message_id for m in active}
    highest = max(wanted)
    held: list[ReceivedMessage] = []
    with ExitStack() as stack:
        renewer = stack.enter_context(LockRenewer(client))
        receiver = stack.enter_context(entity.receiver())
        try:
            while wanted and not run.stopped(wanted):
                batch = receiver.receive_messages(_RECEIVE_COUNT, RECEIVE_WAIT)
                if not batch:
                    break
                take = [m for m in batch if m.sequence_number in wanted
                        and wanted[m.sequence_number] == m.message_id]
                taken = {id(m) for m in take}
                for message in batch:
                    if id(message) not in taken:
                        renewer.register(entity.path, message)
                        held.append(message)
                numbers = [m.sequence_number or 0 for m in take]
                for number in numbers:
                    del wanted[number]
                if take:
                    try:
                        receiver.complete_messages(take)
                        report.removed.extend(numbers)
                    except ServiceBusManagementError as error:
                        report.failed.update(dict.fromkeys(numbers, str(error)))
                run.tell()
                if max(m.sequence_number or 0 for m in batch) >= highest:
                    break
        except ServiceBusManagementError as error:  # the receiver itself failed
            report.failed.update(dict.fromkeys(wanted, str(error)))
            wanted.clear()
        finally:
            for message in held:  # released when the receiver's block ends
                renewer.unregister(entity.path, message)
    if report.outcome is not Outcome.CANCELLED:
        report.not_found.extend(wanted)
