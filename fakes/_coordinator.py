"""The fake namespace's transaction coordinator (AMQP 1.0 part 4, as Service Bus runs it).

Theory of operation
-------------------
A client attaches a link to a coordinator target and sends control messages on it: a
``declare`` opens a transaction (its outcome is ``declared`` with a fresh txn-id), a
``discharge`` ends one (``fail`` false commits, true rolls back). Work that carries a
transactional-state with the txn-id is not applied when it arrives: it is checked (the
same refusals it would get outside a transaction), then *staged* on the transaction as
a :class:`Staged` pair of functions:

- ``check(now)`` raises the service's error if the work can no longer be applied (for
  example a lock it settles has expired);
- ``apply(now)`` applies it.

A commit first checks every staged item and, only if all pass, applies them all (under
the namespace lock, so nothing else runs in between): all or nothing. If a check fails
the transaction is rolled back and the discharge is refused with
``amqp:transaction:rollback``. A lock token may be settled once per transaction, so
checking every item before applying any is enough.

The service's rules: a transaction open longer than :data:`TIMEOUT` (2 minutes, on the
fake's clock) is rolled back (:meth:`Coordinator.expire`, run by the server's pump); a
txn-id is valid only on the connection that declared it, and only while it is open
(an unknown, discharged or foreign txn-id is refused with ``amqp:transaction:unknown-id``,
a timed-out one with ``amqp:transaction:timeout``); a connection that closes rolls back
its open transactions. A namespace made without transactions (``transactions=False``, as a
Basic-tier namespace) rejects every declare with ``amqp:not-allowed``, the service's words.
A transaction holds at most the tier's messages (100, "Number of messages per transaction",
the quotas page): the send that would take it past is refused (``amqp:resource-limit-
exceeded``, "Cannot send more than 100 messages in a single transaction.") and the
transaction stays open with what it had.
Nothing is applied before a commit, so every accepted message
stays counted once (the store's accounting) across commits and rollbacks.

Not thread-safe: the server calls it under the namespace lock.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sbmgmt.amqp.transaction_frames import Declare, decode_control

from ._errors import (
    FakeServiceError,
    MessageLockLost,
    NotAllowed,
    TransactionRolledBack,
    TransactionTimedOut,
    TransactionUnknown,
)
from ._tiers import STANDARD, Tier

__all__ = ["TIMEOUT", "Coordinator", "OpenTransaction", "Staged", "top_level"]

_LOG = logging.getLogger("fakes.transactions")

#: How long a transaction may stay open (the service's limit: 2 minutes).
TIMEOUT = 120.0
_ENDED_KEPT = 4096
_DISCHARGED = "discharged"
_TIMED_OUT = "timed out"
_CLOSED = "rolled back when its connection closed"


def _always(_now: float) -> None:
    """The check of work that cannot become invalid (a send, a schedule)."""


@dataclass(frozen=True)
class Staged:
    """Work done in a transaction, applied only if it commits."""

    apply: Callable[[float], None]
    check: Callable[[float], None] = _always
    #: The lock tokens it settles (each at most once per transaction).
    tokens: tuple[uuid.UUID, ...] = ()
    #: The entity it acts on (a send-via send: the via entity), when the rule below holds it.
    entity: str | None = None
    #: How many messages it sends (a send or a schedule), against the transaction's quota.
    messages: int = 0


def top_level(path: str) -> str:
    """The top-level entity of a path: the queue or topic (``q/$DeadLetterQueue`` -> ``q``,
    ``t/Subscriptions/s`` -> ``t``), compared without case."""
    return path.split("/", 1)[0].lower()


@dataclass
class OpenTransaction:
    """A declared transaction and the work staged on it."""

    txn_id: bytes
    connection: int
    deadline: float
    staged: list[Staged] = field(default_factory=list)
    tokens: set[uuid.UUID] = field(default_factory=set)
    #: The top-level entity its sends and settlements act on (the first one's).
    entity: str | None = None
    #: The tier whose message quota it keeps (``Tier.max_transaction_messages``).
    tier: Tier = STANDARD
    #: The messages its staged work sends.
    messages: int = 0

    def stage(self, work: Staged) -> None:
        """Add work; settling a lock token twice in one transaction is refused, and so is
        work on a second top-level entity (the service's rule: a transaction acts on one
        queue or topic; a message for another goes *via* it, send-via)."""
        if work.entity is not None:
            entity = top_level(work.entity)
            if self.entity is None:
                self.entity = entity
            elif entity != self.entity:
                raise NotAllowed("Local transactions cannot span multiple top-level entities "
                                 f"such as queue or topic ({self.entity!r}, then {entity!r}); "
                                 "send to the other entity via the first one.")
        if work.messages:
            self.tier.check_transaction_size(self.messages + work.messages)
        again = self.tokens.intersection(work.tokens)
        if again:
            raise MessageLockLost(
                f"The lock {next(iter(again))} is already settled in this transaction.")
        self.tokens.update(work.tokens)
        self.messages += work.messages
        self.staged.append(work)


class Coordinator:
    """Every open transaction of the namespace, and what ended recently (for its error)."""

    def __init__(self, timeout: float = TIMEOUT, *, transactions: bool = True,
                 tier: Tier = STANDARD) -> None:
        self.timeout = timeout
        #: False: every declare is refused, as the Basic tier refuses them.
        self.transactions = transactions and tier.transactions
        self._tier = tier
        self._open: dict[bytes, OpenTransaction] = {}
        self._ended: OrderedDict[bytes, str] = OrderedDict()
        #: How many transactions were committed / rolled back (for tests and logs).
        self.committed = 0
        self.rolled_back = 0

    def control(self, data: bytes, connection: int, now: float) -> bytes | None:
        """Carry out one control message: the new txn-id for a declare, None for a
        discharge (FakeServiceError / ProtocolError when it is refused)."""
        control = decode_control(data)
        if isinstance(control, Declare):
            if control.global_id is not None:
                raise _NotImplemented("Distributed transactions are not supported.")
            return self.declare(connection, now)
        self.discharge(control.txn_id, control.fail, connection, now)
        return None

    def declare(self, connection: int, now: float) -> bytes:
        """Open a transaction on ``connection``; its txn-id."""
        if not self.transactions:
            raise NotAllowed("Transaction is unsupported because the namespace is of "
                             "'Basic' tier.")
        txn_id = f"txn:{uuid.uuid4().hex}".encode()
        self._open[txn_id] = OpenTransaction(txn_id, connection, now + self.timeout,
                                             tier=self._tier)
        return txn_id

    def transaction(self, txn_id: bytes, connection: int, now: float) -> OpenTransaction:
        """The open transaction ``txn_id`` of ``connection``, for work to join it (one past
        its deadline is rolled back here, before the pump's :meth:`expire` comes to it)."""
        found = self._open.get(txn_id)
        if found is not None and found.deadline <= now:
            self._roll_back([txn_id], _TIMED_OUT)
            found = None
        if found is None:
            ended = self._ended.get(txn_id)
            if ended == _TIMED_OUT:
                raise TransactionTimedOut(
                    f"The transaction {_text(txn_id)} timed out and was rolled back.")
            raise TransactionUnknown(
                f"The transaction {_text(txn_id)} is not open"
                + (f" ({ended})." if ended else "."))
        if found.connection != connection:
            raise TransactionUnknown(
                f"The transaction {_text(txn_id)} was not declared on this connection.")
        return found

    def discharge(self, txn_id: bytes, fail: bool, connection: int, now: float) -> None:
        """Commit (all staged work, or none of it) or roll back."""
        found = self.transaction(txn_id, connection, now)
        del self._open[txn_id]
        self._end(txn_id, _DISCHARGED)
        if fail:
            self.rolled_back += 1
            return
        try:
            for work in found.staged:
                work.check(now)
        except FakeServiceError as exc:
            self.rolled_back += 1
            raise TransactionRolledBack(
                f"The transaction {_text(txn_id)} was rolled back: {exc.description}") from None
        for work in found.staged:
            work.apply(now)
        self.committed += 1

    def expire(self, now: float) -> float | None:
        """Roll back every transaction open too long; the next deadline, if any."""
        next_deadline = math.inf
        for txn_id, found in list(self._open.items()):
            if found.deadline <= now:
                self._roll_back([txn_id], _TIMED_OUT)
            else:
                next_deadline = min(next_deadline, found.deadline)
        return None if next_deadline == math.inf else next_deadline

    def connection_closed(self, connection: int) -> None:
        """Roll back the open transactions of a connection that went away."""
        self._roll_back([txn_id for txn_id, found in self._open.items()
                         if found.connection == connection], _CLOSED)

    def _roll_back(self, txn_ids: Iterable[bytes], why: str) -> None:
        for txn_id in txn_ids:
            del self._open[txn_id]
            self._end(txn_id, why)
            self.rolled_back += 1
            _LOG.info("transaction %s %s", _text(txn_id), why)

    def _end(self, txn_id: bytes, why: str) -> None:
        self._ended[txn_id] = why
        if len(self._ended) > _ENDED_KEPT:
            self._ended.popitem(last=False)


class _NotImplemented(FakeServiceError):
    status_code = 501
    condition = "amqp:not-implemented"


def _text(txn_id: bytes) -> str:
    return txn_id.decode("ascii", "replace")
