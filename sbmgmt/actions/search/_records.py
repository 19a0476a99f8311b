"""What a search hands out and tells: a match (:class:`Found`), how far it got
(:class:`SearchReport`), and the error of a condition that cannot be used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...message import ReceivedMessage
from ..contract import ActionReport

__all__ = ["ConditionError", "Found", "SearchReport"]


class ConditionError(ValueError):
    """A condition of a search that cannot be used: a SQL filter, a regular expression or
    a path that does not parse, an unknown state, a range that is empty.

    Attributes:
        condition: The condition's name (``where``, ``body_regex``, ``path``, ``states``...).
    """

    def __init__(self, condition: str, reason: str) -> None:
        super().__init__(f"{condition}: {reason}")
        self.condition = condition


@dataclass(frozen=True)
class Found:
    """A message a search found, and the entity it is in.

    Attributes:
        entity: The path read (``q``, ``t/Subscriptions/s``, ``q/$DeadLetterQueue``).
        message: The message, as peeked (no lock).
    """

    entity: str
    message: ReceivedMessage


@dataclass(kw_only=True)
class SearchReport(ActionReport):
    """What a search read and found, and how it ended (the contract's report).

    Attributes:
        read: Messages read, every entity together.
        found: Messages found.
        entities: Entities to read (1 for one entity).
        entities_done: Entities read to the end (or to ``max_count``).
        failed: Entities that could not be read, each with the reason.
    """

    read: int = 0
    found: int = 0
    entities: int = 1
    entities_done: int = 0
    failed: tuple[tuple[str, str], ...] = ()

    def counts(self) -> dict[str, int]:
        """``read``, ``found`` and ``not_searched`` (entities that could not be read)."""
        return {"read": self.read, "found": self.found, "not_searched": len(self.failed)}

    def details(self) -> dict[str, Any]:
        """The entities read and those that could not be, each with the reason."""
        return {"entities": self.entities, "entities_done": self.entities_done,
                "failed": [{"entity": path, "reason": reason} for path, reason in self.failed]}
