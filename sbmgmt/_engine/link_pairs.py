"""The engine's link pairs: each entity's management pair and the states it moves
through, the connection's ``$cbs`` pair, and the one timer for their deadlines.

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
here too, so a reset cancels it. :class:`ManagementLinks` holds every entity's pair on
one engine and opens (ATTACHING), closes and forgets the links. :class:`CbsLinks` is the
connection's put-token pair; :class:`ExpiryTimer` keeps one timer at the earliest
deadline of every dispatcher.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from .._protocol.dispatcher import Dispatcher, DispatcherStats
from .._protocol.link_state import CBS_NODE, EntityLinks, LinkState
from ..transport.proton_loop import Timer
from .deliveries import reply_credit
from .open_links import create_receiver, create_sender

__all__ = [
    "CBS_NODE", "CbsLinks", "EntityLinks", "ExpiryTimer", "LinkState", "ManagementLinks",
    "add_stats", "total_stats",
]


def total_stats(dispatchers: Iterable[Dispatcher]) -> DispatcherStats:
    """Counters summed over ``dispatchers`` (``max_in_flight`` is the largest seen)."""
    total = DispatcherStats()
    for dispatcher in dispatchers:
        total = add_stats(total, dispatcher.stats)
    return total


def add_stats(a: DispatcherStats, b: DispatcherStats) -> DispatcherStats:
    """The counters of ``a`` and ``b`` summed (``max_in_flight``: the larger)."""
    return DispatcherStats(
        submitted=a.submitted + b.submitted,
        sent=a.sent + b.sent,
        completed=a.completed + b.completed,
        failed=a.failed + b.failed,
        timed_out=a.timed_out + b.timed_out,
        late_replies=a.late_replies + b.late_replies,
        unknown_replies=a.unknown_replies + b.unknown_replies,
        max_in_flight=max(a.max_in_flight, b.max_in_flight),
    )


class ManagementLinks:
    """Every entity's :class:`EntityLinks` on one engine, by entity and by link name."""

    def __init__(self, addresses: tuple[Callable[[str], str], Callable[[str], str]],
                 window: int) -> None:
        self._audience_for, self._reply_to_for = addresses
        self._window = window
        self.entities: dict[str, EntityLinks] = {}
        self._by_link_name: dict[str, EntityLinks] = {}

    def of(self, entity: str) -> EntityLinks:
        """The entity's links (IDLE when first asked for)."""
        links = self.entities.get(entity)
        if links is None:
            links = EntityLinks(entity, self._audience_for(entity), self._reply_to_for(entity),
                                self._window)
            self.entities[entity] = links
        return links

    def by_link(self, name: str) -> EntityLinks | None:
        """The entity a link of ours belongs to (None: not a management link we know)."""
        return self._by_link_name.get(name)

    def attach(self, links: EntityLinks, connection: Any) -> None:
        """AUTHORIZING -> ATTACHING: open the sender and the reply receiver (with the
        twice the window as credit: :func:`~sbmgmt._engine.deliveries.reply_credit`); each link
        name carries a uuid (unique per connection)."""
        links.move(LinkState.ATTACHING)
        suffix = uuid.uuid4()
        links.sender = create_sender(connection, target=links.node,
                                     name=f"{links.node}-sender-{suffix}")
        links.receiver = create_receiver(connection, source=links.node, target=links.reply_to,
                                         name=f"{links.node}-receiver-{suffix}")
        links.receiver.flow(reply_credit(self._window))
        self._by_link_name[links.sender.name] = links
        self._by_link_name[links.receiver.name] = links

    def detach(self, links: EntityLinks) -> None:
        """Close the entity's links and forget them: back to IDLE."""
        for link in (links.sender, links.receiver):
            if link is not None:
                self._by_link_name.pop(link.name, None)
                link.close()
        links.reset()

    def connection_lost(self) -> None:
        """Every link went with the connection: all entities back to IDLE."""
        self._by_link_name.clear()
        for links in self.entities.values():
            links.reset()

    def stats(self) -> DispatcherStats:
        return total_stats(links.dispatcher for links in list(self.entities.values()))


class CbsLinks:
    """A connection's ``$cbs`` link pair: put-tokens go out on :attr:`sender`, their
    replies come to the receiver (its target the token manager's reply address)."""

    def __init__(self, window: int) -> None:
        self._window = window
        self.sender: Any = None  # None while there is no connection
        self.sender_name = ""
        self.receiver_name = ""

    def attach(self, connection: Any, reply_to: str) -> None:
        """Open the pair on a new connection (new names: unique per connection)."""
        self.sender_name = f"sbmgmt-cbs-sender-{uuid.uuid4()}"
        self.receiver_name = f"sbmgmt-cbs-receiver-{uuid.uuid4()}"
        self.sender = create_sender(connection, target=CBS_NODE, name=self.sender_name)
        create_receiver(connection, source=CBS_NODE, target=reply_to,
                        name=self.receiver_name).flow(reply_credit(self._window))


class ExpiryTimer:
    """One timer for every dispatcher's deadlines: set to the earliest, and when it fires
    each dispatcher expires what is due (:meth:`~sbmgmt._protocol.dispatcher.Dispatcher.tick`)
    and the timer is set again. :meth:`rearm` after anything that may start a deadline."""

    def __init__(self, schedule: Callable[[float, Callable[[], None]], Timer],
                 dispatchers: Callable[[], Iterable[Dispatcher]]) -> None:
        self._schedule = schedule
        self._dispatchers = dispatchers
        self._task: Timer | None = None
        self._at: float | None = None

    def rearm(self) -> None:
        now = time.monotonic()
        deadlines = [d for d in (each.tick(now) for each in self._dispatchers())
                     if d is not None]
        if not deadlines:
            return
        earliest = min(deadlines)
        if self._at is not None and self._at <= earliest:
            return
        if self._task is not None:
            self._task.cancel()
        self._at = earliest
        self._task = self._schedule(max(0.0, earliest - now) + 0.001, self._fired)

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def _fired(self) -> None:
        self._task = None
        self._at = None
        self.rearm()
