"""The transaction coordinator target: declare and discharge (:mod:`fakes._coordinator`);
a declare's txn-id comes back to be settled as ``declared``."""

from __future__ import annotations

from dataclasses import dataclass

from .._coordinator import Coordinator
from .._links import ConnectionRecord

__all__ = ["CoordinatorNode"]


@dataclass(eq=False)
class CoordinatorNode:
    """The coordinator for one connection (its transactions are valid on it only)."""

    connection: ConnectionRecord
    transactions: Coordinator
    name: str = "the coordinator"
    replies_to: str | None = None

    def accept(self, data: bytes, txn_id: bytes | None, now: float) -> bytes | None:
        return self.transactions.control(data, self.connection.key, now)
