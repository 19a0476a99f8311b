"""What a search hands out and tells: a match (:class:`Found`), how far it got
(:class:`SearchProgress`), and the error of a condition that cannot be used."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...message import ReceivedMessage

__all__ = ["ConditionError", "Found", "OnProgress", "SearchProgress"]


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


@dataclass(frozen=True)
class SearchProgress:
    """How far a search got.

    Attributes:
        read: Messages read so far, every entity together.
        found: Messages found so far.
        entities_done: Entities read to the end (or to ``max_count``).
        entities: Entities to read (1 for one entity).
        failed: Entities that could not be read, each with the reason.
    """

    read: int
    found: int
    entities_done: int
    entities: int
    failed: tuple[tuple[str, str], ...] = ()


OnProgress = Callable[[SearchProgress], None]
