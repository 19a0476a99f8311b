"""An entity's management link pair as state (sans-I/O): where it is on its way to carrying
requests (:class:`LinkState`, one forward step at a time), its dispatcher, and the token
refresh scheduled for it. The engine (:mod:`sbmgmt._engine.link_pairs`) opens and closes the links;
the token manager (:mod:`sbmgmt._protocol.tokens`) moves the state.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol

from .dispatcher import Dispatcher

#: The node that takes put-tokens (claims-based security).
CBS_NODE = "$cbs"

__all__ = ["CBS_NODE", "Cancellable", "EntityLinks", "LinkState"]


class Cancellable(Protocol):
    """A scheduled callback (what a loop's ``schedule`` gives back)."""

    def cancel(self) -> None:
        """Do not run the callback (a no-op once it has run)."""


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
        self.refresh_task: Cancellable | None = None

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
