"""A message link's record and its states: :class:`MessageLink` (one sender or peek-lock
receiver link), :class:`LinkWork` (one thing to do on it), :class:`MessageLinkState`.

Theory of operation
-------------------
A link's state moves only through :meth:`MessageLink.move`, along :data:`_MOVES`; the
I/O thread (:class:`~sbmgmt._engine.message_links.MessageLinks`) is the only one to move
it, and the only one to touch the fields below "the I/O thread's state". Callers hold the
record and wait on ``opened`` and ``closed`` (and each work's ``future``), from any
thread.

- ``IDLE``: made by the caller, not handed to the I/O thread yet.
- ``WAITING``: its attach waits for the tokens of the entities it needs.
- ``ATTACHING``: the attach is sent (``link`` is proton's); the peer has not answered,
  or answered without a source / target (a refusal, its detach to follow).
- ``ATTACHED``: the peer attached it: sends are written, receivers have credit.
- ``DRAINING``: a receiver's detach first drains its credit (what the service still
  sends comes before its answer, or a timer ends the wait).
- ``DETACHING``: closed here (a receiver's held locks given back first); the peer's
  detach is to come.
- ``ENDED``: detached by either side, refused, or its connection lost: every pending
  work failed, ``closed`` resolved; ``reason`` says why. A link never leaves it.

Any state may end (the connection is lost, the client closes); ``WAITING`` or
``ATTACHING`` ends at a refusal, ``DETACHING`` at the peer's detach.
"""

from __future__ import annotations

import uuid
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from .._protocol.transaction_state import TransactionState
from ..errors import ServiceBusManagementError
from ..message import ReceivedMessage

__all__ = ["LinkWork", "MessageLink", "MessageLinkState", "Operation", "Outcome"]

Operation = Literal["attach", "detach", "send", "receive", "settle", "prefetch"]
Outcome = Literal["completed", "abandoned"]


class MessageLinkState(Enum):
    """Where a message link is, from the caller's request to attach until it ends."""

    IDLE = "idle"
    WAITING = "waiting"
    ATTACHING = "attaching"
    ATTACHED = "attached"
    DRAINING = "draining"
    DETACHING = "detaching"
    ENDED = "ended"


_S = MessageLinkState
#: Each state and the states it may move to (ENDED from any: a lost connection).
_MOVES: dict[MessageLinkState, frozenset[MessageLinkState]] = {
    _S.IDLE: frozenset({_S.WAITING, _S.ENDED}),
    _S.WAITING: frozenset({_S.ATTACHING, _S.ENDED}),
    _S.ATTACHING: frozenset({_S.ATTACHED, _S.DETACHING, _S.ENDED}),
    _S.ATTACHED: frozenset({_S.DRAINING, _S.DETACHING, _S.ENDED}),
    _S.DRAINING: frozenset({_S.DETACHING, _S.ENDED}),
    _S.DETACHING: frozenset({_S.ENDED}),
    _S.ENDED: frozenset({_S.ENDED}),
}


@dataclass(eq=False)
class MessageLink:
    """One sender or peek-lock receiver link, from the request to attach until it ends."""

    address: str
    receiver: bool
    destination: str | None = None
    name: str = field(default_factory=lambda: f"sbmgmt-link-{uuid.uuid4()}")
    #: Resolves when the peer answered the attach (or fails with the refusal).
    opened: Future[None] = field(default_factory=Future)
    #: Resolves when the link is gone (detached by either side, or the connection lost).
    closed: Future[None] = field(default_factory=Future)
    #: A receiver's prefetch: the credit kept out beyond what waiting receives ask for,
    #: so that messages are on their way before the next receive (they arrive locked).
    prefetch: int = 0
    # ---- the I/O thread's state ----
    state: MessageLinkState = MessageLinkState.IDLE
    #: Why it ended (the first error that ended it).
    reason: str | None = None
    #: Proton's link, from ATTACHING on.
    link: Any = None
    sends: deque[LinkWork] = field(default_factory=deque)
    unsettled: dict[bytes, LinkWork] = field(default_factory=dict)
    receives: deque[LinkWork] = field(default_factory=deque)
    buffered: deque[ReceivedMessage] = field(default_factory=deque)
    deliveries: dict[uuid.UUID, Any] = field(default_factory=dict)
    settling: dict[int, LinkWork] = field(default_factory=dict)
    #: DRAINING's end if the service does not answer the drain.
    drain_timer: Any = None
    #: The lock token of each held delivery, by the delivery's address.
    token_at: dict[int, uuid.UUID] = field(default_factory=dict)
    #: Lock tokens settled inside a transaction (the transaction decides their fate).
    transacted: set[uuid.UUID] = field(default_factory=set)

    def move(self, to: MessageLinkState) -> None:
        """The one place a link's state changes: to ``to``, if :data:`_MOVES` allows it.

        Raises:
            RuntimeError: ``to`` is not a state this one moves to (a defect).
        """
        if to not in _MOVES[self.state]:
            raise RuntimeError(f"the {self.what()}: no move from {self.state.value} to "
                               f"{to.value}")
        self.state = to

    def needs(self) -> tuple[str, ...]:
        """The entities whose tokens the attach needs."""
        return (self.address,) if self.destination is None else (self.address, self.destination)

    def what(self) -> str:
        kind = "receiver from" if self.receiver else "sender to"
        via = "" if self.destination is None else f" (to {self.destination!r} via it)"
        return f"{kind} {self.address!r}{via}"


@dataclass(eq=False)
class LinkWork:
    """One thing to do on a :class:`MessageLink`; ``future`` resolves when it is done."""

    link: MessageLink
    operation: Operation
    future: Future[Any] = field(default_factory=Future)
    #: A send's messages, encoded: one transfer each.
    payloads: tuple[bytes, ...] = ()
    transaction: TransactionState | None = None
    max_count: int = 0
    wait: float = 0.0
    lock_tokens: tuple[uuid.UUID, ...] = ()
    outcome: Outcome = "completed"
    # ---- the I/O thread's state ----
    collected: list[ReceivedMessage] = field(default_factory=list)
    #: A send's transfers written so far.
    sent: int = 0
    #: The outcomes (of a send's transfers, or a settle's deliveries) still to come.
    outstanding: int = 0
    timer: Any = None
    error: ServiceBusManagementError | None = None


def resolve(work: LinkWork, result: Any = None, error: BaseException | None = None) -> None:
    """The work is done: its timer cancelled, its future resolved (unless its caller
    cancelled it meanwhile)."""
    if work.timer is not None:
        work.timer.cancel()
        work.timer = None
    try:
        if error is None:
            work.future.set_result(result)
        else:
            work.future.set_exception(error)
    except InvalidStateError:  # cancelled by its caller meanwhile
        pass


def settle_future(future: Future[None], error: BaseException | None = None) -> None:
    """``opened`` or ``closed`` resolved, once."""
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
