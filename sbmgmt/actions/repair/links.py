"""What both repair drivers keep of one run, and the rules they keep it by, written once:
the receiver and the senders, the transactions declared ahead of the batches, the lock
renewer that holds the received messages and the slots of the batches in flight.

Nothing here waits: the drivers (:mod:`.blocking` on threads, :mod:`.aio` on tasks) attach,
declare and detach their own way and call these for every decision that is not a wait
(which sender is still usable, how many transactions to declare, which links to detach),
and for the bookkeeping that is a plain call on either (registering what was received,
ending a batch), so that their code differs only where one waits and the other awaits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, Generic, Protocol, TypeVar

from sbmgmt.message import ReceivedMessage

from .run import RunState

__all__ = ["DECLARED_AHEAD", "Links"]

#: How many transactions are kept declared ahead of the batches that will take them (never
#: more than the batches still to come): a batch then waits for its sends and its commit,
#: not for a declare first. With 24 batches in flight, 8 ahead against none: a 10,000
#: message move at 20 ms 1.62-1.64 -> 1.39-1.40 s (the declare, a round trip and a turn in
#: the coordinator's queue, was a third of each batch's time).
DECLARED_AHEAD = 8

_Ahead = TypeVar("_Ahead")


class _Renewer(Protocol):
    """What the lock renewers (blocking and asyncio) share: plain calls on either."""

    def register(self, entity: object, lock: object) -> None: ...

    def unregister(self, entity: object, lock: object) -> bool: ...


class _Slots(Protocol):
    """A semaphore's release: a plain call on ``threading``'s and ``asyncio``'s."""

    def release(self) -> None: ...


class Links(Generic[_Ahead]):
    """A run's links and what its batches share beside the :class:`~.run.RunState`;
    ``_Ahead`` is the driver's handle of a transaction being declared (a future, a task).

    Attributes:
        receiver: The source's receiver once attached (a new one after a lost link).
        senders: The sender of each target attached so far.
        ahead: The transactions declared ahead, oldest first.
    """

    def __init__(self, run: RunState, renewer: _Renewer, slots: _Slots) -> None:
        self.run = run
        self.prefetch = run.settings.prefetch(len(run.plan.items))
        self.receiver: Any = None
        self.senders: dict[str, Any] = {}
        self.ahead: deque[_Ahead] = deque()
        self._renewer = renewer
        self._slots = slots

    def usable_sender(self, target: str) -> Any | None:
        """``target``'s sender; None when there is none yet or its link was lost (the
        driver attaches a new one)."""
        found = self.senders.get(target)
        return None if found is None or found.ended else found

    def to_declare(self, batches_left: int) -> int:
        """How many transactions to declare now so that :data:`DECLARED_AHEAD` are ahead,
        never more than the batches still to come; none without transactions."""
        if not self.run.transactional:
            return 0
        return max(0, min(batches_left, DECLARED_AHEAD) - len(self.ahead))

    def next_ahead(self) -> _Ahead | None:
        """The oldest transaction declared ahead, taken by a batch; None when none is."""
        return self.ahead.popleft() if self.ahead else None

    def unused_ahead(self) -> list[_Ahead]:
        """The transactions declared ahead that no batch took (at the end: rolled back)."""
        unused, self.ahead = list(self.ahead), deque()
        return unused

    def attached(self) -> list[Any]:
        """The receiver and the senders attached, to detach at the end."""
        return [link for link in (self.receiver, *self.senders.values()) if link is not None]

    def received(self, messages: list[ReceivedMessage]) -> list[ReceivedMessage]:
        """``messages`` (a receive's reply), each lock kept alive from now on."""
        for message in messages:
            self._renewer.register(self.run.plan.source, message)
        return messages

    def batch_ended(self, batch: Iterable[ReceivedMessage]) -> None:
        """A batch is over (moved, failed or left): its locks are no longer renewed, and
        its slot is free for the next."""
        self._let_go(batch)
        self._slots.release()

    def give_back_held(self) -> None:
        """Stop renewing the messages held (not planned): the receiver's detach gives
        them back."""
        self._let_go(self.run.held)

    def _let_go(self, messages: Iterable[ReceivedMessage]) -> None:
        for message in messages:
            self._renewer.unregister(self.run.plan.source, message)
