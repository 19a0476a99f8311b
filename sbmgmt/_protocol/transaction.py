"""Transactions on the caller's side: what the sync and asyncio transactions share.

Theory of operation
-------------------
:class:`TransactionBase` runs on the caller's thread and walks one transaction through
its states: *new*; *declaring* once its declare is handed over; then *active* (or
*rolled back* when the declare failed); and once discharged, *committed* or *rolled
back* (also when the discharge is refused, or a commit finds the transaction already
marked lost), or *discharged with an unknown outcome* (a commit whose outcome never
arrived). Work joins it only while it is active.

Each declare and discharge goes to the I/O thread as a
:class:`~sbmgmt._engine.coordinator_link.Control`; there the connection's coordinator link
(:mod:`sbmgmt._engine.coordinator_link`) sends it and resolves its future, and records what
it learns (the txn-id, a loss with the connection) in the transaction's
:class:`~sbmgmt._protocol.transaction_state.TransactionState`, which this side reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future

from ..errors import (
    ServiceBusManagementError,
    TransactionLostError,
    TransactionOutcomeUnknownError,
    TransactionRefusedError,
)
from .transaction_state import DISCHARGE_OP, Control, TransactionState

__all__ = ["TransactionBase"]

_log = logging.getLogger("sbmgmt.transactions")

_NEW = "new"
_DECLARING = "declaring"
_ACTIVE = "active"
_COMMITTED = "committed"
_ROLLED_BACK = "rolled back"
_UNKNOWN = "discharged with an unknown outcome"


class TransactionBase:
    """What the sync and asyncio transactions share: the state and its transitions.

    ``owner`` is the client core it belongs to; ``submit(control)`` hands a control to
    that client's I/O thread; ``timeout`` bounds a declare or a discharge.
    """

    def __init__(self, owner: object, submit: Callable[[Control], None], timeout: float) -> None:
        #: The client core whose connection the transaction lives on.
        self.owner = owner
        self._submit = submit
        self._timeout = timeout
        self._state = TransactionState()
        self._status = _NEW

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._status})"

    @property
    def txn_id(self) -> bytes | None:
        """The txn-id the service gave this transaction; None before it is declared."""
        return self._state.txn_id

    @property
    def state(self) -> TransactionState:
        """The transaction's state as the I/O thread records it (for the client's engine)."""
        return self._state

    def check_usable(self, operation: str) -> None:
        """Check that work may join the transaction now (the clients call this for you).

        Args:
            operation: The operation about to join, for the error's message.

        Raises:
            ValueError: The transaction is not active (not declared yet, or already ended).
            sbmgmt.errors.TransactionLostError: Its connection was lost: nothing will commit.
        """
        if self._status != _ACTIVE:
            raise ValueError(f"transaction: cannot {operation} in a transaction that is "
                             f"{self._status} (use it inside its with-block)")
        if self._state.lost is not None:
            raise self._state.lost_error(operation)

    def _declare(self) -> Future[None]:
        if self._status != _NEW:
            raise ValueError(f"transaction: already {self._status}; a transaction is "
                             "declared once")
        self._status = _DECLARING
        return self._control(None)

    def _declared(self, error: BaseException | None) -> None:
        self._status = _ACTIVE if error is None else _ROLLED_BACK

    def _discharge(self, fail: bool) -> Future[None] | None:
        """The discharge's future, or None when there is nothing to discharge."""
        if self._status in (_COMMITTED, _ROLLED_BACK, _UNKNOWN):
            raise ValueError(f"transaction: already {self._status}")
        if self._status != _ACTIVE:
            raise ValueError("transaction: not declared yet (use it in a with-block)")
        self._status = _ROLLED_BACK if fail else _COMMITTED
        if self._state.lost is not None:
            if fail:
                return None
            self._status = _ROLLED_BACK
            raise self._state.lost_error(DISCHARGE_OP)
        return self._control(fail)

    def _discharged(self, error: BaseException,
                    raised: type[BaseException] | None = None) -> bool:
        """A discharge failed with ``error``; whether to raise it. Leaving a with-block
        that raised ``raised``, a failed rollback is logged and the block's own
        exception goes on."""
        if isinstance(error, (TransactionRefusedError, TransactionLostError)):
            # refused, or lost with its connection before the discharge went out: the
            # service rolls such a transaction back
            self._status = _ROLLED_BACK
        elif isinstance(error, TransactionOutcomeUnknownError):
            self._status = _UNKNOWN
        if raised is not None and isinstance(error, ServiceBusManagementError):
            _log.warning("rolling back after %s failed: %s", raised.__name__, error)
            return False
        return True

    def _exit_discharge(self, failed: bool) -> Future[None] | None:
        """What leaving the with-block discharges (None: already discharged, or a
        rollback with nothing to discharge)."""
        if self._status != _ACTIVE:
            return None
        return self._discharge(failed)

    def _control(self, fail: bool | None) -> Future[None]:
        control = Control(self._state, fail, self._timeout)
        self._submit(control)
        return control.future
