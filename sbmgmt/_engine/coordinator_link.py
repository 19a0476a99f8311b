"""The connection's coordinator link on the I/O thread (the state it shares with callers:
:mod:`sbmgmt._protocol.transaction_state`).

Theory of operation
-------------------
A declare or a discharge (the frames: :mod:`sbmgmt.amqp.transaction_frames`) travels as a
:class:`Control`: the caller's thread (:class:`~sbmgmt._protocol.transaction.TransactionBase`)
makes it and hands it to the I/O thread, where :class:`CoordinatorLink` owns the link
and every control until its future resolves.

A txn-id is valid on the connection that declared it. Each :class:`TransactionState`
remembers that connection's generation; when the connection (or the coordinator link)
is lost, every transaction open on it is marked lost: the service rolls such a
transaction back, so nothing done under it was committed, and any later use of it
fails at once with :class:`~sbmgmt.errors.TransactionLostError` (it is never sent on a
new connection). A commit whose outcome never arrives is reported as
:class:`~sbmgmt.errors.TransactionOutcomeUnknownError` (``may_have_been_applied``);
a rollback whose outcome never arrives needs no report: a transaction that is not
committed is rolled back (on discharge, on connection loss, or at the service's
timeout), so its outcome is the same either way.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import InvalidStateError
from typing import Any

from cproton import (
    PN_ACCEPTED,
    PN_REJECTED,
    pn_delivery,
    pn_delivery_remote_state,
    pn_delivery_settle,
    pn_delivery_updated,
    pn_link_advance,
    pn_link_credit,
    pn_link_send,
)
from proton import Delivery, Terminus

from .._protocol.transaction_state import DECLARE_OP, DISCHARGE_OP, Control, TransactionState
from ..amqp.transaction_frames import (
    COORDINATOR_CAPABILITY,
    DECLARED,
    encode_declare,
    encode_discharge,
)
from ..errors import (
    ClientClosedError,
    OperationTimeoutError,
    ServiceBusManagementError,
    TransactionLostError,
    TransactionOutcomeUnknownError,
    transaction_refusal,
)
from .open_links import create_coordinator

__all__ = ["DECLARE_OP", "DISCHARGE_OP", "Control", "CoordinatorLink", "TransactionState"]

_log = logging.getLogger("sbmgmt.transactions")

_ROLLED_BACK_ANYWAY = frozenset({
    "amqp:transaction:unknown-id", "amqp:transaction:timeout", "amqp:transaction:rollback",
})


def _resolve(control: Control, error: BaseException | None = None) -> None:
    if control.task is not None:
        control.task.cancel()
        control.task = None
    try:
        if error is None:
            control.future.set_result(None)
        else:
            control.future.set_exception(error)
    except InvalidStateError:  # cancelled by its caller meanwhile
        pass


def _unknown_outcome(control: Control, why: str) -> ServiceBusManagementError | None:
    """A discharge whose outcome never arrived: a commit may have been applied; a
    rollback has the same outcome either way (None: no error)."""
    if control.fail:
        _log.debug("rollback outcome not received (%s); the transaction is rolled back anyway",
                   why)
        return None
    return TransactionOutcomeUnknownError(
        f"discharge: the commit's outcome is unknown ({why}); it may have been applied",
        operation=DISCHARGE_OP, may_have_been_applied=True,
    )


# ---- the I/O thread's side -------------------------------------------------------------


class CoordinatorLink:
    """The connection's coordinator link and every declare and discharge (I/O thread).

    The link is attached lazily, on the first control after a connection opens. Controls
    wait in a queue for the link and its credit; sent ones are keyed by delivery tag
    until their outcome arrives. ``schedule(delay, callback)`` is the loop's timer;
    ``discharged(txn_id, committed)`` hears each discharge's outcome (committed, or not:
    rolled back, or refused and so rolled back by the service).
    """

    def __init__(self, schedule: Callable[[float, Callable[[], None]], Any],
                 discharged: Callable[[bytes, bool], None]) -> None:
        self._schedule = schedule
        self._discharged = discharged
        self._connection: Any = None
        self._generation = 0
        self.link: Any = None
        self.name = ""
        self._opened = False
        self._queued: deque[Control] = deque()
        self._sent: dict[str, Control] = {}
        self._open: dict[int, TransactionState] = {}
        self._tags = itertools.count(1)

    @property
    def queued(self) -> bool:
        """Whether controls wait for a connection."""
        return bool(self._queued)

    def submit(self, control: Control) -> None:
        """Take a control; it fails on its own after its timeout."""
        state = control.state
        if control.fail is not None:
            if state.lost is not None:
                _resolve(control, None if control.fail else state.lost_error(DISCHARGE_OP))
                return
            if state.generation != self._generation or self._connection is None:
                state.lost = "its connection was closed"
                _resolve(control, None if control.fail else state.lost_error(DISCHARGE_OP))
                return
        control.task = self._schedule(control.timeout, lambda: self._expired(control))
        self._queued.append(control)
        if self._connection is not None:
            self._ready()

    def connected(self, connection: Any, generation: int) -> None:
        """A new connection is open (its links are not): attach when there is work."""
        self._connection = connection
        self._generation = generation
        if self._queued:
            self._ready()

    def owns(self, name: str) -> bool:
        """Whether ``name`` is the coordinator link's name."""
        return self.link is not None and name == self.name

    def _ready(self) -> None:
        if self.link is None:
            self.name = f"sbmgmt-coordinator-{uuid.uuid4()}"
            self._opened = False
            self.link = create_coordinator(self._connection, name=self.name,
                                           capability=COORDINATOR_CAPABILITY)
        elif self._opened:
            self.pump()

    def opened(self, link: Any) -> None:
        """The link's attach was answered; a refusal (no coordinator target) waits for
        its detach."""
        if link.remote_target is None or link.remote_target.type != Terminus.COORDINATOR:
            return
        self._opened = True
        self.pump()

    def pump(self) -> None:
        """Send what the link's credit allows."""
        if self.link is None or not self._opened:
            return
        sender = self.link._impl
        while self._queued and pn_link_credit(sender) > 0:
            control = self._queued.popleft()
            if control.future.done():
                continue
            state = control.state
            if control.fail is None:
                payload = encode_declare()
            else:
                assert state.txn_id is not None
                payload = encode_discharge(state.txn_id, control.fail)
            tag = str(next(self._tags))
            pn_delivery(sender, tag.encode())
            pn_link_send(sender, payload)
            pn_link_advance(sender)
            self._sent[tag] = control

    def outcome(self, delivery: Any) -> None:
        """A control's delivery was updated: declared, accepted or rejected."""
        if not pn_delivery_updated(delivery):
            return
        state_code = pn_delivery_remote_state(delivery)
        if state_code == 0:
            return
        wrapped = Delivery.wrap(delivery)  # type: ignore[no-untyped-call]
        tag = wrapped.tag  # proton gives it as str here (bytes elsewhere)
        control = self._sent.pop(tag if isinstance(tag, str) else bytes(tag).decode(), None)
        pn_delivery_settle(delivery)
        if control is None:
            return
        condition = wrapped.remote.condition
        name = None if condition is None else str(condition.name)
        description = None if condition is None else condition.description
        state = control.state
        if control.fail is None:
            data = wrapped.remote.data or []
            if state_code == DECLARED and data and isinstance(data[0], (bytes, memoryview)):
                state.txn_id = bytes(data[0])
                state.generation = self._generation
                self._open[id(state)] = state
                _resolve(control)
            elif state_code == PN_REJECTED:
                _resolve(control, transaction_refusal(DECLARE_OP, name, description))
            else:
                _resolve(control, transaction_refusal(
                    DECLARE_OP, name, f"unexpected outcome 0x{state_code:x} to a declare"))
            return
        self._open.pop(id(state), None)
        if state.txn_id is not None:
            self._discharged(state.txn_id, state_code == PN_ACCEPTED and not control.fail)
        if state_code == PN_ACCEPTED:
            _resolve(control)
        elif control.fail and name in _ROLLED_BACK_ANYWAY:
            _resolve(control)  # it is gone, so rolled back: what was asked
        else:
            _resolve(control, transaction_refusal(
                DISCHARGE_OP, name,
                description if state_code == PN_REJECTED
                else f"unexpected outcome 0x{state_code:x} to a discharge"))

    def closed(self, condition: Any) -> None:
        """The peer detached the link (or refused to attach it)."""
        name = None if condition is None else str(condition.name)
        description = None if condition is None else condition.description
        if not self._opened:
            self._forget_link()
            for control in [*self._sent.values(), *self._queued]:
                _resolve(control, transaction_refusal(
                    DECLARE_OP, name, description or "the coordinator link was refused"))
            self._sent.clear()
            self._queued.clear()
            return
        detail = f"{name}: {description}" if description else (name or "no error condition")
        self._lose(f"the coordinator link was detached ({detail})")
        if self._queued:
            self._ready()

    def connection_lost(self, reason: str) -> None:
        """The connection is gone: every transaction open on it is lost."""
        self._lose(f"connection lost ({reason})")
        self._connection = None

    def _lose(self, why: str) -> None:
        self._forget_link()
        for state in self._open.values():
            state.lost = why
        self._open.clear()
        sent, self._sent = list(self._sent.values()), {}
        for control in sent:
            if control.fail is None:
                _resolve(control, TransactionLostError(
                    f"declare: {why} before the transaction was declared; none is open",
                    operation=DECLARE_OP))
            else:
                _resolve(control, _unknown_outcome(control, why))
        for control in list(self._queued):
            if control.fail is not None:
                self._queued.remove(control)
                control.state.lost = control.state.lost or why
                _resolve(control, None if control.fail
                         else control.state.lost_error(DISCHARGE_OP))

    def _forget_link(self) -> None:
        if self.link is not None:
            self.link.close()
        self.link = None
        self.name = ""
        self._opened = False

    def _expired(self, control: Control) -> None:
        control.task = None
        if control.future.done():
            return
        for tag, sent in list(self._sent.items()):
            if sent is control:
                del self._sent[tag]
        if control in self._queued:
            self._queued.remove(control)
        why = f"no outcome within {control.timeout:g} s"
        if control.fail is None:
            _resolve(control, OperationTimeoutError(f"declare: {why}", operation=DECLARE_OP))
        else:
            self._open.pop(id(control.state), None)
            _resolve(control, _unknown_outcome(control, why))

    def refuse_queued(self, error: Callable[[str], BaseException]) -> None:
        """No connection could be opened: fail the queued controls (declares: a discharge
        does not outlive its connection) with ``error(operation)``."""
        queued, self._queued = list(self._queued), deque()
        for control in queued:
            _resolve(control, error(control.operation))

    def close(self) -> None:
        """The client is closing: fail every control."""
        for control in [*self._sent.values(), *self._queued]:
            _resolve(control, ClientClosedError(
                f"{control.operation}: the client was closed", operation=control.operation))
        self._sent.clear()
        self._queued.clear()
        for state in self._open.values():
            state.lost = "the client was closed"
        self._open.clear()
