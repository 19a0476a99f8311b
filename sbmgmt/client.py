"""The synchronous client: :class:`ManagementClient` and its :class:`EntityClient`.

``client.entity(path)`` gives an :class:`EntityClient` for any entity path (a queue,
``topic/Subscriptions/sub``, ``queue/$DeadLetterQueue``). Its methods turn friendly
arguments into an operation's ``Request`` (validated before anything is sent),
send it through the client's I/O thread with retries, and turn the ``Response``
into plain values. Any thread may call any method; requests from all threads are
pipelined on one connection. :mod:`sbmgmt.aio` shares everything here except the
waiting.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, wait
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar

from ._dispatcher import DEFAULT_WINDOW, DispatcherStats, PendingRequest, server_timeout_ms
from ._io import Endpoint, IOThread, TokenSource
from ._retry import RetryPolicy
from ._session import SessionLock
from ._transaction import TransactionBase
from ._validate import (
    connection_string,
    datetime_argument,
    encodable_properties,
    entity_path_text,
    message_list,
    timeout_seconds,
    window_size,
)
from .amqp.envelope import decode_reply, encode_request
from .auth import (
    audience_for,
    parse_connection_string,
    token_provider_for,
    token_provider_from_connection_string,
)
from .errors import OperationTimeoutError, ProtocolError
from .message import Message, ReceivedMessage
from .ops import (
    add_rule,
    cancel_scheduled_message,
    enumerate_rules,
    get_message_sessions,
    get_session_state,
    module_of,
    peek_message,
    receive_by_sequence_number,
    remove_rule,
    renew_lock,
    renew_session_lock,
    schedule_message,
    set_session_state,
    update_disposition,
)
from .ops._base import OpModel, OpRequest, TransactionalRequest
from .ops.get_message_sessions import ALL_SESSIONS
from .ops.receive_by_sequence_number import ReceiverSettleMode
from .ops.update_disposition import DispositionStatus
from .rules import RuleDescription, RuleFilter, SqlRuleAction

__all__ = ["DispositionStatus", "EntityClient", "ManagementClient", "SettleMode", "Transaction"]

R = TypeVar("R")
#: The Response type of a request.
Resp = TypeVar("Resp", bound=OpModel)

SettleMode = Literal["peek_lock", "receive_and_delete"]

_AMQPS_PORT = 5671
# Past this much beyond its own deadline, a wait means the I/O thread is gone.
_WAIT_GRACE = 10.0


# ---- the core shared by the sync and asyncio clients ---------------------------------


class ClientCore:
    """The I/O thread, the settings, and how one request becomes a future."""

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        *,
        timeout: float,
        window: int,
        retry: RetryPolicy | None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout_seconds(timeout)
        window = window_size(window)
        self.retry = retry if retry is not None else RetryPolicy()
        self._client_id = uuid.uuid4()
        self.io = IOThread(
            endpoint,
            tokens,
            audience_for=lambda entity: audience_for(endpoint.host, entity),
            reply_to_for=self.reply_to,
            window=window,
        )

    def reply_to(self, entity: str) -> str:
        """The ``reply-to`` of this client's requests to ``entity`` (unique per client)."""
        return f"{entity}/$management/sbmgmt-reply-{self._client_id}"

    def submit(
        self, entity: str, request: OpRequest[Resp], timeout: float,
        associated_link_name: str | None = None,
    ) -> Future[Resp]:
        """Send one request (no retry); the future resolves to its Response.

        ``associated_link_name``: the receiver link (of this connection) the request is
        about, as session requests must name the link holding the session.
        """
        transaction = request.transaction if isinstance(request, TransactionalRequest) else None
        if transaction is not None:
            if transaction.owner is not self:
                raise ValueError("transaction: it belongs to another client; a transaction is "
                                 "valid only on the connection that declared it")
            transaction.check_usable(request.OPERATION)
        message_id = uuid.uuid4()
        try:
            message = encode_request(
                request,
                message_id=message_id,
                reply_to=self.reply_to(entity),
                server_timeout_ms=server_timeout_ms(timeout_seconds(timeout)),
                associated_link_name=associated_link_name,
            )
        except ProtocolError as exc:  # the caller's values, not a reply: bad input
            raise TypeError(f"{request.OPERATION}: {exc}") from None
        pending: PendingRequest[Resp] = PendingRequest(
            key=str(message_id),
            operation=request.OPERATION,
            idempotent=request.IDEMPOTENT,
            payload=message.payload,
            timeout=timeout,
            decode=lambda reply: decode_reply(request, reply),
            transaction=None if transaction is None else transaction.state,
        )
        self.io.submit(entity, pending)
        return pending.future

    @staticmethod
    def idempotent(request: OpRequest[Resp]) -> bool:
        """Whether a lost request may be sent again; TypeError for what is not a request."""
        module_of(request)
        return request.IDEMPOTENT

    @staticmethod
    def transactional(request: OpRequest[Resp]) -> bool:
        """Whether the request joins a transaction: such a request is sent once, never
        retried (as the SDKs do: a transaction's work is not replayed)."""
        return isinstance(request, TransactionalRequest) and request.transaction is not None

    def result(self, future: Future[R], operation: str, timeout: float) -> R:
        """Wait for ``future`` (past its own deadline, the I/O thread is gone)."""
        if not wait((future,), timeout + _WAIT_GRACE).done:
            future.cancel()
            raise OperationTimeoutError(
                f"{operation}: no outcome from the I/O thread", operation=operation
            )
        return future.result()

    def call(
        self, entity: str, request: OpRequest[Resp], associated_link_name: str | None = None,
        timeout: float | None = None,
    ) -> Resp:
        """Send a request with retries and wait for its Response (within ``timeout``,
        retries included; None: the client's)."""

        def attempt(timeout: float) -> Resp:
            future = self.submit(entity, request, timeout, associated_link_name)
            return self.result(future, request.OPERATION, timeout)

        if self.transactional(request):
            return attempt(timeout or self.timeout)
        return self.retry.run(attempt, idempotent=self.idempotent(request),
                              timeout=timeout or self.timeout)

    async def call_async(
        self, entity: str, request: OpRequest[Resp], associated_link_name: str | None = None,
        timeout: float | None = None,
    ) -> Resp:
        """:meth:`call` on the event loop: the same retries, each attempt awaited."""

        async def attempt(timeout: float) -> Resp:
            return await asyncio.wrap_future(
                self.submit(entity, request, timeout, associated_link_name))

        if self.transactional(request):
            return await attempt(timeout or self.timeout)
        return await self.retry.run_async(
            attempt, idempotent=self.idempotent(request), timeout=timeout or self.timeout
        )

    def stats(self) -> DispatcherStats:
        return self.io.stats()

    def close(self) -> None:
        self.io.close()


def endpoint_and_tokens(
    fully_qualified_namespace: str, credential: object
) -> tuple[Endpoint, TokenSource]:
    """The TLS endpoint and token source for a namespace name and a credential."""
    host = fully_qualified_namespace.strip()
    for prefix in ("sb://", "amqps://"):
        if host.startswith(prefix):
            host = host[len(prefix):]
    host = host.rstrip("/")
    if not host:
        raise ValueError("fully_qualified_namespace is empty")
    return Endpoint(host, _AMQPS_PORT, tls=True), token_provider_for(credential)


def connection_string_endpoint(conn_str: str) -> tuple[Endpoint, TokenSource]:
    """The endpoint (TLS, or plain for an emulator) and token source of a connection string."""
    parsed = parse_connection_string(connection_string(conn_str))
    address = parsed.amqp_address()
    endpoint = Endpoint(address.host, address.port, tls=address.use_tls)
    return endpoint, token_provider_from_connection_string(parsed)


def entity_path(path: str) -> str:
    """An entity path without surrounding slashes; empty is a ValueError."""
    cleaned = entity_path_text(path).strip().strip("/")
    if not cleaned:
        raise ValueError("entity path is empty")
    return cleaned


# ---- arguments -> Request, Response -> result (one place, for both clients) ----------


@dataclass(frozen=True, slots=True)
class Call(Generic[Resp, R]):
    """A validated request and how to turn its Response into the method's result."""

    request: OpRequest[Resp]
    result: Callable[[Resp], R]


def _none(response: OpModel) -> None:
    return None


def peek_call(
    from_sequence_number: int, max_count: int, session_id: str | None
) -> Call[peek_message.Response, list[ReceivedMessage]]:
    return Call(
        peek_message.Request(
            from_sequence_number=from_sequence_number,
            message_count=max_count,
            session_id=session_id,
        ),
        lambda r: list(r.messages),
    )


def renew_locks_call(
    lock_tokens: Iterable[uuid.UUID | str],
) -> Call[renew_lock.Response, list[datetime]]:
    return Call(
        # pydantic turns str tokens into UUIDs, and names the bad one (lock_tokens.3)
        renew_lock.Request.model_validate({"lock_tokens": tuple(lock_tokens)}),
        lambda r: list(r.expirations),
    )


def schedule_call(
    messages: Iterable[Message],
    scheduled_enqueue_time: datetime,
    transaction: TransactionBase | None = None,
) -> Call[schedule_message.Response, list[int]]:
    when = datetime_argument(scheduled_enqueue_time, "scheduled_enqueue_time")
    prepared = tuple(
        message.model_copy(update={
            "message_id": message.message_id or str(uuid.uuid4()),
            "scheduled_enqueue_time": when,
        })
        for message in message_list(messages)
    )
    return Call(
        schedule_message.Request(messages=prepared, transaction=transaction),
        lambda r: list(r.sequence_numbers),
    )


def cancel_scheduled_call(
    sequence_numbers: Iterable[int],
) -> Call[cancel_scheduled_message.Response, None]:
    return Call(
        cancel_scheduled_message.Request(sequence_numbers=tuple(sequence_numbers)), _none
    )


_SETTLE_MODES: Mapping[str, ReceiverSettleMode] = {
    "peek_lock": ReceiverSettleMode.PEEK_LOCK,
    "receive_and_delete": ReceiverSettleMode.RECEIVE_AND_DELETE,
}


def receive_deferred_call(
    sequence_numbers: Iterable[int], settle_mode: str, session_id: str | None
) -> Call[receive_by_sequence_number.Response, list[ReceivedMessage]]:
    mode = _SETTLE_MODES.get(settle_mode)
    if mode is None:
        raise ValueError(
            f"settle_mode must be 'peek_lock' or 'receive_and_delete', got {settle_mode!r}"
        )
    return Call(
        receive_by_sequence_number.Request(
            sequence_numbers=tuple(sequence_numbers),
            receiver_settle_mode=mode,
            session_id=session_id,
        ),
        lambda r: list(r.messages),
    )


def update_disposition_call(
    lock_tokens: Iterable[uuid.UUID | str],
    status: DispositionStatus | str,
    dead_letter_reason: str | None,
    dead_letter_description: str | None,
    properties_to_modify: Mapping[str, Any] | None,
    session_id: str | None,
    transaction: TransactionBase | None = None,
) -> Call[update_disposition.Response, None]:
    encodable_properties(properties_to_modify, "properties_to_modify")
    return Call(
        # pydantic converts a str status and str tokens, and names a bad one
        update_disposition.Request.model_validate({
            "disposition_status": status,
            "lock_tokens": tuple(lock_tokens),
            "dead_letter_reason": dead_letter_reason,
            "dead_letter_description": dead_letter_description,
            "properties_to_modify": properties_to_modify,
            "session_id": session_id,
            "transaction": transaction,
        }),
        _none,
    )


def renew_session_lock_call(session_id: str) -> Call[renew_session_lock.Response, datetime]:
    return Call(
        renew_session_lock.Request(session_id=session_id), lambda r: r.expiration
    )


def get_session_state_call(session_id: str) -> Call[get_session_state.Response, bytes | None]:
    return Call(
        get_session_state.Request(session_id=session_id), lambda r: r.session_state
    )


def set_session_state_call(
    session_id: str, state: bytes | None
) -> Call[set_session_state.Response, None]:
    return Call(
        set_session_state.Request(session_id=session_id, session_state=state), _none
    )


def list_sessions_call(
    last_updated_time: datetime | None, skip: int, top: int
) -> Call[get_message_sessions.Response, list[str]]:
    return Call(
        get_message_sessions.Request(
            last_updated_time=ALL_SESSIONS if last_updated_time is None
            else datetime_argument(last_updated_time, "last_updated_time"),
            skip=skip,
            top=top,
        ),
        lambda r: list(r.session_ids),
    )


def add_rule_call(
    name: str, rule_filter: RuleFilter, action: SqlRuleAction | None
) -> Call[add_rule.Response, None]:
    return Call(
        add_rule.Request(rule_name=name, filter=rule_filter, action=action), _none
    )


def remove_rule_call(name: str) -> Call[remove_rule.Response, None]:
    return Call(remove_rule.Request(rule_name=name), _none)


def list_rules_call(skip: int, top: int) -> Call[enumerate_rules.Response, list[RuleDescription]]:
    return Call(enumerate_rules.Request(skip=skip, top=top), lambda r: list(r.rules))


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
        return self._core.submit(self.path, request,
                                 self._core.timeout if timeout is None else timeout)

    def peek_messages(
        self, from_sequence_number: int = 1, max_count: int = 10, session_id: str | None = None
    ) -> list[ReceivedMessage]:
        """Browse up to ``max_count`` messages from ``from_sequence_number`` without locking."""
        return self._run(peek_call(from_sequence_number, max_count, session_id))

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
        self._core = ClientCore(endpoint, tokens, timeout=timeout, window=window, retry=retry)

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
        client._core = ClientCore(endpoint, tokens, timeout=timeout, window=window, retry=retry)
        return client

    def __repr__(self) -> str:
        return f"{type(self).__name__}(host={self._core.endpoint.host!r})"

    @property
    def stats(self) -> DispatcherStats:
        """Request counters summed over the client's entities (``max_in_flight`` included)."""
        return self._core.stats()

    @property
    def io_thread_name(self) -> str:
        """The name of the client's I/O thread."""
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
        """Fail pending requests with ClientClosedError and stop the I/O thread."""
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
