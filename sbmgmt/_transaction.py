"""Transactions (AMQP 1.0 part 4): the coordinator's frames, and the client's side of it.

Theory of operation
-------------------
A transaction is declared on the connection's coordinator: a sender link whose target
is a coordinator terminus (descriptor 0x30) with the capability
``amqp:local-transactions``. The controller (we) sends control messages on it and the
coordinator answers with each delivery's outcome::

    declare   (0x31) -> declared (0x33) [txn-id]     a transaction is open
    discharge (0x32) [txn-id, fail] -> accepted      committed (fail=false) / rolled back
                                    -> rejected      refused, with a transaction error

Work joins a transaction by carrying ``transactional-state`` (0x34) [txn-id] as its
transfer's delivery state; the service applies it only if the transaction commits.

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

Threads: :class:`TransactionBase` (the public transactions' shared part) runs on the
caller's thread and hands :class:`Control` items to the I/O thread, where
:class:`CoordinatorLink` owns the link and every control until its future resolves.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
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
from proton import Delivery, Described, Terminus, symbol, ulong

from ._loop import create_coordinator
from .amqp.encode import encode_amqp_value
from .amqp.sections import AMQP_VALUE, sections
from .errors import (
    ClientClosedError,
    OperationTimeoutError,
    ProtocolError,
    ServiceBusManagementError,
    TransactionLostError,
    TransactionOutcomeUnknownError,
    TransactionRefusedError,
    transaction_refusal,
)

__all__ = [
    "COORDINATOR_CAPABILITY",
    "DECLARED",
    "TRANSACTIONAL_STATE",
    "Control",
    "CoordinatorLink",
    "Declare",
    "Discharge",
    "TransactionBase",
    "TransactionState",
    "decode_control",
    "encode_declare",
    "encode_discharge",
    "set_transactional_state",
    "transactional_state",
]

_log = logging.getLogger("sbmgmt.transactions")

# "<descriptor name="amqp:declare:list" code="0x00000000:0x00000031"/>"; field: global-id
DECLARE = 0x31
# "<descriptor name="amqp:discharge:list" code="0x00000000:0x00000032"/>"; fields:
# txn-id (binary, mandatory), fail (boolean)
DISCHARGE = 0x32
# "<descriptor name="amqp:declared:list" code="0x00000000:0x00000033"/>"; field:
# txn-id (binary, mandatory). A delivery state (outcome) of the declare message.
DECLARED = 0x33
# "<descriptor name="amqp:transactional-state:list" code="0x00000000:0x00000034"/>";
# fields: txn-id (binary, mandatory), outcome (an outcome, optional)
TRANSACTIONAL_STATE = 0x34
#: What a coordinator target asks for (the capability every Service Bus SDK sends).
COORDINATOR_CAPABILITY = symbol("amqp:local-transactions")
_NAMES = {
    DECLARE: DECLARE, symbol("amqp:declare:list"): DECLARE,
    DISCHARGE: DISCHARGE, symbol("amqp:discharge:list"): DISCHARGE,
}
_DECLARE_OP = "declare"
_DISCHARGE_OP = "discharge"
_ROLLED_BACK_ANYWAY = frozenset({
    "amqp:transaction:unknown-id", "amqp:transaction:timeout", "amqp:transaction:rollback",
})


# ---- frames --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Declare:
    """A declare control message; ``global_id`` is for distributed transactions."""

    global_id: Any = None


@dataclass(frozen=True, slots=True)
class Discharge:
    """A discharge control message: commit (``fail`` False) or roll back."""

    txn_id: bytes
    fail: bool


def encode_declare() -> bytes:
    """The declare message: an amqp-value body holding ``declare`` with no global-id."""
    return encode_amqp_value(Described(ulong(DECLARE), []))


def encode_discharge(txn_id: bytes, fail: bool) -> bytes:
    """The discharge message of ``txn_id``: an amqp-value body holding ``discharge``."""
    return encode_amqp_value(Described(ulong(DISCHARGE), [txn_id, fail]))


def decode_control(data: bytes) -> Declare | Discharge:
    """The control message a controller sent to a coordinator (ProtocolError if it is
    neither a declare nor a discharge)."""
    body = next((value for code, value in sections(data) if code == AMQP_VALUE), None)
    if not isinstance(body, Described):
        raise ProtocolError("a coordinator message holds a declare or a discharge as its "
                            "amqp-value body")
    kind = _NAMES.get(body.descriptor)
    fields = body.value if isinstance(body.value, list) else []
    if kind == DECLARE:
        return Declare(fields[0] if fields else None)
    if kind == DISCHARGE and fields and isinstance(fields[0], (bytes, memoryview)):
        fail = fields[1] if len(fields) > 1 else None
        if fail is not None and not isinstance(fail, bool):
            raise ProtocolError(f"discharge: fail must be a boolean, got {fail!r}")
        return Discharge(bytes(fields[0]), bool(fail))
    raise ProtocolError(f"not a declare or a discharge with a txn-id: {body.descriptor!r}")


def set_transactional_state(delivery: Any, txn_id: bytes, outcome: int | None = None) -> None:
    """Set ``delivery``'s (a C pointer) local state to transactional-state [txn-id] and,
    when given, its outcome (an outcome descriptor: 0x24 accepted...)."""
    wrapped = Delivery.wrap(delivery)  # type: ignore[no-untyped-call]
    wrapped.local.data = [txn_id] if outcome is None else [txn_id, Described(ulong(outcome), [])]
    wrapped.update(TRANSACTIONAL_STATE)


def transactional_state(delivery: Any) -> tuple[bytes, Any] | None:
    """The txn-id and outcome of ``delivery``'s (a C pointer) remote transactional-state,
    or None when its state is another one. The txn-id is copied (proton's binary values
    point into its buffers)."""
    if pn_delivery_remote_state(delivery) != TRANSACTIONAL_STATE:
        return None
    data = Delivery.wrap(delivery).remote.data or []  # type: ignore[no-untyped-call]
    if not data or not isinstance(data[0], (bytes, memoryview)):
        return None
    return bytes(data[0]), data[1] if len(data) > 1 else None


# ---- state shared by the caller's thread and the I/O thread ----------------------------


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
        return _DECLARE_OP if self.fail is None else _DISCHARGE_OP


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
        operation=_DISCHARGE_OP, may_have_been_applied=True,
    )


# ---- the I/O thread's side -------------------------------------------------------------


class CoordinatorLink:
    """The connection's coordinator link and every declare and discharge (I/O thread).

    The link is attached lazily, on the first control after a connection opens. Controls
    wait in a queue for the link and its credit; sent ones are keyed by delivery tag
    until their outcome arrives. ``schedule(delay, callback)`` is the loop's timer.
    """

    def __init__(self, schedule: Callable[[float, Callable[[], None]], Any]) -> None:
        self._schedule = schedule
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
                _resolve(control, None if control.fail else state.lost_error(_DISCHARGE_OP))
                return
            if state.generation != self._generation or self._connection is None:
                state.lost = "its connection was closed"
                _resolve(control, None if control.fail else state.lost_error(_DISCHARGE_OP))
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
                _resolve(control, transaction_refusal(_DECLARE_OP, name, description))
            else:
                _resolve(control, transaction_refusal(
                    _DECLARE_OP, name, f"unexpected outcome 0x{state_code:x} to a declare"))
            return
        self._open.pop(id(state), None)
        if state_code == PN_ACCEPTED:
            _resolve(control)
        elif control.fail and name in _ROLLED_BACK_ANYWAY:
            _resolve(control)  # it is gone, so rolled back: what was asked
        else:
            _resolve(control, transaction_refusal(
                _DISCHARGE_OP, name,
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
                    _DECLARE_OP, name, description or "the coordinator link was refused"))
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
                    operation=_DECLARE_OP))
            else:
                _resolve(control, _unknown_outcome(control, why))
        for control in list(self._queued):
            if control.fail is not None:
                self._queued.remove(control)
                control.state.lost = control.state.lost or why
                _resolve(control, None if control.fail
                         else control.state.lost_error(_DISCHARGE_OP))

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
            _resolve(control, OperationTimeoutError(f"declare: {why}", operation=_DECLARE_OP))
        else:
            self._open.pop(id(control.state), None)
            _resolve(control, _unknown_outcome(control, why))

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


# ---- the caller's side -------------------------------------------------------------------

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
        """The txn-id the service gave this transaction (None before it is declared)."""
        return self._state.txn_id

    @property
    def state(self) -> TransactionState:
        """The state the I/O thread reads (internal)."""
        return self._state

    def check_usable(self, operation: str) -> None:
        """Raise unless work may join the transaction now."""
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
            raise self._state.lost_error(_DISCHARGE_OP)
        return self._control(fail)

    def _discharged(self, error: BaseException,
                    raised: type[BaseException] | None = None) -> bool:
        """A discharge failed with ``error``; whether to raise it. Leaving a with-block
        that raised ``raised``, a failed rollback is logged and the block's own
        exception goes on."""
        if isinstance(error, TransactionRefusedError):
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
