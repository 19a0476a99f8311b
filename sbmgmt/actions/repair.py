"""Resubmit and move: take messages out of an entity (a dead-letter queue, usually) and
send them to where they came from, or to another entity, losing none and doubling none.

Theory of operation
-------------------
A repair is planned, then carried out.

*Planning* (:func:`plan_resubmit`, :func:`plan_move`) peeks the source from end to end
(nothing is locked or changed) and keeps the messages the :class:`Selection` picks: by
sequence number, dead-letter reason, a predicate on the message (the CLI compiles a SQL
filter expression into one), enqueued before / after a time, at most N. The plan lists
each message's sequence number, MessageId and target: the dry run prints it.

*Carrying out* (:func:`repair`) opens one peek-lock receiver on the source and, for each
target, a sender. The receiver takes messages in order; a message of the plan joins a
batch, any other one is held (locked, so it is not taken again) and released when the
receiver detaches at the end (its credit drained first, so nothing released comes back).
The receiver asks for no more messages than the plan still needs (its prefetch lowered as
the plan runs out), so when the last planned one came it has no credit left to drain.
Each batch is moved in one **transaction** on the client's connection: the copies are sent
to their target (directly when it is in the source's top-level entity: ``q`` for
``q/$DeadLetterQueue``; otherwise *via* that top-level entity, send-via, which the service
forwards only on commit) and the originals are completed on the receiver, then the
transaction commits: the service applies both or neither. ``in_flight`` batches run at
once (one thread each, all pipelined on the one connection). Transactions are declared
ahead of the batches that take them (up to 8, never more than the batches still to come):
the first while the receiver and the senders attach, the next while earlier batches move;
a batch given one whose connection was lost since declares its own on the new connection,
and any that no batch took (fewer messages came than planned) is rolled back at the end.
While held, every received message's lock is kept alive by a
[LockRenewer][sbmgmt.renewer.LockRenewer].

What can go wrong, and what each leaves:

- the connection drops before the commit: the service rolls the transaction back (nothing
  sent, nothing completed); the originals stay locked by the dead link until their lock
  expires, then are available again: the next receive (or the next run) moves them;
- the commit's outcome is lost (``TransactionOutcomeUnknownError``): either both or
  neither happened; at the end the source is peeked for those sequence numbers to say which;
- without a transaction (``transactional=False``, or a namespace that refuses to declare
  one: the basic tier) a batch is sent, then completed: a drop between the two leaves the
  original in the source *and* the copy in the target. The copy keeps the original's
  ``MessageId`` (a target with duplicate detection drops the second copy), and every message
  sent again in the run after such a drop is reported as a possible duplicate.

The action returns a :class:`RepairReport`: moved, failed (and why), not found, possible
duplicates, whether it was cancelled (``cancel.set()``: the batches in flight finish, nothing
new starts) and whether transactions were used.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from typing import Any, TypeVar

from sbmgmt.client import EntityClient, ManagementClient, Transaction
from sbmgmt.errors import (
    ConnectionLostError,
    DuplicatesRefusedError,
    OperationTimeoutError,
    ServiceBusManagementError,
    TransactionDeclareError,
    TransactionOutcomeUnknownError,
    UnauthorizedError,
    WrongEntityError,
)
from sbmgmt.message import Message, MessageId, MessageState, ReceivedMessage, id_text
from sbmgmt.renewer import LockRenewer

from .targets import (
    DEAD_LETTER_SUFFIX,
    Describe,
    IfDuplicate,
    TargetCheck,
    at_risk,
    check_target,
    with_new_message_id,
)

__all__ = [
    "DEAD_LETTER_SUFFIX",
    "DEFAULT_IN_FLIGHT",
    "TRANSACTION_MESSAGES",
    "Failure",
    "Planned",
    "RepairPlan",
    "RepairReport",
    "Selection",
    "outgoing",
    "plan_move",
    "plan_resubmit",
    "refuse_duplicates",
    "repair",
]

_T = TypeVar("_T")
_SUBSCRIPTIONS = "/subscriptions/"
#: The application properties the service sets when it dead-letters a message.
_DEAD_LETTER_PROPERTIES = ("DeadLetterReason", "DeadLetterErrorDescription")
#: Annotations the service sets on a stored message; a new copy must not carry them.
_BROKER_ANNOTATIONS = frozenset({
    "x-opt-sequence-number", "x-opt-enqueued-time", "x-opt-locked-until",
    "x-opt-enqueue-sequence-number", "x-opt-message-state", "x-opt-deadletter-source",
    "x-opt-partition-id",
})
#: The longest a batch's sends and settlements may take (a transaction's limit).
_BATCH_TIMEOUT = 120.0
#: How many batches the receiver fetches ahead of those moving. Enough that the next one
#: is there when a slot frees; more only makes the client decode a burst of messages
#: ahead of the replies the moving batches wait for (16 batches ahead: the fake sat idle
#: for 0.70-0.81 s of a 20 ms move, 4 ahead: 0.47-0.51 s; 3,200-3,300 -> 3,500-4,100
#: messages/s at 20 ms, interleaved runs; 2 ahead was slower).
_BATCHES_AHEAD = 4
#: The messages one transaction may hold: "Number of messages per transaction | 100" (the
#: service's quotas page, every tier). A transactional batch is at most this many.
TRANSACTION_MESSAGES = 100

#: How many transactions are kept declared ahead of the batches that will take them (never
#: more than the batches still to come): a batch then waits for its sends and its commit,
#: not for a declare first. With 24 batches in flight, 8 ahead against none: a 10,000
#: message move at 20 ms 1.62-1.64 -> 1.39-1.40 s (the declare, a round trip and a turn in
#: the coordinator's queue, was a third of each batch's time).
_DECLARED_AHEAD = 8
#: Batches moving at once by default (see :func:`repair`).
DEFAULT_IN_FLIGHT = 24
#: Progress callback: (messages done, messages planned).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Selection:
    """Which messages of the source to take; every given criterion must hold.

    Attributes:
        sequence_numbers: Only these sequence numbers.
        reason: Only messages whose ``DeadLetterReason`` is this (exactly).
        where: Only messages for which this returns True (the CLI's ``--where`` is a SQL
            filter expression compiled into one).
        enqueued_before: Only messages enqueued before this time (UTC when naive).
        enqueued_after: Only messages enqueued after this time (UTC when naive).
        max_count: At most this many (the oldest first).
    """

    sequence_numbers: frozenset[int] | None = None
    reason: str | None = None
    where: Callable[[ReceivedMessage], bool] | None = None
    enqueued_before: datetime | None = None
    enqueued_after: datetime | None = None
    max_count: int | None = None

    def __post_init__(self) -> None:
        if self.max_count is not None and self.max_count < 1:
            raise ValueError(f"max_count must be 1 or more, got {self.max_count}")
        if self.sequence_numbers is not None and not self.sequence_numbers:
            raise ValueError("no sequence numbers given: the selection would take nothing")
        if (self.enqueued_before is not None and self.enqueued_after is not None
                and _utc(self.enqueued_after) >= _utc(self.enqueued_before)):
            raise ValueError(
                f"enqueued after {_utc(self.enqueued_after).isoformat()} and before "
                f"{_utc(self.enqueued_before).isoformat()}: no time is both, the selection "
                "would take nothing")

    def matches(self, message: ReceivedMessage) -> bool:
        """Whether ``message`` is selected (``max_count`` aside).

        Args:
            message: A peeked or received message.

        Returns:
            True when every given criterion holds.
        """
        if self.sequence_numbers is not None and \
                message.sequence_number not in self.sequence_numbers:
            return False
        if self.reason is not None and message.dead_letter_reason != self.reason:
            return False
        enqueued = message.enqueued_time
        if self.enqueued_before is not None and (
                enqueued is None or enqueued >= _utc(self.enqueued_before)):
            return False
        if self.enqueued_after is not None and (
                enqueued is None or enqueued <= _utc(self.enqueued_after)):
            return False
        return self.where is None or bool(self.where(message))


@dataclass(frozen=True)
class Planned:
    """One message the repair will move.

    Attributes:
        sequence_number: Its sequence number in the source.
        message_id: Its MessageId (the copy keeps it).
        target: The entity it goes to.
        dead_letter_reason: Why it was dead-lettered, if it was.
        enqueued_time: When it was enqueued in the source.
    """

    sequence_number: int
    message_id: MessageId | None
    target: str
    dead_letter_reason: str | None
    enqueued_time: datetime | None


@dataclass(frozen=True)
class RepairPlan:
    """What a repair will do: from which entity, which messages, to where.

    Attributes:
        source: The entity the messages are taken from.
        items: The messages, in sequence-number order.
        checks: Each target's check (it exists and can be sent to; its duplicate detection:
            [check_target][sbmgmt.actions.targets.check_target]).
        at_risk: The sequence numbers of the items whose copies the target's duplicate
            detection may drop ([at_risk][sbmgmt.actions.targets.at_risk]); what
            [repair][sbmgmt.actions.repair.repair] does with them is its ``if_duplicate``.
        not_found: Sequence numbers the selection asked for that are not in the source.
        held: How many other messages of the source (not selected, ahead of the last
            selected one) the receiver will lock while the run goes: a receiver takes
            messages in order. Each is given back with AMQP's ``released`` outcome at the
            end, which the service does not count as a delivery.
    """

    source: str
    items: tuple[Planned, ...]
    checks: Mapping[str, TargetCheck] = field(default_factory=dict)
    at_risk: frozenset[int] = frozenset()
    not_found: tuple[int, ...] = ()
    held: int = 0

    @property
    def targets(self) -> dict[str, int]:
        """How many messages go to each target."""
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.target] = counts.get(item.target, 0) + 1
        return counts


@dataclass(frozen=True)
class Failure:
    """A message that was not moved, and why.

    Attributes:
        sequence_number: Its sequence number in the source.
        message_id: Its MessageId.
        reason: Why (the service's error, or what the action found).
    """

    sequence_number: int
    message_id: MessageId | None
    reason: str


@dataclass
class RepairReport:
    """What a repair did, counted message by message.

    Attributes:
        source: The entity the messages were taken from.
        planned: How many messages the plan held.
        moved: The sequence numbers (in the source) of the messages now in their target and
            gone from the source.
        failed: The messages that were not moved, each with why; they are still in the
            source.
        not_found: Planned sequence numbers the receiver never got (removed meanwhile, or
            locked by another receiver, or by an attempt of this run that was cut off: such
            a lock expires after the entity's lock duration); still in the source if not
            removed.
        duplicates: MessageIds sent more than once by this run (only without a transaction:
            a target with duplicate detection keeps one).
        transactional: Whether each batch was moved in a transaction.
        cancelled: Whether the run was cancelled before the end.
        left: The sequence numbers left in the source by choice (``IfDuplicate.LEAVE``:
            copies the target's duplicate detection may have dropped); not counted in
            ``planned``.
        maybe_dropped: The MessageIds of copies sent as they were into a target that
            detects duplicates and may have seen them (``IfDuplicate.SEND``): the service
            may have dropped them.
        new_message_ids: For each copy sent with a new MessageId (``IfDuplicate.NEW_ID``),
            its sequence number in the source and its new id (the old one is in its
            ``OriginalMessageId`` property).
    """

    source: str
    planned: int
    moved: list[int] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    duplicates: list[MessageId] = field(default_factory=list)
    transactional: bool = True
    cancelled: bool = False
    left: list[int] = field(default_factory=list)
    maybe_dropped: list[MessageId] = field(default_factory=list)
    new_message_ids: dict[int, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every planned message was moved."""
        return len(self.moved) == self.planned


# ---- planning ------------------------------------------------------------------------------


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _is_subscription(path: str) -> bool:
    return _SUBSCRIPTIONS in path.lower()


def _parent(source: str) -> str:
    if not source.endswith(DEAD_LETTER_SUFFIX):
        raise ValueError(f"resubmit takes messages from a dead-letter queue (a path ending "
                         f"in {DEAD_LETTER_SUFFIX!r}), got {source!r}; use move for another "
                         "entity")
    return source[: -len(DEAD_LETTER_SUFFIX)]


def _resubmit_target(source: str, message: ReceivedMessage) -> str:
    """Where a dead letter came from: its ``x-opt-deadletter-source`` (an auto-forwarded
    message dead-lettered on its way), else the queue whose dead-letter queue holds it."""
    origin = message.dead_letter_source or _parent(source)
    if _is_subscription(origin):
        raise WrongEntityError(
            f"message {message.sequence_number} came from the subscription {origin!r}: a "
            "message cannot be sent to a subscription, and sending it to the topic delivers it "
            "to every subscription whose rules match; move it with an explicit target instead",
            operation="check")
    return origin


def _plan(entity: EntityClient, selection: Selection,
          target_of: Callable[[ReceivedMessage], str]) -> RepairPlan:
    items: list[Planned] = []
    #: Sequence numbers of the active messages not selected, in order (the receiver takes
    #: those ahead of the last selected one too).
    others: list[int] = []
    for message in entity.peek_all():
        if not selection.matches(message):
            if message.state is MessageState.ACTIVE and message.sequence_number is not None:
                others.append(message.sequence_number)
            continue
        assert message.sequence_number is not None
        items.append(Planned(message.sequence_number, message.message_id, target_of(message),
                             message.dead_letter_reason, message.enqueued_time))
        if selection.max_count is not None and len(items) >= selection.max_count:
            break
    last = items[-1].sequence_number if items else 0
    asked = selection.sequence_numbers or frozenset()
    return RepairPlan(entity.path, tuple(items),
                      not_found=tuple(sorted(asked - {item.sequence_number for item in items})),
                      held=sum(1 for number in others if number < last))


def _checked(client: ManagementClient, plan: RepairPlan, describe: Describe | None,
             ) -> RepairPlan:
    """The plan with each target checked (it exists and can be sent to, its duplicate
    detection read) and the copies its duplicate detection may drop marked."""
    checks = dict(plan.checks)
    for target in sorted(plan.targets):
        if target not in checks:
            checks[target] = check_target(client, target, source=plan.source,
                                          describe=describe)
    now = datetime.now(timezone.utc)
    enqueued_in = _top_level(plan.source)
    risky = frozenset(item.sequence_number for item in plan.items if at_risk(
        checks[item.target], item.message_id, enqueued_in=enqueued_in,
        enqueued_time=item.enqueued_time, now=now))
    return replace(plan, checks=checks, at_risk=risky)


def plan_resubmit(client: ManagementClient, source: str,
                  selection: Selection | None = None, *,
                  describe: Describe | None = None) -> RepairPlan:
    """Plan sending dead letters back to where they came from (peeks; changes nothing).

    Args:
        client: The namespace's client.
        source: A dead-letter queue's path (``q/$DeadLetterQueue``).
        selection: Which messages; None: all.
        describe: Reads an entity's properties through the administration API, for each
            target's duplicate detection
            ([check_target][sbmgmt.actions.targets.check_target]); None: not read.

    Returns:
        The plan: each message's target is its ``x-opt-deadletter-source`` if it has one,
        else the queue the dead-letter queue belongs to; each target checked.

    Raises:
        ValueError: ``source`` is not a dead-letter queue.
        sbmgmt.errors.WrongEntityError: A message came from a subscription (only
            ``plan_move`` with an explicit target can send it on).
        sbmgmt.errors.NotFoundError: The source, or a target, does not exist.
        sbmgmt.errors.ServiceBusManagementError: A peek or a target's check failed.
    """
    _parent(source)
    plan = _plan(client.entity(source), selection or Selection(),
                 lambda message: _resubmit_target(source, message))
    return _checked(client, plan, describe)


def plan_move(client: ManagementClient, source: str, target: str,
              selection: Selection | None = None, *,
              describe: Describe | None = None) -> RepairPlan:
    """Plan moving messages from any queue, subscription or dead-letter queue to ``target``
    (peeks; changes nothing). The target is checked first (it exists and can be sent to),
    before the source is read.

    Args:
        client: The namespace's client.
        source: The entity to take them from.
        target: The queue or topic to send them to.
        selection: Which messages; None: all.
        describe: Reads an entity's properties through the administration API, for the
            target's kind and duplicate detection
            ([check_target][sbmgmt.actions.targets.check_target]); None: not read.

    Returns:
        The plan.

    Raises:
        sbmgmt.errors.WrongEntityError: ``target`` is a subscription or a dead-letter queue
            (nothing can be sent there), or is the source itself.
        sbmgmt.errors.NotFoundError: The target, or the source, does not exist.
        sbmgmt.errors.ServiceBusManagementError: A peek or the target's check failed.
    """
    check = check_target(client, target, source=source, describe=describe)
    plan = _plan(client.entity(source), selection or Selection(), lambda _message: target)
    return _checked(client, replace(plan, checks={target: check}), describe)


# ---- the copy ------------------------------------------------------------------------------


def outgoing(message: ReceivedMessage, *, set_properties: Mapping[str, Any] | None = None,
             keep_dead_letter_fields: bool = False, source: str = "") -> Message:
    """The copy of a received message to send on: every field the sender set, none that the
    service added (sequence number, enqueued time, lock, state, dead-letter source).

    Args:
        message: The received (or peeked) message.
        set_properties: Application properties to set (or replace) on the copy.
        keep_dead_letter_fields: Keep ``DeadLetterReason`` and ``DeadLetterErrorDescription``.
        source: The source entity, for a MessageId given to a message without one
            (``<source>:<sequence number>``, so that a copy sent twice has the same id).

    Returns:
        The message to send.
    """
    fields = {name: getattr(message, name) for name in Message.model_fields}
    properties = dict(message.application_properties)
    if not keep_dead_letter_fields:
        for name in _DEAD_LETTER_PROPERTIES:
            properties.pop(name, None)
    properties.update(set_properties or {})
    fields["application_properties"] = properties
    fields["annotations"] = {key: value for key, value in message.annotations.items()
                             if key not in _BROKER_ANNOTATIONS}
    fields["delivery_count"] = None
    fields["first_acquirer"] = None
    fields["scheduled_enqueue_time"] = None
    fields["delivery_annotations"] = {}
    if fields["message_id"] is None:
        fields["message_id"] = f"{source}:{message.sequence_number}"
    return Message.model_validate(fields)


# ---- carrying it out -------------------------------------------------------------------------


def _top_level(path: str) -> str:
    return path.split("/", 1)[0]


@dataclass
class _Run:
    """The state one run shares between its batches (under ``lock``)."""

    plan: RepairPlan
    report: RepairReport
    set_properties: Mapping[str, Any] | None
    keep_dead_letter_fields: bool
    progress: Progress | None
    #: Sequence numbers whose copies get a new MessageId (``IfDuplicate.NEW_ID``).
    renamed: frozenset[int] = frozenset()
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: MessageIds sent (or maybe sent) by this run, to tell a duplicate.
    sent: set[MessageId] = field(default_factory=set)
    #: Batches whose commit's outcome is unknown: checked at the end.
    unknown: list[Sequence[ReceivedMessage]] = field(default_factory=list)
    done: int = 0

    def copy(self, message: ReceivedMessage) -> Message:
        copy = outgoing(message, set_properties=self.set_properties,
                        keep_dead_letter_fields=self.keep_dead_letter_fields,
                        source=self.plan.source)
        if message.sequence_number not in self.renamed:
            return copy
        copy = with_new_message_id(copy)
        assert message.sequence_number is not None and isinstance(copy.message_id, str)
        with self.lock:
            self.report.new_message_ids[message.sequence_number] = copy.message_id
        return copy

    def finished(self, moved: Iterable[ReceivedMessage], failed: Iterable[Failure]) -> None:
        with self.lock:
            for message in moved:
                assert message.sequence_number is not None
                self.report.moved.append(message.sequence_number)
                self.done += 1
            for failure in failed:
                self.report.failed.append(failure)
                self.done += 1
            done, total = self.done, self.report.planned
        if self.progress is not None:
            self.progress(done, total)

    def note_sent(self, copies: Iterable[Message]) -> None:
        with self.lock:
            for copy in copies:
                assert copy.message_id is not None
                if copy.message_id in self.sent:
                    self.report.duplicates.append(copy.message_id)
                self.sent.add(copy.message_id)


def _failures(messages: Iterable[ReceivedMessage], error: BaseException) -> list[Failure]:
    reason = f"{type(error).__name__}: {error}"
    return [Failure(m.sequence_number or 0, m.message_id, reason) for m in messages]


class _Mover:
    """The links of one run and how one batch moves through them."""

    def __init__(self, client: ManagementClient, run: _Run, stack: ExitStack,
                 pool: ThreadPoolExecutor, transactional: bool, prefetch: int) -> None:
        self.client = client
        self.prefetch = prefetch
        self.run = run
        self.stack = stack
        self.pool = pool
        self.transactional = transactional
        #: Whether a declare succeeded in this run (a later refusal fails its batch only).
        self._declared = False
        self._senders: dict[str, Any] = {}
        self._lock = threading.Lock()  # the senders
        self.receiver: Any = None
        self._receiver_prefetch = prefetch
        #: Transactions declared ahead of the batches that will take them, oldest first.
        self._ahead: deque[Future[Transaction]] = deque()
        self._ahead_lock = threading.Lock()

    def open_receiver(self) -> Any:
        entity = self.client.entity(self.run.plan.source)
        self.receiver = _retrying(lambda: self.stack.enter_context(
            entity.receiver(prefetch=self.prefetch)))
        self._receiver_prefetch = self.prefetch
        return self.receiver

    def ask_for_no_more(self, after: int) -> None:
        """Lower the receiver's prefetch to the planned messages still to come ``after``
        the next receive (when fewer than its prefetch): the last one leaves it no credit,
        so its detach drains nothing (a round trip) and nothing outside the plan is
        locked for nothing."""
        if after < self._receiver_prefetch:
            self.receiver.set_prefetch(after)
            self._receiver_prefetch = after

    def sender(self, target: str) -> Any:
        """The sender for ``target``: direct when it is in the source's top-level entity,
        else via that entity (so that one transaction covers the send and the completion)."""
        with self._lock:
            found = self._senders.get(target)
            if found is None or found.ended:  # a new link after a lost one
                source_top = _top_level(self.run.plan.source)
                via = None if _top_level(target).lower() == source_top.lower() else source_top
                found = self.stack.enter_context(self.client.entity(target).sender(via=via))
                self._senders[target] = found
            return found

    def end_links(self) -> None:
        """Detach the receiver (which gives back what it holds) and the senders at once:
        each waits a round trip or two for the service's answer, all together rather than
        one after the other (leaving the run's block then has nothing left to end)."""
        links = [link for link in (self.receiver, *self._senders.values()) if link is not None]
        for ended in [self.pool.submit(link.__exit__, None, None, None) for link in links]:
            ended.result()

    def declare_ahead(self, batches: int) -> None:
        """Keep transactions declared ahead, on the pool, for the next of the ``batches``
        still to come (at most :data:`_DECLARED_AHEAD`): the first while the receiver
        attaches and its first messages come (the coordinator's attach and the declare
        are two round trips), the next while earlier batches move. A refused declare
        (the Basic tier) is met by the batch that takes it, as its own would be."""
        with self._ahead_lock:
            while self.transactional and len(self._ahead) < min(batches, _DECLARED_AHEAD):
                self._ahead.append(self.pool.submit(
                    lambda: self.client.transaction().__enter__()))

    def drop_ahead(self) -> None:
        """Roll back, all at once, the transactions declared ahead that no batch took
        (fewer batches came than planned, the run was cancelled, or the receiver could
        not attach); they held nothing."""
        with self._ahead_lock:
            unused, self._ahead = list(self._ahead), deque()
        wait_all([self.pool.submit(_roll_back, ahead) for ahead in unused])

    def _take_ahead(self) -> Future[Transaction] | None:
        with self._ahead_lock:
            return self._ahead.popleft() if self._ahead else None

    def attach_quietly(self, target: str) -> None:
        """Attach ``target``'s sender ahead of the first batch; a refusal is left for that
        batch to meet (and report) when it asks for the sender itself."""
        with suppress(ServiceBusManagementError):
            self.sender(target)

    def move(self, receiver: Any, batch: Sequence[ReceivedMessage],
             targets: Mapping[int, str]) -> None:
        """Move one batch (all of it or none, in a transaction; else send, then complete)."""
        by_target: dict[str, list[ReceivedMessage]] = {}
        for message in batch:
            assert message.sequence_number is not None
            by_target.setdefault(targets[message.sequence_number], []).append(message)
        copies = {target: [self.run.copy(m) for m in messages]
                  for target, messages in by_target.items()}
        try:
            if self.transactional:
                try:
                    self._in_transaction(receiver, batch, copies)
                except TransactionDeclareError:
                    if not self._without_transactions():
                        raise
                    self._send_then_complete(receiver, by_target, copies)
            else:
                self._send_then_complete(receiver, by_target, copies)
        except TransactionOutcomeUnknownError:
            with self.run.lock:
                self.run.unknown.append(batch)
        except ServiceBusManagementError as error:
            self.run.finished((), _failures(batch, error))

    def _without_transactions(self) -> bool:
        """A declare was refused. When none succeeded before in this run, the namespace
        refuses transactions (the Basic tier does): the run goes on without them (True)."""
        with self.run.lock:
            if self._declared:
                return False
            self.transactional = self.run.report.transactional = False
            return True

    def _in_transaction(self, receiver: Any, batch: Sequence[ReceivedMessage],
                        copies: Mapping[str, list[Message]]) -> None:
        with ExitStack() as scope:
            txn = _usable(self._take_ahead())
            if txn is None:
                txn = scope.enter_context(self.client.transaction())
            else:  # declared already: only its end (commit, or rollback on an error) is left
                scope.push(txn)
            self._declared = True
            futures: list[Future[None]] = []
            for target, messages in copies.items():
                futures.append(self.sender(target).submit_all(messages, transaction=txn))
            futures.append(receiver.settle(batch, "completed", transaction=txn))
            _wait(futures)
        self.run.finished(batch, ())

    def _send_then_complete(self, receiver: Any, by_target: Mapping[str, list[ReceivedMessage]],
                            copies: Mapping[str, list[Message]]) -> None:
        for target, messages in by_target.items():
            self.run.note_sent(copies[target])
            _wait([self.sender(target).submit_all(copies[target])])
            # Sent: a drop from here to the completion leaves a copy in both places (the
            # next attempt sends it again, with the same MessageId: reported as a duplicate).
            _wait([receiver.settle(messages, "completed")])
            self.run.finished(messages, ())


def _usable(ahead: Future[Transaction] | None) -> Transaction | None:
    """The transaction declared ahead, if a batch can still use it: None when there was
    none, or its connection was lost (before or since its declare: a batch declares its
    own on the new one rather than fail). A refused declare is raised (the Basic tier's:
    the batch meets it as its own)."""
    if ahead is None:
        return None
    try:
        declared = ahead.result()
        declared.check_usable("send")
    except ConnectionLostError:  # TransactionLostError too
        return None
    return declared


def _roll_back(declared: Future[Transaction]) -> None:
    """Roll back a transaction declared ahead (none if its declare failed)."""
    with suppress(ServiceBusManagementError, ValueError):
        declared.result().rollback()


def _wait(futures: Sequence[Future[Any]]) -> None:
    """Wait for a batch's sends and settlements (at most a transaction's life: two
    minutes); the first error is raised."""
    _done, pending = wait_all(futures, timeout=_BATCH_TIMEOUT)
    if pending:
        raise OperationTimeoutError(
            f"{len(pending)} sends or settlements got no outcome in {_BATCH_TIMEOUT:g} s",
            operation="move")
    for future in futures:
        future.result(0)


def _retrying(attempt: Callable[[], _T], attempts: int = 20) -> _T:
    """``attempt()``, again after a lost connection (the client reconnects meanwhile).

    An attach refused as unauthorized is tried twice more: a connection closed just after
    its token was accepted may refuse the attach that follows before the client learns of
    the close (seen with the fake's connection cuts); a real refusal stays one."""
    refusals = 0
    for number in range(1, attempts):
        try:
            return attempt()
        except (ConnectionLostError, OperationTimeoutError):
            pass  # an attach cut off with its connection (or, rarely, never answered)
        except UnauthorizedError:
            refusals += 1
            if refusals > 2:
                raise
        time.sleep(min(0.05 * number, 1.0))
    return attempt()


def repair(client: ManagementClient, plan: RepairPlan, *,
           set_properties: Mapping[str, Any] | None = None,
           keep_dead_letter_fields: bool = False,
           if_duplicate: IfDuplicate = IfDuplicate.REFUSE,
           transactional: bool = True,
           batch_size: int = 100,
           in_flight: int = DEFAULT_IN_FLIGHT,
           idle_wait: float = 2.0,
           progress: Progress | None = None,
           cancel: threading.Event | None = None,
           renewer: LockRenewer | None = None) -> RepairReport:
    """Carry out a plan: move each planned message to its target and remove it from the
    source, each batch in a transaction (module docstring: what is guaranteed).

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
        progress: Called with (done, planned) after each batch.
        cancel: Set it to stop: batches in flight finish, no new one starts.
        renewer: The lock renewer keeping the received messages' locks alive; None: one of
            the action's own, stopped at the end.

    Returns:
        The report.

    Raises:
        ValueError: ``batch_size``, ``in_flight`` or ``idle_wait`` is out of range (a
            transactional batch of more than 100 messages included: nothing was locked).
        sbmgmt.errors.DuplicatesRefusedError: The plan has items at risk and
            ``if_duplicate`` is ``REFUSE`` (nothing was locked or sent).
        sbmgmt.errors.ServiceBusManagementError: The receiver or a sender could not be
            attached (nothing was moved by then).
    """
    if not 1 <= batch_size <= 1000:
        raise ValueError(f"batch_size must be 1 to 1000, got {batch_size}")
    if transactional and batch_size > TRANSACTION_MESSAGES:
        raise ValueError(f"a batch of {batch_size} messages cannot be one transaction: the "
                         f"service takes at most {TRANSACTION_MESSAGES} messages in a "
                         "transaction (choose a batch size of 100 or less, or no "
                         "transaction)")
    if not 1 <= in_flight <= 64:
        raise ValueError(f"in_flight must be 1 to 64, got {in_flight}")
    if not idle_wait > 0:
        raise ValueError(f"idle_wait must be more than 0 seconds, got {idle_wait}")
    refuse_duplicates(plan, if_duplicate)
    left = sorted(plan.at_risk) if if_duplicate is IfDuplicate.LEAVE else []
    report = RepairReport(plan.source, len(plan.items) - len(left),
                          transactional=transactional, left=left)
    if if_duplicate is IfDuplicate.SEND:
        report.maybe_dropped = [item.message_id for item in plan.items
                                if item.sequence_number in plan.at_risk
                                and item.message_id is not None]
    run = _Run(plan, report, set_properties, keep_dead_letter_fields, progress,
               plan.at_risk if if_duplicate is IfDuplicate.NEW_ID else frozenset())
    targets = {item.sequence_number: item.target for item in plan.items
               if item.sequence_number not in left}
    remaining = set(targets)
    held: list[ReceivedMessage] = []
    with ExitStack() as stack:
        if renewer is None:
            renewer = stack.enter_context(LockRenewer(client))
        pool = stack.enter_context(ThreadPoolExecutor(in_flight + _DECLARED_AHEAD,
                                                      "sbmgmt-repair"))
        # The next batches are on their way while these move (never more than the plan).
        mover = _Mover(client, run, stack, pool, transactional,
                       min(batch_size * min(in_flight, _BATCHES_AHEAD), len(plan.items), 5000))
        # The senders attach while the receiver does (round trips that would otherwise
        # come one after the other before the first batch).
        jobs: list[Future[None]] = [pool.submit(mover.attach_quietly, target)
                                    for target in sorted(set(targets.values()))]
        mover.declare_ahead(_batches(len(remaining), batch_size))
        stack.callback(mover.drop_ahead)  # before the pool shuts down, whatever ends the run
        receiver = mover.open_receiver()
        slots = threading.Semaphore(in_flight)

        def job(link: Any, batch: list[ReceivedMessage]) -> None:
            try:
                mover.move(link, batch, targets)
            finally:
                for message in batch:
                    renewer.unregister(plan.source, message)
                slots.release()

        last = time.monotonic()
        while remaining and not (cancel is not None and cancel.is_set()):
            count = min(batch_size, len(remaining))
            try:
                mover.ask_for_no_more(len(remaining) - count)
                received = receiver.receive_messages(count, min(idle_wait, 1.0))
            except ServiceBusManagementError:
                if time.monotonic() - last >= idle_wait:
                    break  # no progress for that long: what is left is reported
                receiver = mover.open_receiver()  # the link died: its locks expire
                continue
            batch = []
            for message in received:
                if message.sequence_number in remaining:
                    remaining.discard(message.sequence_number)
                    batch.append(message)
                else:
                    held.append(message)
                renewer.register(plan.source, message)
            if batch:
                last = time.monotonic()
                slots.acquire()
                jobs.append(pool.submit(job, receiver, batch))
                mover.declare_ahead(_batches(len(remaining), batch_size))
            elif time.monotonic() - last >= idle_wait:
                break
        report.cancelled = bool(remaining) and cancel is not None and cancel.is_set()
        wait_all(jobs)
        for message in held:  # given back when the receiver's block ends
            renewer.unregister(plan.source, message)
        for finished in jobs:
            finished.result()  # a bug, not the service: raised, not reported
        mover.end_links()
    _settle_unknown(client, run)
    report.not_found = sorted(remaining) if not report.cancelled else []
    report.moved.sort()
    return report


def refuse_duplicates(plan: RepairPlan, if_duplicate: IfDuplicate) -> None:
    """Refuse a plan whose copies a target's duplicate detection may drop when no choice
    was made for them (what :func:`repair` checks first; the front ends check it before
    they ask).

    Args:
        plan: The plan.
        if_duplicate: The choice made for those copies.

    Raises:
        sbmgmt.errors.DuplicatesRefusedError: The plan has items at risk and
            ``if_duplicate`` is ``REFUSE``; ``message_ids`` names them.
    """
    if not plan.at_risk or if_duplicate is not IfDuplicate.REFUSE:
        return
    ids = tuple(id_text(item.message_id) for item in plan.items
                if item.sequence_number in plan.at_risk and item.message_id is not None)
    detecting = ", ".join(sorted({item.target for item in plan.items
                                  if item.sequence_number in plan.at_risk}))
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    raise DuplicatesRefusedError(
        f"{detecting} detects duplicates: it may drop {len(ids)} of the copies, which keep "
        f"their MessageId ({shown}), while the originals are removed; nothing was done. "
        "Choose what to do with them: a new MessageId (the old one kept in OriginalMessageId), "
        "leave them in the source, or send them as they are", message_ids=ids)


def _batches(messages: int, batch_size: int) -> int:
    """The batches ``messages`` still to come make (at least)."""
    return -(-messages // batch_size)


def _settle_unknown(client: ManagementClient, run: _Run) -> None:
    """The batches whose commit's outcome was lost: a message still in the source was not
    moved (its copy was not sent either); one gone was."""
    source = client.entity(run.plan.source)
    for batch in run.unknown:
        moved: list[ReceivedMessage] = []
        failed: list[Failure] = []
        for message in batch:
            assert message.sequence_number is not None
            still = _retrying(partial(source.peek_messages, message.sequence_number, 1))
            if still and still[0].sequence_number == message.sequence_number:
                failed.append(Failure(message.sequence_number, message.message_id,
                                      "the transaction's outcome was lost and it was not "
                                      "applied (still in the source)"))
            else:
                moved.append(message)
        run.finished(moved, failed)
