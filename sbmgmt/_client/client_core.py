"""What the sync and asyncio clients share: the settings, the driver, and how a request
becomes a future and a call becomes its result.

Theory of operation
-------------------
:class:`ClientCore` owns one I/O driver, the one its client picks (``driver``): an
:class:`~sbmgmt._drivers.io_thread.IOThread` for ``ManagementClient``, an
:class:`~sbmgmt._drivers.event_loop.EventLoopIO` (the engine on the running event loop) for
``AsyncManagementClient``. :meth:`ClientCore.submit` encodes a
request on the caller's side and hands it to the driver with the future its result
goes to; the engine resolves that future when the reply is in.

The calls people make wait for that future as cheaply as their kind of caller can:

- :meth:`ClientCore.call` (a blocking method, any thread) waits on a
  :class:`~sbmgmt._drivers.waiter.Waiter`: one pre-acquired lock the engine releases, the least
  a thread hand-over costs (the I/O thread releases the ones it resolved in a round
  together, before it waits again);
- :meth:`ClientCore.call_async` (a coroutine) awaits an ``asyncio.Future`` of its own
  event loop, resolved in the engine's turn on that loop, with no thread hop; only
  when the engine runs on another thread does it await a ``concurrent.futures.Future``.

Both run the first attempt directly and hand over to the retry policy (tenacity) only
when it fails with an error worth retrying (:meth:`~sbmgmt._protocol.retry.RetryPolicy.after`),
so a call that succeeds costs no retry machinery, and an awaited call awaits the
request's future itself (no coroutine frames between).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from concurrent.futures import Future, wait
from functools import partial
from typing import Any, Protocol, TypeVar

from .._drivers.waiter import Waiter
from .._engine.connection import Endpoint
from .._engine.coordinator_link import Control
from .._engine.message_links import LinkWork
from .._engine.session_links import SessionAttach
from .._protocol.dispatcher import DispatcherStats, Outcome, PendingRequest, server_timeout_ms
from .._protocol.retry import OnRetry, RetryPolicy
from .._protocol.tokens import TokenSource
from ..auth import (
    audience_for,
    parse_connection_string,
    token_provider_for,
    token_provider_from_connection_string,
)
from ..errors import OperationTimeoutError, ProtocolError
from ..ops import decode_reply, encode_request, module_of
from ..ops._base import OpModel, OpRequest, TransactionalRequest
from ..telemetry import current as telemetry
from .argument_checks import connection_string, entity_path_text, timeout_seconds, window_size

__all__ = [
    "ClientCore",
    "Driver",
    "connection_string_endpoint",
    "endpoint_and_tokens",
    "entity_path",
]

R = TypeVar("R")
Resp = TypeVar("Resp", bound=OpModel)

_AMQPS_PORT = 5671
# Past this much beyond its own deadline, a wait means the I/O driver is gone.
_WAIT_GRACE = 10.0


class Driver(Protocol):
    """What runs the engine for a client: :class:`~sbmgmt._drivers.io_thread.IOThread` or
    :class:`~sbmgmt._drivers.event_loop.EventLoopIO`."""

    name: str

    @property
    def closed(self) -> bool: ...

    def loop_future(self) -> asyncio.Future[Any] | None: ...

    def waiter(self) -> Waiter: ...

    def submit(self, entity: str, request: PendingRequest | SessionAttach | LinkWork) -> None: ...

    def submit_control(self, control: Control) -> None: ...

    def stats(self) -> DispatcherStats: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


class DriverFactory(Protocol):
    def __call__(self, endpoint: Endpoint, tokens: TokenSource, *,
                 audience_for: Any, reply_to_for: Any, window: int) -> Driver: ...


class ClientCore:
    """The I/O driver, the settings, and how one request becomes a future."""

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        *,
        timeout: float,
        window: int,
        retry: RetryPolicy | None,
        driver: DriverFactory,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout_seconds(timeout)
        window = window_size(window)
        self.retry = retry if retry is not None else RetryPolicy()
        self._client_id = uuid.uuid4()
        self.io: Driver = driver(
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
        associated_link_name: str | None = None, future: Outcome[Resp] | None = None,
    ) -> Outcome[Resp]:
        """Send one request (no retry); ``future`` (a new ``concurrent.futures.Future``
        if None) resolves to its Response.

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
            decode=partial(decode_reply, request),
            transaction=None if transaction is None else transaction.state,
            future=Future() if future is None else future,
        )
        self.io.submit(entity, pending)
        return pending.future

    def submit_future(
        self, entity: str, request: OpRequest[Resp], timeout: float,
        associated_link_name: str | None = None,
    ) -> Future[Resp]:
        """:meth:`submit` with a ``concurrent.futures.Future`` (the public ``submit``)."""
        future: Future[Resp] = Future()
        observed = telemetry()
        if observed is None:
            self.submit(entity, request, timeout, associated_link_name, future)
            return future
        operation = observed.operation(self.endpoint, entity, request)
        try:
            self.submit(entity, operation.request, timeout,  # type: ignore[arg-type]
                        associated_link_name, future)
        except BaseException as error:
            operation.end(error)
            raise
        operation.end_with(future)
        return future

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
        observed = telemetry()
        if observed is not None:
            response: Resp = observed.call(self._call, self.endpoint, entity, request,
                                           associated_link_name, timeout)
            return response
        return self._call(entity, request, associated_link_name, timeout, None)

    def _call(self, entity: str, request: OpRequest[Resp], associated_link_name: str | None,
              timeout: float | None, on_retry: OnRetry | None) -> Resp:
        attempt = partial(ClientCore._attempt, self, entity, request, associated_link_name)
        timeout = self.timeout if timeout is None else timeout_seconds(timeout)
        if self.transactional(request):
            return attempt(timeout)
        return self.retry.run(attempt, idempotent=self.idempotent(request), timeout=timeout,
                              on_retry=on_retry)

    async def call_async(
        self, entity: str, request: OpRequest[Resp], associated_link_name: str | None = None,
        timeout: float | None = None,
    ) -> Resp:
        """:meth:`call` on the event loop: the same retries, each attempt awaited."""
        observed = telemetry()
        if observed is not None:
            response: Resp = await observed.call_async(
                self._call_async, self.endpoint, entity, request, associated_link_name, timeout)
            return response
        return await self._call_async(entity, request, associated_link_name, timeout, None)

    def _call_async(self, entity: str, request: OpRequest[Resp],
                    associated_link_name: str | None, timeout: float | None,
                    on_retry: OnRetry | None) -> Awaitable[Resp]:
        """What :meth:`call_async` awaits: the request's own future when it is sent once
        (no coroutine frame between), else the retry policy's coroutine."""
        attempt = partial(ClientCore._attempt_async, self, entity, request, associated_link_name)
        timeout = self.timeout if timeout is None else timeout_seconds(timeout)
        if self.transactional(request):
            return attempt(timeout)
        return self.retry.run_async(attempt, idempotent=self.idempotent(request),
                                    timeout=timeout, on_retry=on_retry)

    # An attempt is a method with its arguments bound by ``partial``, not a closure: a
    # call in flight holds one object for it instead of a function and a cell per
    # variable, which the garbage collector walks while thousands are in flight.

    def _attempt(self, entity: str, request: OpRequest[Resp],
                 associated_link_name: str | None, timeout: float) -> Resp:
        """One attempt of :meth:`call`: submit, then block until the outcome."""
        waiter = self.io.waiter()
        self.submit(entity, request, timeout, associated_link_name, waiter)
        response: Resp = waiter.result(request.OPERATION, timeout + _WAIT_GRACE)
        return response

    def _attempt_async(self, entity: str, request: OpRequest[Resp],
                       associated_link_name: str | None, timeout: float) -> Awaitable[Resp]:
        """One attempt of :meth:`call_async`: what to await for the outcome."""
        future = self.io.loop_future()
        if future is None:  # the engine runs on another thread
            return asyncio.wrap_future(
                self.submit_future(entity, request, timeout, associated_link_name))
        self.submit(entity, request, timeout, associated_link_name, future)
        return future

    def stats(self) -> DispatcherStats:
        return self.io.stats()

    def close(self) -> None:
        self.io.close()

    async def aclose(self) -> None:
        await self.io.aclose()


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
