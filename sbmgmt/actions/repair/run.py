"""One repair's settings and the state its batches share: what is left to receive, what
was moved or failed, what was sent (to tell a duplicate), the batches whose commit's
outcome was lost, and the progress told to the caller. Both drivers
([repair][sbmgmt.actions.repair.repair], [repair_async][sbmgmt.actions.repair.repair_async])
keep one :class:`RunState` and hand it to the cores of :mod:`.core`; it is the only state
the batches running at once share (under its lock: the blocking driver's batches run on
threads)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sbmgmt.message import Message, MessageId, ReceivedMessage

from ..contract import OnProgress, Outcome, Progress
from ..targets import IfDuplicate, with_new_message_id
from .copies import outgoing
from .planning import refuse_duplicates, top_level
from .report import Failure, RepairReport
from .selection import RepairPlan

__all__ = [
    "DEFAULT_IN_FLIGHT",
    "TRANSACTION_MESSAGES",
    "RepairSettings",
    "RunState",
    "batches",
]

#: The messages one transaction may hold: "Number of messages per transaction | 100" (the
#: service's quotas page, every tier). A transactional batch is at most this many.
TRANSACTION_MESSAGES = 100
#: Batches moving at once by default (see [repair][sbmgmt.actions.repair.repair]).
DEFAULT_IN_FLIGHT = 24
#: How many batches the receiver fetches ahead of those moving. Enough that the next one
#: is there when a slot frees; more only makes the client decode a burst of messages
#: ahead of the replies the moving batches wait for (16 batches ahead: the fake sat idle
#: for 0.70-0.81 s of a 20 ms move, 4 ahead: 0.47-0.51 s; 3,200-3,300 -> 3,500-4,100
#: messages/s at 20 ms, interleaved runs; 2 ahead was slower).
_BATCHES_AHEAD = 4
#: The most messages a receiver may ask for ahead (the client's prefetch limit).
_MAX_PREFETCH = 5000


def batches(messages: int, batch_size: int) -> int:
    """The batches ``messages`` still to come make (at least)."""
    return -(-messages // batch_size)


@dataclass(frozen=True)
class RepairSettings:
    """How a repair runs (the keywords of ``repair`` / ``repair_async``, checked)."""

    set_properties: Mapping[str, Any] | None = None
    keep_dead_letter_fields: bool = False
    if_duplicate: IfDuplicate = IfDuplicate.REFUSE
    transactional: bool = True
    batch_size: int = 100
    in_flight: int = DEFAULT_IN_FLIGHT
    idle_wait: float = 2.0

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= 1000:
            raise ValueError(f"batch_size must be 1 to 1000, got {self.batch_size}")
        if self.transactional and self.batch_size > TRANSACTION_MESSAGES:
            raise ValueError(
                f"a batch of {self.batch_size} messages cannot be one transaction: the "
                f"service takes at most {TRANSACTION_MESSAGES} messages in a transaction "
                "(choose a batch size of 100 or less, or no transaction)")
        if not 1 <= self.in_flight <= 64:
            raise ValueError(f"in_flight must be 1 to 64, got {self.in_flight}")
        if not self.idle_wait > 0:
            raise ValueError(f"idle_wait must be more than 0 seconds, got {self.idle_wait}")

    def prefetch(self, planned: int) -> int:
        """The receiver's prefetch: the next batches are on their way while these move
        (never more than the plan)."""
        ahead = self.batch_size * min(self.in_flight, _BATCHES_AHEAD)
        return min(ahead, planned, _MAX_PREFETCH)


@dataclass
class RunState:
    """The state one run shares between its batches (under ``lock``)."""

    plan: RepairPlan
    settings: RepairSettings
    report: RepairReport
    on_progress: OnProgress | None
    #: The sequence numbers still to receive, and the target of each planned one.
    remaining: set[int]
    targets: Mapping[int, str]
    #: Sequence numbers whose copies get a new MessageId (``IfDuplicate.NEW_ID``).
    renamed: frozenset[int] = frozenset()
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: MessageIds sent (or maybe sent) by this run, to tell a duplicate.
    sent: set[MessageId] = field(default_factory=set)
    #: Batches whose commit's outcome is unknown: checked at the end.
    unknown: list[Sequence[ReceivedMessage]] = field(default_factory=list)
    #: Whether a declare succeeded in this run (a later refusal fails its batch only).
    declared: bool = False
    #: Messages received that the plan does not name: held, locked, by the receiver until
    #: its link ends (so that they are not received again).
    held: list[ReceivedMessage] = field(default_factory=list)

    @classmethod
    def begin(cls, plan: RepairPlan, settings: RepairSettings,
              on_progress: OnProgress | None) -> RunState:
        """The state of a run about to start: the plan's duplicate choice applied.

        Raises:
            sbmgmt.errors.DuplicatesRefusedError: The plan has items at risk and the
                choice is ``REFUSE``.
        """
        choice = settings.if_duplicate
        refuse_duplicates(plan, choice)
        left = sorted(plan.at_risk) if choice is IfDuplicate.LEAVE else []
        report = RepairReport(entity=plan.source, planned=len(plan.items) - len(left),
                              transactional=settings.transactional, left=left)
        if choice is IfDuplicate.SEND:
            report.maybe_dropped = [item.message_id for item in plan.items
                                    if item.sequence_number in plan.at_risk
                                    and item.message_id is not None]
        targets = {item.sequence_number: item.target for item in plan.items
                   if item.sequence_number not in left}
        return cls(plan, settings, report, on_progress, set(targets), targets,
                   plan.at_risk if choice is IfDuplicate.NEW_ID else frozenset())

    @property
    def transactional(self) -> bool:
        """Whether batches move in transactions (False after the namespace refused one)."""
        return self.report.transactional

    def target_names(self) -> list[str]:
        """The targets the remaining messages go to, sorted."""
        return sorted(set(self.targets.values()))

    def via(self, target: str) -> str | None:
        """The entity a sender to ``target`` goes through: None (direct) when ``target`` is
        in the source's top-level entity, else that entity (send-via: so that one
        transaction covers the send and the completion)."""
        source_top = top_level(self.plan.source)
        return None if top_level(target).lower() == source_top.lower() else source_top

    def take(self, received: Iterable[ReceivedMessage]) -> list[ReceivedMessage]:
        """The planned messages of ``received`` (no longer remaining: the next batch); the
        others join :attr:`held`."""
        batch: list[ReceivedMessage] = []
        for message in received:
            if message.sequence_number in self.remaining:
                self.remaining.discard(message.sequence_number)
                batch.append(message)
            else:
                self.held.append(message)
        return batch

    def copies(self, batch: Sequence[ReceivedMessage]
               ) -> dict[str, tuple[list[ReceivedMessage], list[Message]]]:
        """The batch by target: the originals and their copies."""
        groups: dict[str, tuple[list[ReceivedMessage], list[Message]]] = {}
        for message in batch:
            assert message.sequence_number is not None
            originals, copies = groups.setdefault(self.targets[message.sequence_number],
                                                  ([], []))
            originals.append(message)
            copies.append(self._copy(message))
        return groups

    def _copy(self, message: ReceivedMessage) -> Message:
        copy = outgoing(message, set_properties=self.settings.set_properties,
                        keep_dead_letter_fields=self.settings.keep_dead_letter_fields,
                        source=self.plan.source)
        if message.sequence_number not in self.renamed:
            return copy
        copy = with_new_message_id(copy)
        assert message.sequence_number is not None and isinstance(copy.message_id, str)
        with self.lock:
            self.report.new_message_ids[message.sequence_number] = copy.message_id
        return copy

    def without_transactions(self) -> bool:
        """A declare was refused. When none succeeded before in this run, the namespace
        refuses transactions (the Basic tier does): the run goes on without them (True)."""
        with self.lock:
            if self.declared:
                return False
            self.report.transactional = False
            return True

    def note_declared(self) -> None:
        with self.lock:
            self.declared = True

    def note_sent(self, copies: Iterable[Message]) -> None:
        """Copies about to be sent without a transaction: one this run sent before is a
        possible duplicate."""
        with self.lock:
            for copy in copies:
                assert copy.message_id is not None
                if copy.message_id in self.sent:
                    self.report.duplicates.append(copy.message_id)
                self.sent.add(copy.message_id)

    def note_unknown(self, batch: Sequence[ReceivedMessage]) -> None:
        with self.lock:
            self.unknown.append(batch)

    def finished(self, moved: Iterable[ReceivedMessage], failed: Iterable[Failure]) -> None:
        """Messages moved and failed: counted, and the progress told."""
        report = self.report
        with self.lock:
            for message in moved:
                assert message.sequence_number is not None
                report.moved.append(message.sequence_number)
            report.failed.extend(failed)
            progress = Progress(len(report.moved) + len(report.failed), report.planned,
                                {"moved": len(report.moved), "failed": len(report.failed)})
        if self.on_progress is not None:
            self.on_progress(progress)

    def close(self) -> RepairReport:
        """The report at the end: what was not received is not found (unless the run was
        cancelled or failed first: then it is simply still in the source)."""
        report = self.report
        if report.outcome is Outcome.FINISHED:
            report.not_found = sorted(self.remaining)
        report.moved.sort()
        return report
