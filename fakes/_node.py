"""What a client's messages are sent to: the node interface every link's target has.

A receiver link of the server (the client sends on it) gets one node when it attaches
(:mod:`fakes._routing` picks it): ``$cbs`` (:mod:`fakes._nodes.cbs`), an entity's
``$management`` (:mod:`fakes._nodes.management`), the transaction coordinator
(:mod:`fakes._nodes.coordinator`) or the entity itself (:mod:`fakes._nodes.entity`).
Routing hands each complete message to :meth:`Node.accept` and settles its delivery
with what comes back; an exception rejects it.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Node"]


class Node(Protocol):
    """One link's target: takes the messages the client sends on it."""

    @property
    def name(self) -> str:
        """What warnings call it (``$cbs``, the entity path...)."""

    @property
    def replies_to(self) -> str | None:
        """The key of the reply links that answer it (``$cbs``, the entity path in lower
        case); None: it sends no replies, so its request link's credit never waits for
        them."""

    def accept(self, data: bytes, txn_id: bytes | None, now: float) -> bytes | None:
        """Apply one message (``txn_id``: stage it on that transaction instead); the
        txn-id a declare opened (settled as ``declared``), else None (``accepted``, or
        the transactional-state's accepted when staged). A FakeServiceError or a
        ProtocolError raised here rejects the message with its condition."""
