"""What a repair takes and what it will do: the :class:`Selection` of the source's messages,
each :class:`Planned` message, and the :class:`RepairPlan` the dry run prints and
[repair][sbmgmt.actions.repair.repair] carries out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sbmgmt.message import MessageId, ReceivedMessage

from ..targets import TargetCheck

__all__ = ["Planned", "RepairPlan", "Selection", "utc"]


def utc(moment: datetime) -> datetime:
    """``moment``, read as UTC when it is naive."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


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
                and utc(self.enqueued_after) >= utc(self.enqueued_before)):
            raise ValueError(
                f"enqueued after {utc(self.enqueued_after).isoformat()} and before "
                f"{utc(self.enqueued_before).isoformat()}: no time is both, the selection "
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
                enqueued is None or enqueued >= utc(self.enqueued_before)):
            return False
        if self.enqueued_after is not None and (
                enqueued is None or enqueued <= utc(self.enqueued_after)):
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
