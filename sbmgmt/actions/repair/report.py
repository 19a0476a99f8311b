"""What a repair did, counted message by message: the :class:`RepairReport` (an
``sbmgmt.actions.contract.ActionReport``) and each :class:`Failure`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sbmgmt.message import MessageId, id_text

from ..contract import ActionReport

__all__ = ["Failure", "RepairReport"]


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


@dataclass(kw_only=True)
class RepairReport(ActionReport):
    """What a repair did, counted message by message.

    ``entity`` is the source (also ``source``); ``outcome`` says whether it ran to the
    end, was cancelled (the batches in flight finished, no new one started: ``not_found``
    is then empty, what was not reached is still in the source) or failed (``error``: the
    receiver could not be attached again after its link was lost).

    Attributes:
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

    planned: int
    moved: list[int] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    duplicates: list[MessageId] = field(default_factory=list)
    transactional: bool = True
    left: list[int] = field(default_factory=list)
    maybe_dropped: list[MessageId] = field(default_factory=list)
    new_message_ids: dict[int, str] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The entity the messages were taken from (``entity``)."""
        return self.entity

    @property
    def complete(self) -> bool:
        """Whether every planned message was moved."""
        return len(self.moved) == self.planned

    def counts(self) -> dict[str, int]:
        """Messages by outcome: moved, failed, not found, left in the source by choice."""
        return {"moved": len(self.moved), "failed": len(self.failed),
                "not_found": len(self.not_found), "left": len(self.left)}

    def details(self) -> dict[str, Any]:
        """The planned count and each message's sequence number or MessageId by outcome."""
        return {
            "planned": self.planned,
            "moved": self.moved,
            "failed": [{"sequence_number": failure.sequence_number,
                        "message_id": _text(failure.message_id), "reason": failure.reason}
                       for failure in self.failed],
            "not_found": self.not_found,
            "duplicates": [_text(message_id) for message_id in self.duplicates],
            "transactional": self.transactional,
            "left": self.left,
            "maybe_dropped": [_text(message_id) for message_id in self.maybe_dropped],
            "new_message_ids": {str(number): new
                                for number, new in self.new_message_ids.items()},
        }


def _text(message_id: MessageId | None) -> str | None:
    return None if message_id is None else id_text(message_id)
