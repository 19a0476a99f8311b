"""The service's idle timers: entity links and connections left unused are closed.

Theory of operation
-------------------
The service closes what a client leaves unused (learn.microsoft.com,
``service-bus-amqp-troubleshoot``):

- a link on which "no calls (for example, send or receive) are made ... for 10 minutes" is
  detached with ``amqp:link:detach-forced`` ("... Detach origin:
  AmqpMessagePublisher.IdleTimerExpired: Idle timeout: 00:10:00."); the connection stays;
- a connection whose links have all closed, with no new link "in 5 minutes", and a new
  connection with no link "within 1 minute of the creation", are closed with
  ``amqp:connection:forced`` ("The connection was closed by container '...' because it did
  not have any active links in the past 300000 milliseconds.", 60000 for a new one).

The times are :class:`~fakes.Limits`' ``link_idle_timeout``, ``linkless_timeout`` and
``first_link_timeout`` (the service's by default; tests set them short). They run in real
time (monotonic), as the SDKs' own timers do: the fake's settable clock does not move them.

A link is active when a transfer, a settlement or a flow crosses it (the server stamps its
record's ``active_at``); a connection's record says since when it holds no link
(``linkless_since``, kept by :class:`~fakes._links.Records`). Only links to an entity (a
client's sender or receiver) are timed: the service documents the rule for those, and the
SDKs keep their ``$cbs`` and ``$management`` links for the connection's life.

:class:`IdleWatch` keeps one loop timer, at the earliest deadline of any record and at most
the shortest of the three times away (so a connection or link that came since is looked at
no later than that after its deadline); when it fires it closes what is due and sets itself
again. Not thread-safe: it runs on the server thread, under the namespace lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from proton import Condition, Endpoint

from sbmgmt.transport.selector_loop import Task

from ._detach import Detacher
from ._limits import Limits
from ._links import ConnectionRecord, LinkRecord, Records
from ._nodes.entity import EntityNode

__all__ = ["IdleWatch"]

_LINK_FORCED = "amqp:link:detach-forced"
_CONNECTION_FORCED = "amqp:connection:forced"


class IdleWatch:
    """Closes idle entity links and connections without links, as the service does."""

    def __init__(self, schedule: Callable[[float, Callable[[], None]], Task], records: Records,
                 detacher: Detacher, limits: Limits, lock: threading.RLock,
                 container: str) -> None:
        self._schedule = schedule
        self._records = records
        self._detacher = detacher
        self._limits = limits
        self._lock = lock
        self._container = container
        self._task: Task | None = None

    def start(self) -> None:
        """Set the first timer."""
        self._arm(time.monotonic() + self._shortest())

    def _shortest(self) -> float:
        limits = self._limits
        return min(limits.first_link_timeout, limits.linkless_timeout,
                   limits.link_idle_timeout)

    def _arm(self, due: float) -> None:
        """Fire at ``due`` (monotonic seconds)."""
        self._task = self._schedule(max(0.0, due - time.monotonic()), self._fire)

    def cancel(self) -> None:
        """Stop the timer (the server stops)."""
        if self._task is not None:
            self._task.cancel()
        self._task = None

    def _fire(self) -> None:
        with self._lock:
            self._arm(self.sweep(time.monotonic()))

    def sweep(self, now: float) -> float:
        """Close what is due at ``now``; the next deadline (monotonic seconds)."""
        limits = self._limits
        due = now + self._shortest()
        for record in list(self._records.connections.values()):
            if record.linkless_since is None:
                continue
            allowed = limits.linkless_timeout if record.linked else limits.first_link_timeout
            deadline = record.linkless_since + allowed
            if deadline <= now:
                self._close_connection(record, allowed)
            else:
                due = min(due, deadline)
        for link in list(self._records.links.values()):
            if not _timed(link):
                continue
            deadline = link.active_at + limits.link_idle_timeout
            if deadline > now:
                due = min(due, deadline)
            elif link.link.state & Endpoint.LOCAL_ACTIVE:
                self._detacher.close_link(
                    link.link, _LINK_FORCED,
                    f"The link '{link.link.name}' is force detached by the broker. Detach "
                    f"origin: AmqpMessagePublisher.IdleTimerExpired: Idle timeout: "
                    f"{_span(limits.link_idle_timeout)}.")
        return due

    def _close_connection(self, record: ConnectionRecord, allowed: float) -> None:
        """Close a connection left without links for ``allowed`` seconds."""
        proton = record.connection
        self._detacher.forget_connection(proton)
        if not proton.state & Endpoint.LOCAL_CLOSED:
            proton.condition = Condition(
                _CONNECTION_FORCED,
                f"The connection was closed by container '{self._container}' because it did "
                f"not have any active links in the past {round(allowed * 1000)} milliseconds.")
            proton.close()


def _timed(link: LinkRecord) -> bool:
    """Whether the idle rule applies to ``link``: a client's sender to an entity or a
    client's receiver of an entity's messages."""
    return link.key is not None or isinstance(link.node, EntityNode)


def _span(seconds: float) -> str:
    """``00:10:00``: a duration as the service writes a TimeSpan (fractions dropped)."""
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
