"""The asyncio client: :class:`AsyncManagementClient` and :class:`AsyncEntityClient`.

The same methods as :mod:`sbmgmt.client`, as coroutines. They share its argument
checks and its request/response conversions (:mod:`sbmgmt._calls`), and the same
engine, which here runs on the event loop the client is used from
(:mod:`sbmgmt._asyncio_io`): a call awaits an ``asyncio.Future`` resolved on that
loop, with no thread in between, and the event loop never blocks on I/O.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from concurrent.futures import Future
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from ._asyncio_io import EventLoopIO
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
from ._core import ClientCore, DriverFactory, entity_path
from ._peek_pager import DEFAULT_PAGE_SIZE, DEFAULT_PAGES_IN_FLIGHT, PeekPlan, peek_all_async
from ._session import AsyncSessionLock
from ._transaction import TransactionBase
from .client import ClientBase
from .message import Message, ReceivedMessage
from .ops._base import OpRequest
from .rules import RuleDescription, RuleFilter, SqlRuleAction

__all__ = ["AsyncEntityClient", "AsyncManagementClient", "AsyncTransaction"]

R = TypeVar("R")


class AsyncEntityClient:
    """Management operations on one entity, as coroutines."""

    def __init__(self, core: ClientCore, path: str) -> None:
        self._core = core
        self.path = entity_path(path)

    def __repr__(self) -> str:
        return f"AsyncEntityClient(path={self.path!r}, host={self._core.endpoint.host!r})"

    async def send_request(self, request: OpRequest[Resp]) -> Resp:
        """Send any ``sbmgmt.ops.<op>.Request`` (with retries); return its ``Response``."""
        return await self._core.call_async(self.path, request)

    def submit(
        self, request: OpRequest[Resp], *, timeout: float | None = None
    ) -> Future[Resp]:
        """Send one request without waiting or retrying (for pipelining many).

        It returns at once (it is not a coroutine) with the ``concurrent.futures.Future``
        of :meth:`sbmgmt.client.EntityClient.submit`, which resolves to the operation's
        ``Response`` or fails with its error; ``await asyncio.wrap_future(future)`` to
        wait for it on the event loop.
        """
        return self._core.submit_future(self.path, request,
                                        self._core.timeout if timeout is None else timeout)

    async def _run(self, call: Call[Resp, R]) -> R:
        return call.result(await self._core.call_async(self.path, call.request))

    async def peek_messages(
        self, from_sequence_number: int = 1, max_count: int = 10, session_id: str | None = None
    ) -> list[ReceivedMessage]:
        """Browse up to ``max_count`` messages from ``from_sequence_number`` without locking."""
        return await self._run(peek_call(from_sequence_number, max_count, session_id))

    def peek_all(
        self, from_sequence_number: int = 1, to_sequence_number: int | None = None, *,
        page_size: int = DEFAULT_PAGE_SIZE, pages_in_flight: int = DEFAULT_PAGES_IN_FLIGHT,
        session_id: str | None = None,
    ) -> AsyncIterator[ReceivedMessage]:
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

        def peek(start: int, count: int) -> Awaitable[list[ReceivedMessage]]:
            return self.peek_messages(start, count, session_id)

        return peek_all_async(peek, plan)

    async def renew_message_locks(
        self, lock_tokens: Iterable[uuid.UUID | str]
    ) -> list[datetime]:
        """Renew many message locks in one request; the new expiry of each (UTC)."""
        return await self._run(renew_locks_call(lock_tokens))

    async def schedule_messages(
        self, messages: Iterable[Message], scheduled_enqueue_time: datetime,
        transaction: AsyncTransaction | None = None,
    ) -> list[int]:
        """Schedule messages for ``scheduled_enqueue_time``; their sequence numbers.

        ``transaction``: an open transaction of this client (``client.transaction()``);
        the messages are scheduled only if it commits.
        """
        return await self._run(schedule_call(messages, scheduled_enqueue_time, transaction))

    async def cancel_scheduled_messages(self, sequence_numbers: Iterable[int]) -> None:
        """Cancel scheduled messages by sequence number."""
        await self._run(cancel_scheduled_call(sequence_numbers))

    async def receive_deferred_messages(
        self,
        sequence_numbers: Iterable[int],
        settle_mode: SettleMode = "peek_lock",
        session_id: str | None = None,
    ) -> list[ReceivedMessage]:
        """Receive deferred messages by sequence number."""
        return await self._run(receive_deferred_call(sequence_numbers, settle_mode, session_id))

    async def update_disposition(
        self,
        lock_tokens: Iterable[uuid.UUID | str],
        status: DispositionStatus | str,
        dead_letter_reason: str | None = None,
        dead_letter_description: str | None = None,
        properties_to_modify: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        transaction: AsyncTransaction | None = None,
    ) -> None:
        """Complete, abandon, dead-letter ("suspended") or defer ("defered") messages.

        ``transaction``: an open transaction of this client (``client.transaction()``);
        the settlement happens only if it commits.
        """
        await self._run(update_disposition_call(
            lock_tokens, status, dead_letter_reason, dead_letter_description,
            properties_to_modify, session_id, transaction,
        ))

    async def renew_session_lock(self, session_id: str) -> datetime:
        """Renew a session lock; its new expiry (UTC)."""
        return await self._run(renew_session_lock_call(session_id))

    async def get_session_state(self, session_id: str) -> bytes | None:
        """A session's state, or None when it has none."""
        return await self._run(get_session_state_call(session_id))

    async def set_session_state(self, session_id: str, state: bytes | None) -> None:
        """Set (or with None, clear) a session's state."""
        await self._run(set_session_state_call(session_id, state))

    def session(self, session_id: str) -> AsyncSessionLock:
        """Lock a session for this client: ``async with q.session("s1") as s: s.get_state()``.

        The service answers session requests only for a session locked by a receiver
        link of the same connection; see :class:`~sbmgmt._session.SessionLock`.
        """
        return AsyncSessionLock(self._core, self.path, session_id)

    async def list_sessions(
        self, last_updated_time: datetime | None = None, skip: int = 0, top: int = 100
    ) -> list[str]:
        """Session ids updated after ``last_updated_time`` (None: every session)."""
        return await self._run(list_sessions_call(last_updated_time, skip, top))

    async def add_rule(
        self, name: str, filter: RuleFilter, action: SqlRuleAction | None = None
    ) -> None:
        """Add a rule to a subscription."""
        await self._run(add_rule_call(name, filter, action))

    async def remove_rule(self, name: str) -> None:
        """Remove a subscription rule by name."""
        await self._run(remove_rule_call(name))

    async def list_rules(self, skip: int = 0, top: int = 100) -> list[RuleDescription]:
        """A page of a subscription's rules."""
        return await self._run(list_rules_call(skip, top))


class AsyncManagementClient(ClientBase):
    """The asyncio twin of :class:`sbmgmt.client.ManagementClient`.

    Its engine runs on the event loop it is first used from (it may be made outside any
    loop); see docs/threading.md for calls from other threads and other loops.
    """

    _driver: ClassVar[DriverFactory] = EventLoopIO

    def entity(self, path: str) -> AsyncEntityClient:
        """The operations on one entity path."""
        return AsyncEntityClient(self._core, path)

    def transaction(self) -> AsyncTransaction:
        """A transaction on this client's connection; declared by ``async with``, committed
        when the block ends, rolled back if it raises (see docs/transactions.md)."""
        core = self._core
        return AsyncTransaction(core, core.io.submit_control, core.timeout)

    async def close(self) -> None:
        """Fail pending requests with ClientClosedError and close the connection."""
        await self._core.aclose()

    async def __aenter__(self) -> AsyncManagementClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class AsyncTransaction(TransactionBase):
    """The asyncio twin of :class:`sbmgmt.client.Transaction` (``async with``)."""

    async def __aenter__(self) -> AsyncTransaction:
        future = self._declare()
        try:
            await asyncio.wrap_future(future)
        except BaseException as exc:
            self._declared(exc)
            raise
        self._declared(None)
        return self

    async def commit(self) -> None:
        """Commit: everything done in the transaction is applied, at once."""
        await self._finish(self._discharge(False))

    async def rollback(self) -> None:
        """Roll back: nothing done in the transaction is applied."""
        await self._finish(self._discharge(True))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._finish(self._exit_discharge(exc_type is not None), exc_type)

    async def _finish(self, future: Future[None] | None,
                      raised: type[BaseException] | None = None) -> None:
        if future is None:
            return
        try:
            await asyncio.wrap_future(future)
        except BaseException as exc:
            if self._discharged(exc, raised):
                raise
