"""The management link pair of one entity, and the states it moves through.

Theory of operation
-------------------
An entity's links live in one :class:`EntityLinks`, whose :attr:`~EntityLinks.state`
is a :class:`LinkState` that only moves along the arrows below (:meth:`EntityLinks.move`
refuses any other step, so a wrong turn in the engine fails loudly instead of leaving a
link half-attached)::

    IDLE --authorize--> AUTHORIZING --token accepted--> ATTACHING --both ends open--> READY
      ^                      |                              |                           |
      +------ refused -------+---------- refused -----------+--- detached / lost -------+

Any state may go back to IDLE (:meth:`EntityLinks.reset`: the connection was lost, the
token or the attach was refused, the link was detached); the next request for the
entity starts over from there. The refresh timer of the entity's CBS token is kept
here too, so a reset cancels it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Any

from ._dispatcher import Dispatcher, DispatcherStats
from ._loop import Task

__all__ = ["EntityLinks", "LinkState", "total_stats"]


class LinkState(Enum):
    """Where an entity's management link pair is on its way to carrying requests."""

    IDLE = "idle"
    AUTHORIZING = "authorizing"
    ATTACHING = "attaching"
    READY = "ready"


_FORWARD: dict[LinkState, LinkState | None] = {
    LinkState.IDLE: LinkState.AUTHORIZING,
    LinkState.AUTHORIZING: LinkState.ATTACHING,
    LinkState.ATTACHING: LinkState.READY,
    LinkState.READY: None,
}


class EntityLinks:
    """The management link pair of one entity, and its dispatcher."""

    def __init__(self, entity: str, audience: str, reply_to: str, window: int) -> None:
        self.entity = entity
        self.audience = audience
        self.node = f"{entity}/$management"
        self.reply_to = reply_to
        self.dispatcher = Dispatcher(window=window, name=self.node)
        self.state = LinkState.IDLE
        self.sender: Any = None
        self.receiver: Any = None
        self.refresh_task: Task | None = None

    def move(self, to: LinkState) -> None:
        """Take the one forward step from the current state to ``to``."""
        if _FORWARD[self.state] is not to:
            raise RuntimeError(
                f"{self.node}: no transition from {self.state.value} to {to.value}"
            )
        self.state = to

    def reset(self) -> None:
        """Back to IDLE from any state: forget the links, cancel the token refresh."""
        self.state = LinkState.IDLE
        self.sender = self.receiver = None
        self.cancel_refresh()

    def cancel_refresh(self) -> None:
        if self.refresh_task is not None:
            self.refresh_task.cancel()
            self.refresh_task = None

    def opened(self) -> bool:
        """Both links are open at both ends."""
        return all(
            link is not None and link.state & link.REMOTE_ACTIVE
            for link in (self.sender, self.receiver)
        )


def total_stats(dispatchers: Iterable[Dispatcher]) -> DispatcherStats:
    """Counters summed over ``dispatchers`` (``max_in_flight`` is the largest seen)."""
    total = DispatcherStats()
    for dispatcher in dispatchers:
        s = dispatcher.stats
        total.submitted += s.submitted
        total.sent += s.sent
        total.completed += s.completed
        total.failed += s.failed
        total.timed_out += s.timed_out
        total.late_replies += s.late_replies
        total.unknown_replies += s.unknown_replies
        total.max_in_flight = max(total.max_in_flight, s.max_in_flight)
    return total
