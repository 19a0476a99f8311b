"""``MockManagementNode``: registered replies and recorded calls for ``<entity>/$management``.

Theory of operation
-------------------
The mock answers through the fake namespace's AMQP server (:class:`fakes._server.Server`),
with the mock in place of its management node: the server does the AMQP work (SASL,
``$cbs`` put-token, link routing, reply links, settlement) exactly as for the fake, and
hands each request to :class:`_Node`, which decodes it with the operation's own
``decode_request`` (a malformed request gets the service's 400, as from the fake),
records it in :attr:`MockManagementNode.calls`, asks the registry which registration
answers it, and lets that registration's outcome reply (or close the connection,
detach the link, or stay silent). A request no registration matches, or whose
callback fails, has its delivery rejected with a description that lists what was
registered (the client raises ProtocolError at once) and is kept for :meth:`verify`.

Two servers, started when first needed, share the registry, the calls and an
entity store in which every entity exists:

- in-process: :meth:`MockManagementNode.connect` stands in for
  ``sbmgmt.transport.proton_loop.ProtonLoop.connect`` (the sync and the asyncio client alike);
  each client connection runs over an in-memory
  pipe (:mod:`sbmgmt.testing._transport`) served by a server with no listening socket.
  :meth:`intercept` (``with mock:``, the ``sbmgmt_mock`` fixture) installs it.
- over AMQP: :meth:`MockManagementNode.serve` starts a server on ``127.0.0.1`` (port 0)
  and returns its connection string, for code that builds its own client or uses an
  official SDK.

Registration and reading happen on the test's thread, answering on the server threads:
one lock guards the registry, the calls and the problems found.
"""

from __future__ import annotations

import logging
import threading
import unittest.mock
from collections import Counter
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any, TypeVar

from proton import Connection

from fakes.parts import (
    STANDARD_MAX_MESSAGE_SIZE,
    Entity,
    EntitySettings,
    FakeClock,
    FakeServiceError,
    Faults,
    Limits,
    Reply,
    Server,
    Store,
    decode_request,
    entity_key,
)

from .. import ops
from ..amqp.envelope import Request
from ..ops._base import OpModel
from ..transport.proton_loop import ProtonLoop
from ..transport.sockets import Stream
from ._calls import Call
from ._outcomes import Invoke, Outcome, Refuse, outcome_for_error, outcome_for_response
from ._registry import Registration, Registry
from ._transport import connect_in_memory

__all__ = ["MockManagementNode"]

#: An operation's ``Request`` class, as ``requests`` takes it and types what it returns.
RequestT = TypeVar("RequestT", bound=OpModel)
_LOG = logging.getLogger("sbmgmt.testing")
_HOST = "127.0.0.1"
_KEY = "SharedAccessKeyName=mock;SharedAccessKey=bW9jaw==;UseDevelopmentEmulator=true"


class _NotRegistered(FakeServiceError):
    """No registration answers the request: its delivery is rejected."""

    status_code = 501
    condition = "amqp:not-implemented"


class _CallbackFailed(FakeServiceError):
    """A registered callback failed: the request's delivery is rejected."""


class _AnyEntityStore(Store):
    """A store in which every entity exists (created empty when first named)."""

    def exists(self, path: str) -> bool:
        return True

    def entity(self, path: str) -> Entity:
        if not super().exists(path):
            self.add_queue(path, EntitySettings())
        return super().entity(path)


class _Node:
    """The server's management handler: decode, record, pick, answer."""

    def __init__(self, mock: MockManagementNode, faults: Faults) -> None:
        self._mock = mock
        self._faults = faults
        self.applied: Counter[tuple[str, str]] = Counter()

    def handle(self, path: str, message: Request, connection: int,
               now: float, txn_id: bytes | None = None) -> Reply | None:
        try:
            module, request = decode_request(message)
        except FakeServiceError as exc:
            _LOG.warning("sbmgmt.testing: refused a malformed request to %s: %s", path,
                         exc.description)
            return Reply.refusal(message.message_id, exc)
        call = Call(module.OPERATION, path, request)
        outcome = self._mock._answer(call)
        try:
            reply = outcome.apply(call, message.message_id, self._faults)
        except Exception as exc:
            raise self._mock._failed(call, exc) from None
        if reply is not None and 200 <= reply.status_code < 300:
            self.applied[(entity_key(path), call.operation)] += 1
        return reply


class MockManagementNode:
    """A mock management node: register replies per operation and entity, run the code under test,
    then read ``calls``.

    Use it as ``with MockManagementNode() as mock:`` (every sbmgmt client of the process then
    talks to it in memory), through the ``sbmgmt_mock`` pytest fixture, or over AMQP with
    [serve][sbmgmt.testing.MockManagementNode.serve] (docs/testing.md).

    Args:
        ordered: The requests must come in the order of the registrations; each answers ``times``
            requests (one by default) before the next one's turn.
        assert_all_requests_are_fired: [verify][sbmgmt.testing.MockManagementNode.verify] also
            reports registrations that were never used (or used fewer than their ``times``).

    Raises nothing: nothing starts before the first client connects.
    """

    def __init__(self, *, ordered: bool = False,
                 assert_all_requests_are_fired: bool = True) -> None:
        self.assert_all_requests_are_fired = assert_all_requests_are_fired
        self._lock = threading.Lock()
        self._registry = Registry(ordered=ordered)
        self._calls: list[Call] = []
        self._problems: list[str] = []
        self._store_lock = threading.RLock()
        self._store = _AnyEntityStore()
        self._clock = FakeClock()
        self._servers: dict[str, Server] = {}
        self._closed = False
        self._patcher: Any = None

    def __repr__(self) -> str:
        with self._lock:
            return (f"MockManagementNode({len(self._registry.registrations)} registered, "
                    f"{len(self._calls)} calls)")

    # ---- registering ---------------------------------------------------------------

    def add(
        self,
        operation: ModuleType | str,
        *,
        entity: str | None = None,
        response: OpModel | None = None,
        error: type[Exception] | Exception | None = None,
        status: int | None = None,
        condition: str | None = None,
        description: str | None = None,
        callback: Callable[[Call], OpModel] | None = None,
        times: int | None = None,
    ) -> Registration:
        """Register how to answer an operation.

        Give exactly one of ``response``, ``error``, ``status`` or ``callback``.

        Args:
            operation: An [sbmgmt.ops][sbmgmt.ops] module (``ops.renew_lock``) or an operation
                name (``"com.microsoft:renew-lock"``).
            entity: The entity path it answers for, as the client names it (compared without
                case); None: any entity.
            response: The operation's ``Response``, sent with its success status.
            error: An [sbmgmt.errors][sbmgmt.errors] class or instance the client should raise:
                an ``OperationError`` (``MessageLockLostError``...) answers with its status and
                condition; ``ConnectionLostError`` closes the connection; ``LinkDetachedError``
                detaches the management link; ``OperationTimeoutError`` sends no reply.
            status: A raw failure reply's status code.
            condition: With ``status``: its error condition.
            description: With ``status``: its status description.
            callback: Called with the [Call][sbmgmt.testing.Call] on the mock's server thread; it
                returns the ``Response`` or raises an error as ``error`` takes it.
            times: How many requests it answers; None: one if a later registration matches too,
                else every one (docs/testing.md).

        Returns:
            The [Registration][sbmgmt.testing.Registration]: its ``calls`` and ``call_count`` say
            what it answered.

        Raises:
            ValueError: Not exactly one of ``response``, ``error``, ``status``, ``callback``;
                ``condition`` or ``description`` without ``status``; ``times`` below 1; or a
                ``status`` that is not a status code.
            TypeError: ``operation`` is not an operation, or ``response`` is another operation's,
                or ``error`` is not an sbmgmt error.
        """
        module = _operation_module(operation)
        given = [name for name, value in (("response", response), ("error", error),
                                          ("status", status), ("callback", callback))
                 if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of response=, error=, status= or callback=, "
                             f"got {', '.join(given) or 'none'}")
        if (condition is not None or description is not None) and status is None:
            raise ValueError("condition= and description= go with status=")
        if times is not None and (isinstance(times, bool) or times < 1):
            raise ValueError(f"times must be at least 1 (or None), got {times!r}")
        outcome: Outcome
        if response is not None:
            outcome = outcome_for_response(module.OPERATION, response, "response")
        elif error is not None:
            outcome = outcome_for_error(error, "error")
        elif status is not None:
            if not isinstance(status, int) or isinstance(status, bool) or status < 100:
                raise ValueError(f"status must be an HTTP-style status code, got {status!r}")
            outcome = Refuse(status, condition, description)
        else:
            assert callback is not None
            outcome = Invoke(callback)
        registration = Registration(module.OPERATION, entity, outcome, times)
        with self._lock:
            self._registry.add(registration)
        return registration

    # ---- reading -----------------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        """Every request received, in order (matched or not), as typed Request models."""
        with self._lock:
            return list(self._calls)

    def requests(self, model: type[RequestT], entity: str | None = None) -> list[RequestT]:
        """The requests of one operation, in order, typed as that operation's ``Request`` class.

        Args:
            model: The operation's ``Request`` class, for example ``ops.renew_lock.Request``.
            entity: Only those sent to this entity (compared without case); None: every entity.

        Returns:
            The requests, as ``model`` instances.

        Raises:
            TypeError: ``model`` is not an operation's ``Request`` class.
        """
        if model not in ops.MODULE_BY_REQUEST:
            raise TypeError(f"model must be an operation's Request class "
                            f"(ops.renew_lock.Request), got {model!r}")
        return [call.request for call in self.calls if isinstance(call.request, model)
                and (entity is None or entity_key(call.entity) == entity_key(entity))]

    @property
    def registrations(self) -> list[Registration]:
        """Every registration, in the order they were added."""
        with self._lock:
            return list(self._registry.registrations)

    def unused(self) -> list[Registration]:
        """The registrations never used, or used fewer times than their ``times``.

        Returns:
            Those registrations, in the order they were added.
        """
        with self._lock:
            return [r for r in self._registry.registrations if r.unused()]

    def assert_all_used(self) -> None:
        """AssertionError listing the registrations that were not used up."""
        unused = self.unused()
        if unused:
            raise AssertionError(
                f"{len(unused)} registered repl{'y was' if len(unused) == 1 else 'ies were'} "
                "not used:\n" + "\n".join(f"  {r!r}" for r in unused))

    def verify(self) -> None:
        """AssertionError for every problem of the test: requests nothing answered,
        callbacks that failed, and (with ``assert_all_requests_are_fired``) unused
        registrations."""
        with self._lock:
            problems = list(self._problems)
        if problems:
            raise AssertionError("sbmgmt.testing: " + "\n".join(problems))
        if self.assert_all_requests_are_fired:
            self.assert_all_used()

    def reset(self) -> None:
        """Forget every registration, call and problem."""
        with self._lock:
            self._registry = Registry(ordered=self._registry.ordered)
            self._calls.clear()
            self._problems.clear()

    # ---- answering (server threads) -----------------------------------------------

    def _answer(self, call: Call) -> Outcome:
        """Record ``call`` and pick its outcome; _NotRegistered if nothing answers it."""
        with self._lock:
            self._calls.append(call)
            registration = self._registry.pick(call)
            if registration is not None:
                return registration.outcome
            expected = ""
            if self._registry.ordered:
                live = [r for r in self._registry.registrations if not r.used_up(True)]
                expected = f" (ordered: expected {live[0]!r})" if live else " (ordered)"
            problem = (f"no registered reply for {call}{expected}; registered:\n"
                       + self._registry.describe())
            self._problems.append(problem)
        _LOG.warning("sbmgmt.testing: %s", problem)
        raise _NotRegistered(f"sbmgmt.testing: {problem}")

    def _failed(self, call: Call, exc: Exception) -> FakeServiceError:
        problem = f"the reply to {call} failed: {type(exc).__name__}: {exc}"
        with self._lock:
            self._problems.append(problem)
        _LOG.warning("sbmgmt.testing: %s", problem)
        return _CallbackFailed(f"sbmgmt.testing: {problem}")

    # ---- the two ways in ---------------------------------------------------------------

    def connect(self, loop: ProtonLoop, host: str, port: int, **options: Any) -> Connection:
        """``ProtonLoop.connect``'s stand-in while the mock intercepts clients: the connection runs
        over an in-memory pipe to this mock instead of a socket (TLS, being the socket's, is left
        out).

        Args:
            loop: The client's engine loop.
            host: The host the client would have dialled (ignored).
            port: Its port (ignored).
            **options: The connection's options, as ``ProtonLoop.connect`` takes them.

        Returns:
            The client's AMQP connection.

        Raises:
            sbmgmt.errors.ConnectionLostError: Later, on the client's side, when the mock is
                closed.
        """
        return connect_in_memory(self._serve_in_memory, loop, host, port, **options)

    def intercept(self, patch_object: Callable[..., Any] = unittest.mock.patch.object) -> Any:
        """Patch ``ProtonLoop.connect`` so that every sbmgmt client of the process talks to this
        mock (``with mock:`` and the ``sbmgmt_mock`` fixture do this for you).

        Args:
            patch_object: ``unittest.mock.patch.object`` (its patcher is returned, to start) or
                pytest-mock's ``mocker.patch.object`` (which starts it).

        Returns:
            What ``patch_object`` returns.

        Raises nothing of its own; ``patch_object``'s errors pass through.
        """
        return patch_object(ProtonLoop, "connect", autospec=True, side_effect=self.connect)

    @property
    def connection_string(self) -> str:
        """A connection string for clients of this process while the mock intercepts them
        (any string works; this plain emulator one spares loading the TLS CA bundle)."""
        return f"Endpoint=sb://localhost;{_KEY}"

    def serve(self) -> str:
        """Serve the mock over AMQP on ``127.0.0.1``, on a free port (started once).

        For code that builds its own AMQP connection, such as an official SDK: the same
        registrations answer, and the same calls are recorded.

        Returns:
            An emulator connection string (``UseDevelopmentEmulator=true``) for that server.
        """
        return f"Endpoint=sb://{_HOST}:{self._server('tcp').port};{_KEY}"

    def close(self) -> None:
        """Stop the mock's servers (their connections close); clients that connect later
        are disconnected at once."""
        with self._lock:
            self._closed = True
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.stop()

    def __enter__(self) -> MockManagementNode:
        self._patcher = self.intercept()
        self._patcher.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        patcher, self._patcher = self._patcher, None
        if patcher is not None:
            patcher.stop()
        self.close()
        if exc_type is None:
            self.verify()

    def _serve_in_memory(self, stream: Stream) -> None:
        try:
            server = self._server("memory")
        except RuntimeError:
            stream.close()  # closed: the client sees a connection that ends at once
            return
        server.serve_stream(stream)

    def _server(self, kind: str) -> Server:
        with self._lock:
            if self._closed:
                raise RuntimeError("the mock management node is closed")
            server = self._servers.get(kind)
            if server is None:
                faults = Faults()
                server = Server(self._store, self._clock, self._store_lock, host=_HOST,
                                port=0 if kind == "tcp" else None, keys={},
                                accept_any_token=True, faults=faults,
                                max_message_size=STANDARD_MAX_MESSAGE_SIZE,
                                limits=Limits(), management=_Node(self, faults))
                server.start()
                self._servers[kind] = server
            return server


def _operation_module(operation: ModuleType | str) -> ModuleType:
    if isinstance(operation, str):
        return ops.operation(operation)
    if isinstance(operation, ModuleType) and operation in ops.OPERATIONS.values():
        return operation
    raise TypeError(f"operation must be an sbmgmt.ops module (ops.renew_lock) or an operation "
                    f"name, got {operation!r}")
