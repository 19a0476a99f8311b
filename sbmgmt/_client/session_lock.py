"""A session lock of the client's own: ``with q.session("s1") as s`` (and ``async with``).

The service applies renew-session-lock and get/set-session-state only to a session
locked by a receiver link of the requesting connection, named in the request's
``associated-link-name``; a client that receives nothing must lock the session itself.
Entering a :class:`SessionLock` attaches such a link (the session filter, no credit:
see :mod:`sbmgmt._engine.session_links`) on the client's connection and waits for the
service's answer: the lock (its expiry in :attr:`locked_until`), or at once the typed
refusal (:class:`~sbmgmt.errors.SessionLockedElsewhereError` when another receiver
holds the session). Every session request then names the link. Leaving detaches it,
which releases the lock. :class:`AsyncSessionLock` is the same on the event loop.

If the connection is lost meanwhile, the lock is gone with it: later requests fail
with the service's :class:`~sbmgmt.errors.SessionLockLostError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from .._engine.session_links import SessionAttach
from ..errors import OperationTimeoutError
from ..message import ReceivedMessage
from ..ops import (
    get_session_state,
    receive_by_sequence_number,
    renew_session_lock,
    set_session_state,
    update_disposition,
)
from ..ops._base import OpModel
from ..ops.update_disposition import DispositionStatus
from .method_calls import (
    Call,
    SettleMode,
    get_session_state_call,
    receive_deferred_call,
    renew_session_lock_call,
    set_session_state_call,
    update_disposition_call,
)

if TYPE_CHECKING:
    from .client_core import ClientCore

__all__ = ["AsyncSessionLock", "SessionLock"]

_ATTACH = "attach"
_Resp = TypeVar("_Resp", bound=OpModel)
_R = TypeVar("_R")


class _SessionBase:
    """What the sync and asyncio session locks share: the link, the requests, the expiry."""

    def __init__(self, core: ClientCore, path: str, session_id: str) -> None:
        # "session-id | string | Yes | Session ID." (at most 128 characters)
        if not isinstance(session_id, str) or not 0 < len(session_id) <= 128:
            raise ValueError(
                f"session_id must be a string of 1 to 128 characters, got {session_id!r}")
        self._core = core
        self.path = path
        self.session_id = session_id
        self._attach: SessionAttach | None = None
        self._locked_until: datetime | None = None

    def __repr__(self) -> str:
        state = "locked" if self._attach is not None else "not locked"
        return f"{type(self).__name__}(path={self.path!r}, session_id={self.session_id!r}, {state})"

    @property
    def locked_until(self) -> datetime | None:
        """When the lock expires (UTC), as the service last said; None before it is entered."""
        return self._locked_until

    @property
    def link_name(self) -> str:
        """The name of the receiver link holding the session (the requests'
        ``associated-link-name``).

        Raises ``RuntimeError`` outside the ``with`` block.
        """
        return self._held().name

    def _held(self) -> SessionAttach:
        if self._attach is None:
            raise RuntimeError(f"{self!r}: use it in a 'with' block to lock the session first")
        return self._attach

    def _begin(self) -> SessionAttach:
        if self._attach is not None:
            raise RuntimeError(f"{self!r} is already entered")
        attach = SessionAttach(self.path, self.session_id)
        self._core.io.submit(self.path, attach)
        return attach

    def _locked(self, attach: SessionAttach, expiry: float | None) -> None:
        self._attach = attach
        self._locked_until = None if expiry is None else datetime.fromtimestamp(
            expiry, tz=timezone.utc)

    def _end(self) -> SessionAttach | None:
        attach, self._attach = self._attach, None
        if attach is not None:
            attach.detaching = True
            self._core.io.submit(self.path, attach)
        return attach

    def _timed_out(self, attach: SessionAttach) -> OperationTimeoutError:
        attach.detaching = True
        self._core.io.submit(self.path, attach)
        return OperationTimeoutError(
            f"locking session {self.session_id!r} of {self.path!r}: no answer in "
            f"{self._core.timeout} s", operation=_ATTACH)

    # Every request of the lock is a Call of method_calls.py (its arguments checked as the
    # entity's methods check them), sent naming the link by ``_call``.

    def _get_state(self) -> Call[get_session_state.Response, bytes | None]:
        return get_session_state_call(self.session_id)

    def _set_state(self, state: bytes | None) -> Call[set_session_state.Response, None]:
        return set_session_state_call(self.session_id, state)  # a bad state is named ``state``

    def _renew(self) -> Call[renew_session_lock.Response, datetime]:
        return renew_session_lock_call(self.session_id)

    def _renewed(self, expiry: datetime) -> datetime:
        self._locked_until = expiry
        return expiry

    def _receive_deferred(
        self, sequence_numbers: Iterable[int], settle_mode: SettleMode,
    ) -> Call[receive_by_sequence_number.Response, list[ReceivedMessage]]:
        return receive_deferred_call(sequence_numbers, settle_mode, self.session_id)

    def _dispose(
        self, lock_tokens: Iterable[uuid.UUID | str], status: DispositionStatus | str,
        dead_letter_reason: str | None, dead_letter_description: str | None,
        properties_to_modify: Mapping[str, Any] | None,
    ) -> Call[update_disposition.Response, None]:
        return update_disposition_call(lock_tokens, status, dead_letter_reason,
                                       dead_letter_description, properties_to_modify,
                                       self.session_id)


class SessionLock(_SessionBase):
    """The lock on one session, held by this client while in an ``with`` block.

    Made by [EntityClient.session][sbmgmt.EntityClient.session]: ``with q.session("user-42") as
    s:``. The service answers session requests (get/set-session-state, renew-session-lock) only
    for a session locked by a receiver link of the requesting connection. Entering the block
    attaches such a link (it receives nothing) and waits for the lock; every request of the lock
    names that link; leaving the block detaches it, which releases the lock.

    Entering raises [SessionLockedElsewhereError][sbmgmt.errors.SessionLockedElsewhereError] at
    once when another receiver holds the session,
    [OperationTimeoutError][sbmgmt.errors.OperationTimeoutError] when no answer comes within the
    client's timeout, and ``RuntimeError`` when the lock is entered twice.

    Attributes:
        path: The entity path.
        session_id: The session's id.
    """

    def __enter__(self) -> SessionLock:
        attach = self._begin()
        try:
            expiry = attach.opened.result(self._core.timeout)
        except FutureTimeout:
            raise self._timed_out(attach) from None
        self._locked(attach, expiry)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        attach = self._end()
        if attach is not None:
            # Bounded: past it the detach is still on its way (the lock expires anyway).
            with contextlib.suppress(FutureTimeout):
                attach.closed.result(self._core.timeout)

    def _call(self, call: Call[_Resp, _R], timeout: float | None = None) -> _R:
        return call.result(self._core.call(self.path, call.request, self._held().name,
                                           timeout))

    def get_state(self) -> bytes | None:
        """Get the session's state (get-session-state).

        Returns:
            The state's bytes, or None when the session has no state.

        Raises:
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the connection
                was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed).
            RuntimeError: Called outside the ``with`` block (the session is not locked).
        """
        return self._call(self._get_state())

    def set_state(self, state: bytes | None) -> None:
        """Set or clear the session's state (set-session-state).

        Args:
            state: The new state; None clears it.

        Raises:
            ValueError: ``state`` is not bytes (nothing is sent).
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the connection
                was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed).
            RuntimeError: Called outside the ``with`` block (the session is not locked).
        """
        self._call(self._set_state(state))

    def renew_lock(self, *, timeout: float | None = None) -> datetime:
        """Extend the lock (renew-session-lock); the new expiry is also in ``locked_until``.

        A [LockRenewer][sbmgmt.renewer.LockRenewer] can do this for you:
        ``renewer.register_session(q, s)``.

        Args:
            timeout: Seconds the call may take, retries included; None: the client's timeout.

        Returns:
            The lock's new expiry (UTC).

        Raises:
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the connection
                was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed).
            RuntimeError: Called outside the ``with`` block (the session is not locked).
        """
        return self._renewed(self._call(self._renew(), timeout))

    def receive_deferred_messages(
        self, sequence_numbers: Iterable[int], settle_mode: SettleMode = "peek_lock",
    ) -> list[ReceivedMessage]:
        """Receive the session's deferred messages by sequence number, under its lock
        (receive-by-sequence-number naming the link that holds the session).

        On a session entity the service locks a deferred message only for the holder of
        its session; the messages' locks are the session lock (renewed with it, released
        when it is).

        Args:
            sequence_numbers: The sequence numbers of deferred messages of this session, at
                least one.
            settle_mode: ``"peek_lock"``: the messages come locked, to be settled with
                ``update_disposition``; ``"receive_and_delete"``: they are removed as they
                are returned.

        Returns:
            The messages, with lock tokens in ``"peek_lock"`` mode.

        Raises:
            ValueError: No sequence number, or ``settle_mode`` is neither mode; nothing is
                sent.
            sbmgmt.errors.NotFoundError: A sequence number is not a deferred message of the
                session, or that message is locked already (the request fails as a whole).
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the
                connection was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed); not replayed: ``may_have_been_applied`` says whether it may have been.
            RuntimeError: Called outside the ``with`` block (the session is not locked).
        """
        return self._call(self._receive_deferred(sequence_numbers, settle_mode))

    def update_disposition(
        self,
        lock_tokens: Iterable[uuid.UUID | str],
        status: DispositionStatus | str,
        dead_letter_reason: str | None = None,
        dead_letter_description: str | None = None,
        properties_to_modify: Mapping[str, Any] | None = None,
    ) -> None:
        """Settle messages of the session locked by this lock (update-disposition).

        Args:
            lock_tokens: The lock tokens of the messages (``uuid.UUID`` or its string), at
                least one.
            status: A [DispositionStatus][sbmgmt.DispositionStatus] or its value:
                ``"completed"``, ``"abandoned"``, ``"suspended"`` (dead-letter) or
                ``"defered"`` (defer).
            dead_letter_reason: With ``"suspended"``: the ``DeadLetterReason``.
            dead_letter_description: With ``"suspended"``: the ``DeadLetterErrorDescription``.
            properties_to_modify: Application properties to set on the messages.

        Raises:
            TypeError: A value of ``properties_to_modify`` has no AMQP encoding.
            ValueError: No token, a token that is not a UUID, or an unknown ``status``;
                nothing is sent.
            sbmgmt.errors.LockLostError: A message's lock or the session's lock is gone
                (410); the request fails as a whole.
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed); not replayed: ``may_have_been_applied`` says whether it may have been.
            RuntimeError: Called outside the ``with`` block (the session is not locked).
        """
        self._call(self._dispose(lock_tokens, status, dead_letter_reason,
                                 dead_letter_description, properties_to_modify))


class AsyncSessionLock(_SessionBase):
    """The lock on one session, held by this client while in an ``async with`` block.

    Made by [AsyncEntityClient.session][sbmgmt.aio.AsyncEntityClient.session]: ``async with
    q.session("user-42") as s:``. The service answers session requests (get/set-session-state,
    renew-session-lock) only for a session locked by a receiver link of the requesting
    connection. Entering the block attaches such a link (it receives nothing) and waits for the
    lock; every request of the lock names that link; leaving the block detaches it, which
    releases the lock.

    Entering raises [SessionLockedElsewhereError][sbmgmt.errors.SessionLockedElsewhereError] at
    once when another receiver holds the session,
    [OperationTimeoutError][sbmgmt.errors.OperationTimeoutError] when no answer comes within the
    client's timeout, and ``RuntimeError`` when the lock is entered twice.

    Attributes:
        path: The entity path.
        session_id: The session's id.
    """

    async def __aenter__(self) -> AsyncSessionLock:
        attach = self._begin()
        try:
            expiry = await asyncio.wait_for(asyncio.wrap_future(attach.opened),
                                            self._core.timeout)
        except asyncio.TimeoutError:
            raise self._timed_out(attach) from None
        self._locked(attach, expiry)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        attach = self._end()
        if attach is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.wrap_future(attach.closed), self._core.timeout)

    async def _call(self, call: Call[_Resp, _R], timeout: float | None = None) -> _R:
        return call.result(await self._core.call_async(self.path, call.request,
                                                       self._held().name, timeout))

    async def get_state(self) -> bytes | None:
        """Get the session's state (get-session-state).

        Returns:
            The state's bytes, or None when the session has no state.

        Raises:
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the connection
                was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed).
            RuntimeError: Called outside the ``async with`` block (the session is not locked).
        """
        return await self._call(self._get_state())

    async def set_state(self, state: bytes | None) -> None:
        """Set or clear the session's state (set-session-state).

        Args:
            state: The new state; None clears it.

        Raises:
            ValueError: ``state`` is not bytes (nothing is sent).
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the connection
                was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed).
            RuntimeError: Called outside the ``async with`` block (the session is not locked).
        """
        await self._call(self._set_state(state))

    async def renew_lock(self, *, timeout: float | None = None) -> datetime:
        """Extend the lock (renew-session-lock); the new expiry is also in ``locked_until``.

        A [AsyncLockRenewer][sbmgmt.renewer.AsyncLockRenewer] can do this for you:
        ``renewer.register_session(q, s)``.

        Args:
            timeout: Seconds the call may take, retries included; None: the client's timeout.

        Returns:
            The lock's new expiry (UTC).

        Raises:
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the connection
                was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed).
            RuntimeError: Called outside the ``async with`` block (the session is not locked).
        """
        return self._renewed(await self._call(self._renew(), timeout))

    async def receive_deferred_messages(
        self, sequence_numbers: Iterable[int], settle_mode: SettleMode = "peek_lock",
    ) -> list[ReceivedMessage]:
        """Receive the session's deferred messages by sequence number, under its lock
        (receive-by-sequence-number naming the link that holds the session).

        On a session entity the service locks a deferred message only for the holder of
        its session; the messages' locks are the session lock (renewed with it, released
        when it is).

        Args:
            sequence_numbers: The sequence numbers of deferred messages of this session, at
                least one.
            settle_mode: ``"peek_lock"``: the messages come locked, to be settled with
                ``update_disposition``; ``"receive_and_delete"``: they are removed as they
                are returned.

        Returns:
            The messages, with lock tokens in ``"peek_lock"`` mode.

        Raises:
            ValueError: No sequence number, or ``settle_mode`` is neither mode; nothing is
                sent.
            sbmgmt.errors.NotFoundError: A sequence number is not a deferred message of the
                session, or that message is locked already (the request fails as a whole).
            sbmgmt.errors.SessionLockLostError: The lock is gone (it expired, or the
                connection was lost with it) (410).
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed); not replayed: ``may_have_been_applied`` says whether it may have been.
            RuntimeError: Called outside the ``async with`` block (the session is not locked).
        """
        return await self._call(self._receive_deferred(sequence_numbers, settle_mode))

    async def update_disposition(
        self,
        lock_tokens: Iterable[uuid.UUID | str],
        status: DispositionStatus | str,
        dead_letter_reason: str | None = None,
        dead_letter_description: str | None = None,
        properties_to_modify: Mapping[str, Any] | None = None,
    ) -> None:
        """Settle messages of the session locked by this lock (update-disposition).

        Args:
            lock_tokens: The lock tokens of the messages (``uuid.UUID`` or its string), at
                least one.
            status: A [DispositionStatus][sbmgmt.DispositionStatus] or its value:
                ``"completed"``, ``"abandoned"``, ``"suspended"`` (dead-letter) or
                ``"defered"`` (defer).
            dead_letter_reason: With ``"suspended"``: the ``DeadLetterReason``.
            dead_letter_description: With ``"suspended"``: the ``DeadLetterErrorDescription``.
            properties_to_modify: Application properties to set on the messages.

        Raises:
            TypeError: A value of ``properties_to_modify`` has no AMQP encoding.
            ValueError: No token, a token that is not a UUID, or an unknown ``status``;
                nothing is sent.
            sbmgmt.errors.LockLostError: A message's lock or the session's lock is gone
                (410); the request fails as a whole.
            sbmgmt.errors.OperationError: The service refused the request otherwise.
            sbmgmt.errors.TransportError: No reply came (connection lost, timeout, client
                closed); not replayed: ``may_have_been_applied`` says whether it may have been.
            RuntimeError: Called outside the ``async with`` block (the session is not locked).
        """
        await self._call(self._dispose(lock_tokens, status, dead_letter_reason,
                                       dead_letter_description, properties_to_modify))
