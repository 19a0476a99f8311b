"""The synchronous client: :class:`ManagementClient` and its :class:`EntityClient`.

``client.entity(path)`` gives an :class:`EntityClient` for any entity path (a queue,
``topic/Subscriptions/sub``, ``queue/$DeadLetterQueue``). Its methods turn friendly
arguments into an operation's ``Request`` (validated before anything is sent,
:mod:`sbmgmt._calls`), send it through the client's I/O thread with retries
(:mod:`sbmgmt._core`), and turn the ``Response`` into plain values. Any thread may call
any method; requests from all threads are pipelined on one connection.
:mod:`sbmgmt.aio` shares everything here except the waiting, and runs the same engine
on the event loop instead of a thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from ._calls import (
    Call,
    DispositionStatus,
    Resp,
    SettleMode,
    add_rule_call,
    cancel_scheduled_call,
    get_session_state_call,
    list_rules_call,
    list_sessions_call,
    peek_call,
    receive_deferred_call,
    remove_rule_call,
    renew_locks_call,
    renew_session_lock_call,
    schedule_call,
    set_session_state_call,
    update_disposition_call,
)
from ._core import (
    ClientCore,
    DriverFactory,
    connection_string_endpoint,
    endpoint_and_tokens,
    entity_path,
)
from ._dispatcher import DEFAULT_WINDOW, DispatcherStats
from ._io import IOThread
from ._peek_pager import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_PAGES_IN_FLIGHT,
    EntityPager,
    PeekPlan,
    peek_all,
)
from ._retry import RetryPolicy
from ._session import SessionLock
from ._transaction import TransactionBase
from .message import Message, ReceivedMessage
from .ops._base import OpRequest
from .rules import RuleDescription, RuleFilter, SqlRuleAction

__all__ = ["DispositionStatus", "EntityClient", "ManagementClient", "SettleMode", "Transaction"]

R = TypeVar("R")


# ---- the synchronous API -------------------------------------------------------------


class EntityClient:
    """Management operations on one entity (queue, subscription, dead-letter queue...)."""

    def __init__(self, core: ClientCore, path: str) -> None:
        self._core = core
        self.path = entity_path(path)

    def __repr__(self) -> str:
        return f"EntityClient(path={self.path!r}, host={self._core.endpoint.host!r})"

    def _run(self, call: Call[Resp, R]) -> R:
        return call.result(self._core.call(self.path, call.request))

    def send_request(self, request: OpRequest[Resp]) -> Resp:
        """Send any ``sbmgmt.ops.<op>.Request`` (with retries); return its ``Response``."""
        return self._core.call(self.path, request)

    def submit(
        self, request: OpRequest[Resp], *, timeout: float | None = None
    ) -> Future[Resp]:
        """Send one request without waiting or retrying (for pipelining many).

        The future resolves to the operation's ``Response`` or fails with its error.
        """
        return self._core.submit_future(self.path, request,
                                        self._core.timeout if timeout is None else timeout)

    def peek_messages(
        self, from_sequence_number: int = 1, max_count: int = 10, session_id: str | None = None
    ) -> list[ReceivedMessage]:
        """Browse up to ``max_count`` messages from ``from_sequence_number`` without locking."""
        return self._run(peek_call(from_sequence_number, max_count, session_id))

    def peek_all(
        self, from_sequence_number: int = 1, to_sequence_number: int | None = None, *,
        page_size: int = DEFAULT_PAGE_SIZE, pages_in_flight: int = DEFAULT_PAGES_IN_FLIGHT,
        session_id: str | None = None,
    ) -> Iterator[ReceivedMessage]:
        """Every message from ``from_sequence_number`` (to ``to_sequence_number``, or to
        the end), once each, in sequence-number order, without locking.

        ``pages_in_flight`` peeks of ``page_size`` are kept on the wire at once (sequence
        ranges ahead of the one being read), so the read does not wait a round trip per
        page; whatever the holes in the sequence numbers, no message is skipped or handed
        out twice, and what it holds is bounded by the pages in flight. A message sent or
        settled during the read may or may not be seen. A transient failure of a page is
        retried with the client's retry policy; any other error is raised by the iterator.
        See docs/performance.md, "Reading a whole entity".
        """
        plan = PeekPlan(from_sequence_number, to_sequence_number, page_size=page_size,
                        pages_in_flight=pages_in_flight)
        return peek_all(EntityPager(self, session_id), plan)

    def renew_message_locks(self, lock_tokens: Iterable[uuid.UUID | str]) -> list[datetime]:
        """Renew many message locks in one request; the new expiry of each (UTC)."""
        return self._run(renew_locks_call(lock_tokens))

    def schedule_messages(
        self, messages: Iterable[Message], scheduled_enqueue_time: datetime,
        transaction: Transaction | None = None,
    ) -> list[int]:
        """Schedule messages for ``scheduled_enqueue_time``; their sequence numbers.

        ``transaction``: an open transaction of this client (``client.transaction()``);
        the messages are scheduled only if it commits.
        """
        return self._run(schedule_call(messages, scheduled_enqueue_time, transaction))

    def cancel_scheduled_messages(self, sequence_numbers: Iterable[int]) -> None:
        """Cancel scheduled messages by sequence number."""
        self._run(cancel_scheduled_call(sequence_numbers))

    def receive_deferred_messages(
        self,
        sequence_numbers: Iterable[int],
        settle_mode: SettleMode = "peek_lock",
        session_id: str | None = None,
    ) -> list[ReceivedMessage]:
        """Receive deferred messages by sequence number."""
        return self._run(receive_deferred_call(sequence_numbers, settle_mode, session_id))

    def update_disposition(
        self,
        lock_tokens: Iterable[uuid.UUID | str],
        status: DispositionStatus | str,
        dead_letter_reason: str | None = None,
        dead_letter_description: str | None = None,
        properties_to_modify: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        transaction: Transaction | None = None,
    ) -> None:
        """Complete, abandon, dead-letter ("suspended") or defer ("defered") messages.

        ``transaction``: an open transaction of this client (``client.transaction()``);
        the settlement happens only if it commits.
        """
        self._run(update_disposition_call(
            lock_tokens, status, dead_letter_reason, dead_letter_description,
            properties_to_modify, session_id, transaction,
        ))

    def renew_session_lock(self, session_id: str) -> datetime:
        """Renew a session lock; its new expiry (UTC)."""
        return self._run(renew_session_lock_call(session_id))

    def get_session_state(self, session_id: str) -> bytes | None:
        """A session's state, or None when it has none."""
        return self._run(get_session_state_call(session_id))

    def set_session_state(self, session_id: str, state: bytes | None) -> None:
        """Set (or with None, clear) a session's state."""
        self._run(set_session_state_call(session_id, state))

    def session(self, session_id: str) -> SessionLock:
        """Lock a session for this client: ``with q.session("s1") as s: s.get_state()``.

        The service answers session requests only for a session locked by a receiver
        link of the same connection; see :class:`~sbmgmt._session.SessionLock`.
        """
        return SessionLock(self._core, self.path, session_id)

    def list_sessions(
        self, last_updated_time: datetime | None = None, skip: int = 0, top: int = 100
    ) -> list[str]:
        """Session ids updated after ``last_updated_time`` (None: every session)."""
        return self._run(list_sessions_call(last_updated_time, skip, top))

    def add_rule(
        self, name: str, filter: RuleFilter, action: SqlRuleAction | None = None
    ) -> None:
        """Add a rule to a subscription."""
        self._run(add_rule_call(name, filter, action))

    def remove_rule(self, name: str) -> None:
        """Remove a subscription rule by name."""
        self._run(remove_rule_call(name))

    def list_rules(self, skip: int = 0, top: int = 100) -> list[RuleDescription]:
        """A page of a subscription's rules."""
        return self._run(list_rules_call(skip, top))


_C = TypeVar("_C", bound="ClientBase")


class ClientBase:
    """What the sync and asyncio clients share: construction, the core, and counters."""

    #: What runs the client's engine: a thread of its own (the asyncio client runs it on
    #: its event loop).
    _driver: ClassVar[DriverFactory] = IOThread

    def __init__(
        self,
        fully_qualified_namespace: str,
        credential: object,
        *,
        timeout: float = 30.0,
        window: int = DEFAULT_WINDOW,
        retry: RetryPolicy | None = None,
    ) -> None:
        endpoint, tokens = endpoint_and_tokens(fully_qualified_namespace, credential)
        self._core = ClientCore(endpoint, tokens, timeout=timeout, window=window, retry=retry,
                                driver=self._driver)

    @classmethod
    def from_connection_string(
        cls: type[_C],
        conn_str: str,
        *,
        timeout: float = 30.0,
        window: int = DEFAULT_WINDOW,
        retry: RetryPolicy | None = None,
    ) -> _C:
        """A client for a connection string (an emulator one connects without TLS)."""
        endpoint, tokens = connection_string_endpoint(conn_str)
        client = cls.__new__(cls)
        client._core = ClientCore(endpoint, tokens, timeout=timeout, window=window, retry=retry,
                                  driver=cls._driver)
        return client

    def __repr__(self) -> str:
        return f"{type(self).__name__}(host={self._core.endpoint.host!r})"

    @property
    def stats(self) -> DispatcherStats:
        """Request counters summed over the client's entities (``max_in_flight`` included)."""
        return self._core.stats()

    @property
    def io_thread_name(self) -> str:
        """The name of the client's I/O thread (``sbmgmt-io-<n>``); the asyncio client has
        none (its engine runs on the event loop) and this names its engine
        (``sbmgmt-aio-<n>``), as its log lines do."""
        return self._core.io.name


class ManagementClient(ClientBase):
    """A connection to one namespace; ``entity(path)`` gives the operations.

    ``timeout`` bounds each call, retries included (unless ``retry.deadline`` says
    otherwise); ``window`` is the most requests in flight per entity.
    """

    def entity(self, path: str) -> EntityClient:
        """The operations on one entity path."""
        return EntityClient(self._core, path)

    def transaction(self) -> Transaction:
        """A transaction on this client's connection; declared by ``with``, committed when
        the block ends, rolled back if it raises (see docs/transactions.md)."""
        core = self._core
        return Transaction(core, core.io.submit_control, core.timeout)

    def close(self) -> None:
        """Fail pending requests with ClientClosedError and close the connection."""
        self._core.close()

    def __enter__(self) -> ManagementClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Transaction(TransactionBase):
    """A transaction on a :class:`ManagementClient`'s connection.

    ``with client.transaction() as txn:`` declares it; pass ``transaction=txn`` to
    ``schedule_messages`` / ``update_disposition`` (or to a ``Request``). Leaving the block
    commits it, or rolls it back when the block raises; :meth:`commit` and
    :meth:`rollback` end it earlier. Errors: docs/transactions.md.
    """

    def __enter__(self) -> Transaction:
        future = self._declare()
        try:
            self._wait(future, "declare")
        except BaseException as exc:
            self._declared(exc)
            raise
        self._declared(None)
        return self

    def commit(self) -> None:
        """Commit: everything done in the transaction is applied, at once."""
        self._finish(self._discharge(False))

    def rollback(self) -> None:
        """Roll back: nothing done in the transaction is applied."""
        self._finish(self._discharge(True))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish(self._exit_discharge(exc_type is not None), exc_type)

    def _wait(self, future: Future[None], operation: str) -> None:
        core = self.owner
        assert isinstance(core, ClientCore)
        core.result(future, operation, core.timeout)

    def _finish(self, future: Future[None] | None,
                raised: type[BaseException] | None = None) -> None:
        if future is None:
            return
        try:
            self._wait(future, "discharge")
        except BaseException as exc:
            if self._discharged(exc, raised):
                raise
