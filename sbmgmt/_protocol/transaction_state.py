"""A transaction's state as the caller's thread and the I/O thread share it (sans-I/O).

A declare or a discharge travels as a :class:`Control` from the caller's thread
(:class:`~sbmgmt._protocol.transaction.TransactionBase`) to the I/O thread's coordinator link
(:class:`~sbmgmt._engine.coordinator_link.CoordinatorLink`); each :class:`TransactionState`
holds the txn-id and the generation of the connection that declared it.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..errors import TransactionLostError

__all__ = ["DECLARE_OP", "DISCHARGE_OP", "Control", "TransactionState"]

#: The operation named in a declare's errors.
DECLARE_OP = "declare"
#: The operation named in a discharge's errors.
DISCHARGE_OP = "discharge"


@dataclass(eq=False)
class TransactionState:
    """One transaction: its txn-id, the connection it lives on, and whether it is lost.

    The I/O thread writes it (declared, lost); callers read it.
    """

    txn_id: bytes | None = None
    #: The generation of the connection that declared it (0 before it is declared).
    generation: int = 0
    #: Why it was lost (its connection or coordinator link went away), if it was.
    lost: str | None = None

    def lost_error(self, operation: str) -> TransactionLostError:
        """The error for work (or a commit) attempted on a lost transaction."""
        return TransactionLostError(
            f"{operation}: the transaction was lost ({self.lost}); the service rolls back a "
            "transaction whose connection is lost, so nothing done in it was committed",
            operation=operation,
        )


@dataclass(eq=False)
class Control:
    """A declare (``fail`` None) or a discharge, from submit to its outcome."""

    state: TransactionState
    fail: bool | None
    timeout: float
    future: Future[None] = field(default_factory=Future)
    task: Any = None

    @property
    def operation(self) -> str:
        return DECLARE_OP if self.fail is None else DISCHARGE_OP
