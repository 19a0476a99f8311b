"""The mock's registry: which registered reply answers which request, in what order.

Theory of operation
-------------------
A :class:`Registration` ties an operation, and optionally an entity (``None``: any;
entity paths compare without case, as Service Bus names do), to an
:class:`~sbmgmt.testing._outcomes.Outcome` and a number of ``times`` it answers. For
each request :meth:`Registry.pick` chooses one, as ``responses``' registries do:

- first match (the default): the earliest registration that matches and is not used
  up. ``times=n`` answers n requests. ``times=None`` answers one request when a later
  registration matches too (so several registrations for one operation play in
  order, then the last one keeps answering), and every request when it is the last.
- ``ordered=True``: requests must come in the order of the registrations. The first
  registration not yet used up must match the request, or nothing does; it answers
  ``times`` requests (one if ``None``) before the next one's turn.

A registration not used up at the end (never used, or fewer times than ``times``) is
*unused*. The registry is not locked: the mock calls it under its own lock.
"""

from __future__ import annotations

from fakes.parts import entity_key

from ._calls import Call
from ._outcomes import Outcome

__all__ = ["Registration", "Registry"]


class Registration:
    """One registered reply, as [MockManagementNode.add][sbmgmt.testing.MockManagementNode.add]
    returns it; ``calls`` are the requests it answered.

    Made by [MockManagementNode.add][sbmgmt.testing.MockManagementNode.add].

    Attributes:
        operation: The operation name it answers.
        entity: The entity path it answers for; None: any.
        times: How many requests it answers (None: see ``add``).
        calls: The requests it answered, in order.
    """

    def __init__(self, operation: str, entity: str | None, outcome: Outcome,
                 times: int | None) -> None:
        self.operation = operation
        self.entity = entity
        self.outcome = outcome
        self.times = times
        self.calls: list[Call] = []
        self._retired = False

    @property
    def call_count(self) -> int:
        """How many requests this registration answered."""
        return len(self.calls)

    def __repr__(self) -> str:
        where = "any entity" if self.entity is None else repr(self.entity)
        times = "" if self.times is None else f"/{self.times}"
        return (f"<{self.operation} on {where} -> {self.outcome.describe()}, "
                f"answered {self.call_count}{times}>")

    def matches(self, call: Call) -> bool:
        """Whether a request is this registration's operation (and entity).

        Args:
            call: The request.

        Returns:
            True when it matches.

        Raises nothing.
        """
        return call.operation == self.operation and (
            self.entity is None or entity_key(self.entity) == entity_key(call.entity))

    def used_up(self, ordered: bool) -> bool:
        """Whether it answers no more requests.

        Args:
            ordered: Whether the mock is ordered (then a registration without ``times`` answers
                one request).

        Returns:
            True when it is used up.

        Raises nothing.
        """
        limit = self.times if self.times is not None else (1 if ordered else None)
        return self._retired or (limit is not None and self.call_count >= limit)

    def unused(self) -> bool:
        """Whether it was never used, or used fewer times than ``times``.

        Returns:
            True when it is not used up.
        """
        return self.call_count == 0 or (self.times is not None and self.call_count < self.times)

    def retire(self) -> None:
        """Answer no more requests (a later registration takes over)."""
        self._retired = True


class Registry:
    """Registrations in the order they were added."""

    def __init__(self, *, ordered: bool) -> None:
        self.ordered = ordered
        self.registrations: list[Registration] = []

    def add(self, registration: Registration) -> None:
        self.registrations.append(registration)

    def pick(self, call: Call) -> Registration | None:
        """The registration that answers ``call`` (it is counted), or None."""
        live = [r for r in self.registrations if not r.used_up(self.ordered)]
        if self.ordered:
            chosen = live[0] if live and live[0].matches(call) else None
        else:
            matching = [r for r in live if r.matches(call)]
            chosen = matching[0] if matching else None
            if chosen is not None and chosen.times is None and len(matching) > 1:
                chosen.retire()
        if chosen is not None:
            chosen.calls.append(call)
        return chosen

    def describe(self) -> str:
        """Every registration, one per line (for error messages)."""
        if not self.registrations:
            return "  (nothing is registered)"
        return "\n".join(f"  {r!r}" for r in self.registrations)
