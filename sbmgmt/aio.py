"""The asyncio client: [AsyncManagementClient][sbmgmt.aio.AsyncManagementClient] and
[AsyncEntityClient][sbmgmt.aio.AsyncEntityClient].

The methods of [ManagementClient][sbmgmt.ManagementClient] and
[EntityClient][sbmgmt.EntityClient], as coroutines, with the same argument checks and
request/response conversions and the same engine, which here runs on the event loop the
client is used from: a call awaits an ``asyncio.Future`` resolved on that loop, with no
thread in between, and the event loop never blocks on I/O.

```python
from sbmgmt.aio import AsyncManagementClient

async with AsyncManagementClient.from_connection_string(conn_str) as client:
    messages = await client.entity("myqueue").peek_messages(max_count=10)
```
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from ._client.client_core import ClientCore, DriverFactory, entity_path
from ._client.message_link import (
    AsyncMessageReceiver,
    AsyncMessageSender,
    receiver_link,
    sender_link,
)
from ._client.method_calls import (
    Call,
    DispositionStatus,
    Resp,
    SettleMode,
    add_rule_call,
    cancel_scheduled_call,
    delete_messages_call,
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
from ._client.peek_pager import DEFAULT_PAGE_SIZE, DEFAULT_PAGES_IN_FLIGHT, PeekPlan, peek_all_async
from ._client.purger import purge_async, start
from ._client.session_lock import AsyncSessionLock
from ._drivers.event_loop import EventLoopIO
from ._protocol.transaction import TransactionBase
from .client import ClientBase
from .message import Message, ReceivedMessage
from .ops._base import OpRequest
from .rules import RuleDescription, RuleFilter, SqlRuleAction

__all__ = ["AsyncEntityClient", "AsyncManagementClient", "AsyncTransaction"]

R = TypeVar("R")


class AsyncEntityClient:
    """Management operations on one entity, as coroutines.

    Made by [AsyncManagementClient.entity][sbmgmt.aio.AsyncManagementClient.entity]; the methods
    of [EntityClient][sbmgmt.EntityClient], awaited.

    Attributes:
        path: The entity path the requests go to.
    """

    def __init__(self, core: ClientCore, path: str) -> None:
        self._core = core
        self.path = entity_path(path)

    def __repr__(self) -> str:
        return f"AsyncEntityClient(path={self.path!r}, host={self._core.endpoint.host!r})"

    async def send_request(self, request: OpRequest[Resp]) -> Resp:
        """Send any operation's request (with retries) and return its response.

        The low-level form of every method here: ``await q.send_request(ops.peek_message.Request(
        from_sequence_number=1, message_count=10))`` returns an ``ops.peek_message.Response``.
        Failures worth retrying are retried within the client's ``timeout`` (docs/errors.md).

        Args:
            request: A ``Request`` of an [sbmgmt.ops][sbmgmt.ops] module.

        Returns:
            The operation's ``Response``.

        Raises:
            TypeError: ``request`` is not an operation's ``Request``.
            ValueError: ``request.transaction`` belongs to another client.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._core.call_async(self.path, request)

    def submit(
        self, request: OpRequest[Resp], *, timeout: float | None = None
    ) -> Future[Resp]:
        """Send one request without waiting or retrying (for pipelining many).

        It returns at once (it is not a coroutine) with a ``concurrent.futures.Future``; ``await
        asyncio.wrap_future(future)`` waits for it on the event loop.

        Args:
            request: A ``Request`` of an [sbmgmt.ops][sbmgmt.ops] module.
            timeout: Seconds to wait for the reply; None: the client's ``timeout``.

        Returns:
            A future that resolves to the operation's ``Response``, or fails with the errors
            listed for [send_request][sbmgmt.aio.AsyncEntityClient.send_request], without
                retries.

        Raises:
            TypeError: ``request`` is not an operation's ``Request``.
            ValueError: ``request.transaction`` belongs to another client.
        """
        return self._core.submit_future(self.path, request,
                                        self._core.timeout if timeout is None else timeout)

    async def _run(self, call: Call[Resp, R]) -> R:
        return call.result(await self._core.call_async(self.path, call.request))

    async def peek_messages(
        self, from_sequence_number: int = 1, max_count: int = 10, session_id: str | None = None
    ) -> list[ReceivedMessage]:
        """Browse messages without locking them (peek).

        Peeking takes no lock and changes nothing: the messages have no lock token. Active,
        deferred and scheduled messages are all returned (see ``ReceivedMessage.state``).

        Args:
            from_sequence_number: The sequence number to start from (inclusive, 0 or more); page
                on with the last one returned plus 1.
            max_count: The most messages to return (1 or more).
            session_id: Only this session's messages (an entity with sessions); None: any.

        Returns:
            Up to ``max_count`` messages in sequence-number order; an empty list past the end.

        Raises:
            ValueError: ``max_count`` is below 1, or another argument is out of range (pydantic's
                ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
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

        Args:
            from_sequence_number: The first sequence number to read (0 or more).
            to_sequence_number: The last sequence number to read; None: to the end.
            page_size: Messages per peek request, 1 to 250 (the service's most).
            pages_in_flight: The most peek requests kept on the wire at once (1 or
                more): a read starts with half of them and widens to all once its
                first pages came back full.
            session_id: Read this session's messages (a session-enabled entity); None: the
                entity's.

        Returns:
            An iterator over the messages (an async iterator on the asyncio client), in
            sequence-number order; it sends the first requests when it is first advanced.

        Raises:
            TypeError: An argument of the wrong type (at once, nothing is sent).
            ValueError: ``page_size`` or ``pages_in_flight`` out of range, or a negative
                ``from_sequence_number`` (at once, nothing is sent).
            sbmgmt.errors.ProtocolError: From the iterator: a reply whose messages all lie
                before the page's start.
            sbmgmt.errors.OperationError: From the iterator: the service refused a page (as
                for ``peek_messages``).
            sbmgmt.errors.TransportError: From the iterator: no reply came for a page once
                retries ran out.
        """
        plan = PeekPlan(from_sequence_number, to_sequence_number, page_size=page_size,
                        pages_in_flight=pages_in_flight)

        def peek(start: int, count: int) -> Awaitable[list[ReceivedMessage]]:
            return self.peek_messages(start, count, session_id)

        return peek_all_async(peek, plan)

    async def renew_message_locks(
        self, lock_tokens: Iterable[uuid.UUID | str]
    ) -> list[datetime]:
        """Renew many message locks in one request (renew-lock).

        Args:
            lock_tokens: The lock tokens of messages received in peek-lock mode on this entity
                (``uuid.UUID`` or its string), at least one.

        Returns:
            The new expiry of each lock (UTC), in the order of ``lock_tokens``.

        Raises:
            ValueError: No token, or a token that is not a UUID (pydantic's ``ValidationError``,
                a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.MessageLockLostError: A lock token's lock expired or its message was
                settled (410); the request fails as a whole.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._run(renew_locks_call(lock_tokens))

    async def schedule_messages(
        self, messages: Iterable[Message], scheduled_enqueue_time: datetime,
        transaction: AsyncTransaction | None = None,
    ) -> list[int]:
        """Schedule messages to be enqueued at a later time (schedule-message).

        Each message without a ``message_id`` gets a new one (a uuid4). Cancel them with
        [cancel_scheduled_messages][sbmgmt.aio.AsyncEntityClient.cancel_scheduled_messages] by
        their sequence numbers.

        Args:
            messages: The messages, at least one.
            scheduled_enqueue_time: When the service enqueues them (a naive datetime is taken as
                UTC).
            transaction: An open transaction of this client (``async with client.transaction() as
                txn``); the messages are scheduled only if it commits. None: at once.

        Returns:
            The sequence numbers of the scheduled messages, in the order of ``messages``.

        Raises:
            TypeError: ``messages`` is not an iterable of [Message][sbmgmt.Message], or
                ``scheduled_enqueue_time`` is not a datetime.
            ValueError: No message, or a message field is invalid (pydantic's
                ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.TransactionError: ``transaction`` has ended or was lost.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
            sbmgmt.errors.TransportError: No reply came (the request is not idempotent): the
                error's ``may_have_been_applied`` says whether the service may have applied it,
                as this operation is not replayed after a lost connection.
        """
        return await self._run(schedule_call(messages, scheduled_enqueue_time, transaction))

    async def cancel_scheduled_messages(self, sequence_numbers: Iterable[int]) -> None:
        """Cancel scheduled messages by sequence number (cancel-scheduled-message).

        A number that is not (or no longer) a scheduled message makes the service refuse
        the request: [ScheduledMessagesNotFoundError][sbmgmt.errors.ScheduledMessagesNotFoundError]
        names those numbers.

        Args:
            sequence_numbers: The sequence numbers
                [schedule_messages][sbmgmt.aio.AsyncEntityClient.schedule_messages] returned, at
                least one.

        Raises:
            ValueError: No sequence number, or a negative one (pydantic's ``ValidationError``, a
                ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.ScheduledMessagesNotFoundError: Some numbers are not scheduled
                messages of the entity (its ``sequence_numbers`` names them); a
                [NotFoundError][sbmgmt.errors.NotFoundError].
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        await self._run(cancel_scheduled_call(sequence_numbers))

    async def receive_deferred_messages(
        self,
        sequence_numbers: Iterable[int],
        settle_mode: SettleMode = "peek_lock",
        session_id: str | None = None,
    ) -> list[ReceivedMessage]:
        """Receive deferred messages by sequence number (receive-by-sequence-number).

        Args:
            sequence_numbers: The sequence numbers of messages deferred on this entity, at least
                one.
            settle_mode: ``"peek_lock"``: the messages come locked, with lock tokens, to be
                settled with
                [update_disposition][sbmgmt.aio.AsyncEntityClient.update_disposition];
                ``"receive_and_delete"``: they are removed as they are returned.
            session_id: The session of the messages (an entity with sessions); None: none.

        Returns:
            The messages, with lock tokens in ``"peek_lock"`` mode.

        Raises:
            ValueError: No sequence number, or ``settle_mode`` is neither mode (pydantic's
                ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.NotFoundError: A sequence number is not a deferred message of the
                entity (``com.microsoft:message-not-found``).
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
            sbmgmt.errors.TransportError: No reply came (the request is not idempotent): the
                error's ``may_have_been_applied`` says whether the service may have applied it,
                as this operation is not replayed after a lost connection.
        """
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
        """Settle locked messages by lock token: complete, abandon, dead-letter or defer them.

        Args:
            lock_tokens: The lock tokens of the messages (``uuid.UUID`` or its string), at least
                one.
            status: A [DispositionStatus][sbmgmt.DispositionStatus] or its value:
                ``"completed"``, ``"abandoned"``, ``"suspended"`` (dead-letter) or ``"defered"``
                (the service's spelling; defer).
            dead_letter_reason: With ``"suspended"``: the ``DeadLetterReason`` the message gets.
            dead_letter_description: With ``"suspended"``: its ``DeadLetterErrorDescription``.
            properties_to_modify: Application properties to set on the messages (with
                ``"abandoned"``, ``"suspended"`` or ``"defered"``).
            session_id: The session of the messages (an entity with sessions); None: none.
            transaction: An open transaction of this client (``async with client.transaction() as
                txn``); the settlement happens only if it commits. None: at once.

        Raises:
            TypeError: A value of ``properties_to_modify`` has no AMQP encoding.
            ValueError: No token, a token that is not a UUID, or an unknown ``status``
                (pydantic's ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.MessageLockLostError: A lock token's lock expired or its message was
                settled (410); the request fails as a whole.
            sbmgmt.errors.TransactionError: ``transaction`` has ended or was lost.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
            sbmgmt.errors.TransportError: No reply came (the request is not idempotent): the
                error's ``may_have_been_applied`` says whether the service may have applied it,
                as this operation is not replayed after a lost connection.
        """
        await self._run(update_disposition_call(
            lock_tokens, status, dead_letter_reason, dead_letter_description,
            properties_to_modify, session_id, transaction,
        ))

    async def renew_session_lock(self, session_id: str) -> datetime:
        """Renew a session lock held on this client's connection (renew-session-lock).

        The service renews only a session locked by a receiver link of the requesting connection,
        named in the request; this method names no link, so the service refuses it (410): use the
        session lock of [session][sbmgmt.aio.AsyncEntityClient.session] instead, ``async with
        q.session(id) as s: await s.renew_lock()``.

        Args:
            session_id: The session's id (1 to 128 characters).

        Returns:
            The lock's new expiry (UTC).

        Raises:
            ValueError: ``session_id`` is empty or longer than 128 characters (pydantic's
                ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.SessionLockLostError: The request names no receiver link holding the
                session (410): use ``q.session(id)``.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._run(renew_session_lock_call(session_id))

    async def get_session_state(self, session_id: str) -> bytes | None:
        """Get a session's state (get-session-state).

        The service answers only for a session locked by a receiver link of the requesting
        connection, named in the request; this method names no link, so the service refuses it
        with 410, [SessionLockLostError][sbmgmt.errors.SessionLockLostError], even while this
        client holds the session. Lock the session with
        [session][sbmgmt.aio.AsyncEntityClient.session] and ask through its lock: ``async with
        q.session(id) as s: state = await s.get_state()``.

        Args:
            session_id: The session's id (1 to 128 characters).

        Returns:
            The state's bytes, or None when the session has no state.

        Raises:
            ValueError: ``session_id`` is empty or longer than 128 characters (pydantic's
                ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.SessionLockLostError: The request names no receiver link holding the
                session (410): use ``q.session(id)``.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._run(get_session_state_call(session_id))

    async def set_session_state(self, session_id: str, state: bytes | None) -> None:
        """Set or clear a session's state (set-session-state).

        As for [get_session_state][sbmgmt.aio.AsyncEntityClient.get_session_state], the service
        refuses it (410) unless the request names the receiver link that holds the session, which
        this method does not: use ``async with q.session(id) as s: await s.set_state(b"...")``.

        Args:
            session_id: The session's id (1 to 128 characters).
            state: The new state; None clears it.

        Raises:
            ValueError: ``session_id`` is empty or too long, or ``state`` is not bytes
                (pydantic's ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.SessionLockLostError: The request names no receiver link holding the
                session (410): use ``q.session(id)``.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        await self._run(set_session_state_call(session_id, state))

    def session(self, session_id: str) -> AsyncSessionLock:
        """Lock a session for this client: ``async with q.session("s1") as s: await s.get_state()``.

        The service answers session requests only for a session locked by a receiver link of the
        same connection. Entering the block attaches such a link on the client's connection (it
        receives nothing) and waits for the lock; leaving it releases the lock. Nothing is sent
        before the block is entered.

        Args:
            session_id: The session's id (1 to 128 characters).

        Returns:
            The session's lock, to use in a ``async with`` block:
                [AsyncSessionLock][sbmgmt.AsyncSessionLock].

        Raises:
            ValueError: ``session_id`` is empty or longer than 128 characters.
        """
        return AsyncSessionLock(self._core, self.path, session_id)

    async def list_sessions(
        self, last_updated_time: datetime | None = None, skip: int = 0, top: int = 100
    ) -> list[str]:
        """List the ids of an entity's sessions (get-message-sessions).

        Args:
            last_updated_time: Only sessions updated after this time (a naive datetime is taken
                as UTC); None: every session, whether it has state or not.
            skip: How many ids to skip (paging, 0 or more).
            top: The most ids to return (1 or more).

        Returns:
            Up to ``top`` session ids; an empty list past the end.

        Raises:
            TypeError: ``last_updated_time`` is not a datetime.
            ValueError: ``skip`` or ``top`` is out of range (pydantic's ``ValidationError``, a
                ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._run(list_sessions_call(last_updated_time, skip, top))

    async def add_rule(
        self, name: str, filter: RuleFilter, action: SqlRuleAction | None = None
    ) -> None:
        """Add a rule to a subscription (add-rule); ``q`` must be ``topic/Subscriptions/sub``.

        Args:
            name: The rule's name, unique in the subscription.
            filter: Which messages the rule lets through: a [SqlFilter][sbmgmt.SqlFilter], a
                [CorrelationFilter][sbmgmt.CorrelationFilter], [TrueFilter][sbmgmt.TrueFilter] or
                [FalseFilter][sbmgmt.FalseFilter].
            action: A [SqlRuleAction][sbmgmt.SqlRuleAction] that modifies the messages the rule
                lets through; None: none.

        Raises:
            ValueError: ``name`` is empty, or ``filter`` is not a filter (pydantic's
                ``ValidationError``, a ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.ConflictError: The subscription has a rule of that name (409).
            sbmgmt.errors.BadRequestError: The service refused the filter or action (400).
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
            sbmgmt.errors.TransportError: No reply came (the request is not idempotent): the
                error's ``may_have_been_applied`` says whether the service may have applied it,
                as this operation is not replayed after a lost connection.
        """
        await self._run(add_rule_call(name, filter, action))

    async def remove_rule(self, name: str) -> None:
        """Remove a subscription rule by name (remove-rule).

        Args:
            name: The rule's name (``"$Default"`` for the rule a subscription is created with).

        Raises:
            ValueError: ``name`` is empty (pydantic's ``ValidationError``, a ``ValueError``,
                names it); nothing is sent.
            sbmgmt.errors.NotFoundError: The subscription has no rule of that name.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        await self._run(remove_rule_call(name))

    async def list_rules(self, skip: int = 0, top: int = 100) -> list[RuleDescription]:
        """List a page of a subscription's rules (enumerate-rules).

        Args:
            skip: How many rules to skip (paging, 0 or more).
            top: The most rules to return (1 or more).

        Returns:
            Up to ``top`` rules, each with its filter, action and creation time.

        Raises:
            ValueError: ``skip`` or ``top`` is out of range (pydantic's ``ValidationError``, a
                ``ValueError``, names it); nothing is sent.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the credential lacks the
                right; [ServerBusyError][sbmgmt.errors.ServerBusyError] once retries ran out).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]), the timeout passed
                ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]), or the client is
                closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._run(list_rules_call(skip, top))

    # ---- message links (issue 37: resubmit / move) -------------------------------------

    def sender(self, *, via: str | None = None) -> AsyncMessageSender:
        """A sender of messages to this entity: ``with q.sender() as s: s.send_messages(...)``.

        With ``via``, the sender attaches to that entity and the service forwards what it takes
        to this one (send-via: the AMQP attach property
        ``com.microsoft:transfer-destination-address``); a transaction acting on the via entity
        (completing messages received from it) then covers the send too, and the destination
        gets the messages only if it commits (docs/dead-letters.md, "What is guaranteed").
        Nothing is sent before the block is entered.

        Args:
            via: The entity path to send through, or None to send to this entity directly.

        Returns:
            The sender, to use in a ``async with`` block:
            [AsyncMessageSender][sbmgmt.AsyncMessageSender].

        Raises nothing: entering the block raises what the attach meets (the sender's class
        says what).
        """
        return AsyncMessageSender(self._core, sender_link(self.path, via))

    def receiver(self, *, prefetch: int = 0) -> AsyncMessageReceiver:
        """A peek-lock receiver of this entity's messages: ``with q.receiver() as r:``.

        Each message received is locked for the receiver's link until it is completed or
        abandoned there, its lock expires, or the link ends. Nothing is sent before the block is
        entered.

        Args:
            prefetch: Messages to ask for ahead of the receives (0 to 5,000): they arrive locked
                for this receiver while the caller works; what no receive took when the block
                ends is released (no delivery counted).

        Returns:
            The receiver, to use in a ``async with`` block:
            [AsyncMessageReceiver][sbmgmt.AsyncMessageReceiver].

        Raises:
            ValueError: ``prefetch`` is out of range.
        """
        return AsyncMessageReceiver(self._core, receiver_link(self.path, prefetch))

    async def delete_messages(self, max_count: int, *, before: datetime | None = None,
                        session_id: str | None = None) -> int:
        """Delete up to ``max_count`` of the oldest messages (batch-delete-messages).

        One request: the service deletes the oldest messages (by enqueued time) that are not
        locked, only those enqueued before ``before``, and says how many; it may delete
        fewer than asked while more are there ("best effort"). Deferred and scheduled
        messages are not deleted on the fake (docs/fake.md, "Batch delete"). Not retried
        after an uncertain outcome: a batch delete is not idempotent.

        Args:
            max_count: The most messages to delete, 1 or more; the service refuses more than
                its quota (500 on Standard, 4,000 on Premium).
            before: Only messages enqueued before this time (naive: UTC); None: now.
            session_id: Only this session's messages (a session entity); None: the entity's.

        Returns:
            How many messages were deleted (0 when none was eligible).

        Raises:
            TypeError: ``before`` is not a datetime, or ``max_count`` not an int; nothing is
                sent.
            ValueError: ``max_count`` below 1 (or above 2**31 - 1), or an empty
                ``session_id``; nothing is sent.
            sbmgmt.errors.OperationError: The service refused the request; the subclass says why
                (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity;
                [BadRequestError][sbmgmt.errors.BadRequestError]: ``max_count`` above the
                service's quota; [UnauthorizedError][sbmgmt.errors.UnauthorizedError]: the
                credential lacks the right).
            sbmgmt.errors.TransportError: No reply came: the connection was lost
                ([ConnectionLostError][sbmgmt.errors.ConnectionLostError]; its
                ``may_have_been_applied`` says whether messages may have been deleted), the
                timeout passed ([OperationTimeoutError][sbmgmt.errors.OperationTimeoutError]),
                or the client is closed ([ClientClosedError][sbmgmt.errors.ClientClosedError]).
        """
        return await self._run(delete_messages_call(max_count, before, session_id))

    async def purge_messages(
        self, *, before: datetime | None = None, session_id: str | None = None,
        max_count: int | None = None, batch_size: int | None = None,
        in_flight: int | None = None, on_progress: Callable[[int], None] | None = None,
        cancel: threading.Event | asyncio.Event | None = None,
        requests_in_flight: int | None = None,
    ) -> int:
        """Delete every message enqueued before a cutoff (batch deletes until one deletes
        nothing).

        The cutoff is fixed when the purge starts, so messages sent meanwhile stay.
        ``in_flight`` batch deletes of ``batch_size`` are kept on the wire once the first
        came back full, so a purge does not wait a round trip per batch. Locked
        messages stay (and, on the fake, deferred and scheduled ones). See
        docs/performance.md's purge figures and the theory in ``sbmgmt/_client/purger.py``.

        Args:
            before: Delete messages enqueued before this time (naive: UTC); None: the moment
                the purge starts.
            session_id: Only this session's messages (a session entity); None: the entity's.
            max_count: Delete at most this many (1 or more); None: all.
            batch_size: Messages per request, 1 or more; None: 500 (the Standard tier's
                quota; on Premium up to 4,000).
            in_flight: The most requests on the wire at once, 1 or more; None: 32.
            on_progress: Called with the count ONE reply deleted (a delta, not a running
                total), as the replies come. ([sbmgmt.actions.purge][sbmgmt.actions.purge]
                tells a running total instead, as every long action does.)
            cancel: Polled (its ``is_set()``) while the purge runs: a ``threading.Event``
                (or, on the asyncio client, an ``asyncio.Event``). Once set, no request is
                sent, the ones in flight are awaited, and
                [PurgeCancelledError][sbmgmt.errors.PurgeCancelledError] is raised.
            requests_in_flight: Deprecated: ``in_flight``'s old name (a
                ``DeprecationWarning``; removed in the next release).

        Returns:
            How many messages were deleted.

        Raises:
            TypeError: An argument of the wrong type; nothing is sent.
            ValueError: ``max_count``, ``batch_size`` or ``in_flight`` below 1; nothing is
                sent.
            sbmgmt.errors.PurgeError: A request failed (the refusal or the lost connection is
                its ``error`` and ``__cause__``): ``deleted`` counts what was deleted before,
                ``uncertain_requests`` the requests whose replies were lost. Nothing was
                deleted twice; run the purge again to finish.
            sbmgmt.errors.PurgeCancelledError: ``cancel`` was set; ``deleted`` counts what was
                deleted.
        """
        pipeline, cutoff = start(before, max_count, batch_size, in_flight, requests_in_flight)
        return await purge_async(self.submit, pipeline, cutoff, session_id,
                                 on_progress=on_progress, cancel=cancel)


class AsyncManagementClient(ClientBase):
    """The asyncio client: the operations of [ManagementClient][sbmgmt.ManagementClient] as
    coroutines.

    ``async with AsyncManagementClient.from_connection_string(conn_str) as client:``. Its engine
    runs on the event loop it is first used from (it may be made outside any loop); see
    docs/threading.md for calls from other threads and other loops.

    Args:
        fully_qualified_namespace: The namespace's host name, ``<name>.servicebus.windows.net``
            (an ``sb://`` or ``amqps://`` prefix and a trailing slash are dropped).
        credential: An ``AzureNamedKeyCredential`` or ``AzureSasCredential`` (azure-core), a
            ``TokenCredential`` such as ``DefaultAzureCredential`` (azure-identity), or an
            ``sbmgmt.auth.TokenProvider`` (docs/auth.md).
        timeout: Seconds each call may take, retries included (unless ``retry.deadline`` says
            otherwise).
        window: The most requests in flight per entity (1 or more); more wait their turn.
        retry: How failed calls are retried; None: a default [RetryPolicy][sbmgmt.RetryPolicy] (5
            attempts, exponential backoff).

    Raises:
        TypeError: ``credential`` is not a credential, or ``timeout`` or ``window`` is not a
            number.
        ValueError: ``fully_qualified_namespace`` is empty, or ``timeout`` or ``window`` is out
            of range (``timeout`` must be positive and fit the protocol's 32-bit count of
            milliseconds).
    """

    _driver: ClassVar[DriverFactory] = EventLoopIO

    def entity(self, path: str) -> AsyncEntityClient:
        """The operations on one entity: a queue, a subscription or a dead-letter queue.

        Nothing is sent until an operation is called.

        Args:
            path: The entity path: ``"myqueue"``, ``"topic/Subscriptions/sub"``,
                ``"myqueue/$DeadLetterQueue"`` (surrounding slashes are dropped).

        Returns:
            The entity's client: [AsyncEntityClient][sbmgmt.aio.AsyncEntityClient].

        Raises:
            TypeError: ``path`` is not a string.
            ValueError: ``path`` is empty.
        """
        return AsyncEntityClient(self._core, path)

    def transaction(self) -> AsyncTransaction:
        """A transaction on this client's connection (docs/transactions.md).

        ``async with client.transaction() as txn:`` declares it; pass ``transaction=txn`` to
        ``schedule_messages`` or ``update_disposition``. The block's end commits it, or rolls it
        back when the block raises.

        Returns:
            The transaction, to use in a ``async with`` block:
                [AsyncTransaction][sbmgmt.aio.AsyncTransaction].
        """
        core = self._core
        return AsyncTransaction(core, core.io.submit_control, core.timeout)

    async def close(self) -> None:
        """Close the connection; pending requests fail with
        [ClientClosedError][sbmgmt.errors.ClientClosedError].

        Leaving the ``async with`` block does this. Closing twice does nothing.
        """
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
    """The asyncio twin of [Transaction][sbmgmt.Transaction].

    Made by [AsyncManagementClient.transaction][sbmgmt.aio.AsyncManagementClient.transaction]:
    ``async with client.transaction() as txn:`` declares it; ``await txn.commit()`` or ``await
    txn.rollback()`` end it earlier.
    """

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
        """Commit: everything done in the transaction is applied, at once.

        Raises:
            sbmgmt.errors.TransactionRolledBackError: The service rolled it back instead.
            sbmgmt.errors.TransactionTimeoutError: It was open too long and was rolled back.
            sbmgmt.errors.TransactionOutcomeUnknownError: The connection was lost before the
                outcome came: it may or may not have committed.
            sbmgmt.errors.TransactionLostError: The connection was lost before the commit was
                sent: nothing was committed.
            sbmgmt.errors.OperationTimeoutError: No outcome came within the client's timeout.
            ValueError: The transaction is not active (not declared yet, or already ended).
        """
        await self._finish(self._discharge(False))

    async def rollback(self) -> None:
        """Roll back: nothing done in the transaction is applied.

        Raises:
            sbmgmt.errors.TransactionError: The coordinator refused the rollback, or the
                connection was lost (nothing is applied either way: the service rolls back a
                transaction that is not committed).
            sbmgmt.errors.OperationTimeoutError: No outcome came within the client's timeout.
            ValueError: The transaction is not active (not declared yet, or already ended).
        """
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
