"""Message senders and peek-lock receivers for the clients (the links:
:mod:`sbmgmt._engine.message_links`).

A sender sends messages to an entity, or *via* another (send-via: the service takes them
on the via entity, inside the transaction acting on it, and forwards them to the
destination once it commits). A receiver receives messages locked (peek-lock) and
completes or abandons them on its link, optionally inside a transaction. Both are used in a
``with`` block (``async with`` for the asyncio twins): entering attaches the link, leaving
detaches it. Every call hands :class:`~sbmgmt._engine.message_links.LinkWork` to the
client's driver and waits for its future: the sync classes block on it, the async ones
await it on the client's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import TracebackType
from typing import Any, TypeVar

from .._engine.message_links import LinkWork, MessageLink, Operation, Outcome
from .._protocol.transaction import TransactionBase
from ..errors import OperationTimeoutError
from ..message import Message, ReceivedMessage
from .client_core import ClientCore

__all__ = [
    "AsyncMessageReceiver",
    "AsyncMessageSender",
    "MessageReceiver",
    "MessageSender",
    "receiver_link",
    "sender_link",
]

_T = TypeVar("_T")
_MAX_RECEIVE = 5000


class _LinkBase:
    """What every sender and receiver shares: the link, the work, the checks."""

    def __init__(self, core: ClientCore, link: MessageLink) -> None:
        self._core = core
        self._link = link
        self._entered = False

    def __repr__(self) -> str:
        state = "attached" if self._entered else "not attached"
        return f"{type(self).__name__}({self._link.what()}, {state})"

    @property
    def name(self) -> str:
        """The link's name."""
        return self._link.name

    @property
    def ended(self) -> bool:
        """Whether the link has ended (detached by either side, or its connection lost):
        a new one must be opened to go on."""
        return self._link.closed.done()

    def _work(self, operation: Operation, **fields: Any) -> LinkWork:
        if operation not in ("attach", "detach") and not self._entered:
            raise RuntimeError(f"{self!r}: use it in a 'with' block first")
        work = LinkWork(self._link, operation, **fields)
        self._core.io.submit(self._link.address, work)
        return work

    def _state(self, transaction: TransactionBase | None, operation: str) -> Any:
        if transaction is None:
            return None
        if transaction.owner is not self._core:
            raise ValueError("transaction: it belongs to another client; a transaction is "
                             "valid only on the connection that declared it")
        transaction.check_usable(operation)
        return transaction.state

    def _timed_out(self, what: str) -> OperationTimeoutError:
        return OperationTimeoutError(
            f"{what} the {self._link.what()}: no answer in {self._core.timeout} s",
            operation=what)

    def _send_works(self, messages: Iterable[Message], transaction: TransactionBase | None,
                    *, together: bool) -> list[LinkWork]:
        """The sends of ``messages``, one transfer each: one work for them all
        (``together``), else one per message."""
        encoded = tuple(message.to_bytes() for message in messages)  # all, before any is sent
        state = self._state(transaction, "send")
        groups = [encoded] if together else [(payload,) for payload in encoded]
        return [self._work("send", payloads=group, transaction=state) for group in groups]

    def _receive_work(self, max_count: int, max_wait_time: float) -> LinkWork:
        if not isinstance(max_count, int) or not 0 < max_count <= _MAX_RECEIVE:
            raise ValueError(f"max_count must be 1 to {_MAX_RECEIVE}, got {max_count!r}")
        if not max_wait_time >= 0:
            raise ValueError(f"max_wait_time must be 0 or more seconds, got {max_wait_time!r}")
        return self._work("receive", max_count=max_count, wait=float(max_wait_time))

    def _settle_work(self, messages: Sequence[ReceivedMessage | uuid.UUID], outcome: Outcome,
                     transaction: TransactionBase | None) -> LinkWork:
        tokens = tuple(m if isinstance(m, uuid.UUID) else m.lock_token for m in messages)
        if any(token is None for token in tokens):
            raise ValueError("settle: a message without a lock token was not received here")
        state = self._state(transaction, "settle")
        return self._work("settle", lock_tokens=tokens, outcome=outcome, transaction=state)


class _SyncLink(_LinkBase):
    def __enter__(self: _T) -> _T:
        link = self  # typed as the subclass by _T
        assert isinstance(link, _SyncLink)
        link._entered = True
        link._work("attach")
        try:
            link._link.opened.result(link._core.timeout)
        except FutureTimeout:
            link._exit()
            raise link._timed_out("attaching") from None
        except BaseException:
            link._exit()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._exit()

    def _exit(self) -> None:
        if not self._entered:
            return
        self._entered = False
        self._work("detach")
        with contextlib.suppress(FutureTimeout):  # bounded: the link ends with the connection
            self._link.closed.result(self._core.timeout)

    def _wait(self, future: Future[_T], what: str, extra: float = 0.0) -> _T:
        try:
            return future.result(self._core.timeout + extra)
        except FutureTimeout:
            raise self._timed_out(what) from None


class MessageSender(_SyncLink):
    """A sender of messages to one entity, used in a ``with`` block.

    Made by [EntityClient.sender][sbmgmt.EntityClient.sender].


    Raises:
        sbmgmt.errors.ServiceBusManagementError: Entering the block: the service refused the
            attach (for example [NotFoundError][sbmgmt.errors.NotFoundError]: no such entity),
            or no answer came within the client's timeout.
    """

    def send_messages(self, messages: Iterable[Message], *,
                      transaction: TransactionBase | None = None) -> None:
        """Send messages, each one transfer, and wait until the service has taken them all.

        Args:
            messages: The messages.
            transaction: An open transaction of this client: the messages are applied only if
                it commits (through a send-via sender, the destination gets them then).

        Raises:
            ValueError: The transaction is not usable here (nothing is sent).
            sbmgmt.errors.OperationError: The service refused a message (the others may have
                been taken).
            sbmgmt.errors.TransportError: The link or connection was lost, or no outcome came
                within the client's timeout: a message may have been taken.
            RuntimeError: Called outside the ``with`` block.
        """
        self._wait(self.submit_all(messages, transaction=transaction), "sending on")

    def submit(self, messages: Iterable[Message], *,
               transaction: TransactionBase | None = None) -> list[Future[None]]:
        """Send messages without waiting: one future per message, resolved by its outcome.

        Args:
            messages: The messages.
            transaction: An open transaction of this client, or None.

        Returns:
            The futures, in the messages' order.

        Raises:
            ValueError: The transaction is not usable here (nothing is sent).
            RuntimeError: Called outside the ``with`` block.
        """
        return [work.future for work in self._send_works(messages, transaction, together=False)]

    def submit_all(self, messages: Iterable[Message], *,
                   transaction: TransactionBase | None = None) -> Future[None]:
        """Send messages without waiting, one transfer each and one future for them all
        (cheaper than [submit][sbmgmt.MessageSender.submit] when no message needs its own).

        Args:
            messages: The messages.
            transaction: An open transaction of this client, or None.

        Returns:
            A future resolved when the service has taken every message; it fails, once every
            outcome is in, with the first refusal
            ([OperationError][sbmgmt.errors.OperationError]: the others may have been taken),
            or with the link's or connection's loss.

        Raises:
            ValueError: The transaction is not usable here (nothing is sent).
            RuntimeError: Called outside the ``with`` block.
        """
        (work,) = self._send_works(messages, transaction, together=True)
        future: Future[None] = work.future
        return future


class _Prefetching(_LinkBase):
    """What both receivers share: their prefetch, changed as they go."""

    def set_prefetch(self, prefetch: int) -> None:
        """Change how many messages are asked for ahead of the receives (0 to 5,000).

        A lower prefetch takes back no credit already given (what the service was asked
        for still comes); it applies as the credit is used. A caller that knows how many
        more messages it wants sets the prefetch to that many, so that nothing more is
        asked for and leaving the block has no credit to drain (a round trip saved).

        Args:
            prefetch: The messages to keep asked for beyond the waiting receives.

        Raises:
            ValueError: ``prefetch`` out of range.
            RuntimeError: Called outside the block.
        """
        _check_prefetch(prefetch)
        self._work("prefetch", max_count=prefetch)


class MessageReceiver(_Prefetching, _SyncLink):
    """A peek-lock receiver from one entity, used in a ``with`` block.

    Made by [EntityClient.receiver][sbmgmt.EntityClient.receiver].


    Raises:
        sbmgmt.errors.ServiceBusManagementError: Entering the block: the service refused the
            attach, or no answer came within the client's timeout.
    """

    def receive_messages(self, max_count: int = 1,
                         max_wait_time: float = 1.0) -> list[ReceivedMessage]:
        """Receive up to ``max_count`` messages, each locked for this link.

        Args:
            max_count: At most this many (1 to 5,000).
            max_wait_time: Seconds to wait for them; what arrived by then is returned.

        Returns:
            The messages (fewer, or none, when the entity has no more in time).

        Raises:
            ValueError: A count or a wait out of range.
            sbmgmt.errors.TransportError: The link or the connection was lost (the locks of
                what it received are gone with it).
            RuntimeError: Called outside the ``with`` block.
        """
        work = self._receive_work(max_count, max_wait_time)
        result: list[ReceivedMessage] = self._wait(work.future, "receiving on", max_wait_time)
        return result

    def settle(self, messages: Sequence[ReceivedMessage | uuid.UUID], outcome: Outcome, *,
               transaction: TransactionBase | None = None) -> Future[None]:
        """Settle messages received here without waiting (``"completed"``: removed;
        ``"abandoned"``: unlocked).

        Args:
            messages: The messages (or their lock tokens).
            outcome: ``"completed"`` or ``"abandoned"``.
            transaction: An open transaction of this client, or None.

        Returns:
            A future resolved once the service has settled them all.

        Raises:
            ValueError: A message has no lock token, or the transaction is not usable.
            RuntimeError: Called outside the ``with`` block.
        """
        return self._settle_work(messages, outcome, transaction).future

    def complete_messages(self, messages: Sequence[ReceivedMessage | uuid.UUID], *,
                          transaction: TransactionBase | None = None) -> None:
        """Complete (remove) messages received here, and wait for the service.

        Args:
            messages: The messages (or their lock tokens).
            transaction: An open transaction of this client: applied only if it commits.

        Raises:
            ValueError: A message has no lock token, or the transaction is not usable.
            sbmgmt.errors.MessageLockLostError: A lock is not held by this link any more.
            sbmgmt.errors.TransportError: The link or connection was lost.
            RuntimeError: Called outside the ``with`` block.
        """
        self._wait(self.settle(messages, "completed", transaction=transaction), "completing on")

    def abandon_messages(self, messages: Sequence[ReceivedMessage | uuid.UUID]) -> None:
        """Abandon messages received here (their locks are released), and wait.

        Args:
            messages: The messages (or their lock tokens).

        Raises:
            ValueError: A message has no lock token.
            sbmgmt.errors.MessageLockLostError: A lock is not held by this link any more.
            sbmgmt.errors.TransportError: The link or connection was lost.
            RuntimeError: Called outside the ``with`` block.
        """
        self._wait(self.settle(messages, "abandoned"), "abandoning on")


class _AsyncLink(_LinkBase):
    async def __aenter__(self: _T) -> _T:
        link = self
        assert isinstance(link, _AsyncLink)
        link._entered = True
        link._work("attach")
        try:
            await link._wait(link._link.opened, "attaching")
        except BaseException:
            await link._exit()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._exit()

    async def _exit(self) -> None:
        if not self._entered:
            return
        self._entered = False
        self._work("detach")
        with contextlib.suppress(OperationTimeoutError):
            await self._wait(self._link.closed, "detaching")

    async def _wait(self, future: Future[_T], what: str, extra: float = 0.0) -> _T:
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future),
                                          self._core.timeout + extra)
        except asyncio.TimeoutError:
            raise self._timed_out(what) from None


class AsyncMessageSender(_AsyncLink):
    """The asyncio twin of [MessageSender][sbmgmt.MessageSender], in ``async with``.

    Made by [AsyncEntityClient.sender][sbmgmt.aio.AsyncEntityClient.sender].


    Raises:
        sbmgmt.errors.ServiceBusManagementError: Entering the block: the service refused the
            attach, or no answer came within the client's timeout.
    """

    async def send_messages(self, messages: Iterable[Message], *,
                            transaction: TransactionBase | None = None) -> None:
        """Send messages and wait until the service took them all.

        Args:
            messages: The messages.
            transaction: An open transaction of this client, or None.

        Raises:
            ValueError: The transaction is not usable here (nothing is sent).
            sbmgmt.errors.OperationError: The service refused a message.
            sbmgmt.errors.TransportError: The link or connection was lost, or no outcome came
                in time: a message may have been taken.
            RuntimeError: Called outside the ``async with`` block.
        """
        (work,) = self._send_works(messages, transaction, together=True)
        await self._wait(work.future, "sending on")


class AsyncMessageReceiver(_Prefetching, _AsyncLink):
    """The asyncio twin of [MessageReceiver][sbmgmt.MessageReceiver], in ``async with``.

    Made by [AsyncEntityClient.receiver][sbmgmt.aio.AsyncEntityClient.receiver].


    Raises:
        sbmgmt.errors.ServiceBusManagementError: Entering the block: the service refused the
            attach, or no answer came within the client's timeout.
    """

    async def receive_messages(self, max_count: int = 1,
                               max_wait_time: float = 1.0) -> list[ReceivedMessage]:
        """Receive up to ``max_count`` messages, each locked for this link.

        Args:
            max_count: At most this many (1 to 5,000).
            max_wait_time: Seconds to wait for them.

        Returns:
            The messages (fewer, or none, when the entity has no more in time).

        Raises:
            ValueError: A count or a wait out of range.
            sbmgmt.errors.TransportError: The link or the connection was lost.
            RuntimeError: Called outside the ``async with`` block.
        """
        work = self._receive_work(max_count, max_wait_time)
        result: list[ReceivedMessage] = await self._wait(work.future, "receiving on",
                                                         max_wait_time)
        return result

    async def complete_messages(self, messages: Sequence[ReceivedMessage | uuid.UUID], *,
                                transaction: TransactionBase | None = None) -> None:
        """Complete (remove) messages received here, and wait for the service.

        Args:
            messages: The messages (or their lock tokens).
            transaction: An open transaction of this client, or None.

        Raises:
            ValueError: A message has no lock token, or the transaction is not usable.
            sbmgmt.errors.MessageLockLostError: A lock is not held by this link any more.
            sbmgmt.errors.TransportError: The link or connection was lost.
            RuntimeError: Called outside the ``async with`` block.
        """
        work = self._settle_work(messages, "completed", transaction)
        await self._wait(work.future, "completing on")

    async def abandon_messages(self, messages: Sequence[ReceivedMessage | uuid.UUID]) -> None:
        """Abandon messages received here (their locks are released), and wait.

        Args:
            messages: The messages (or their lock tokens).

        Raises:
            ValueError: A message has no lock token.
            sbmgmt.errors.MessageLockLostError: A lock is not held by this link any more.
            sbmgmt.errors.TransportError: The link or connection was lost.
            RuntimeError: Called outside the ``async with`` block.
        """
        await self._wait(self._settle_work(messages, "abandoned", None).future, "abandoning on")


def sender_link(path: str, via: str | None) -> MessageLink:
    """The link of a sender to ``path``, directly or via the entity ``via``."""
    if via is None or via == path:
        return MessageLink(path, receiver=False)
    return MessageLink(via, receiver=False, destination=path)


def receiver_link(path: str, prefetch: int) -> MessageLink:
    """The link of a peek-lock receiver from ``path`` (``prefetch``: 0 to 5,000)."""
    _check_prefetch(prefetch)
    return MessageLink(path, receiver=True, prefetch=prefetch)


def _check_prefetch(prefetch: int) -> None:
    if not isinstance(prefetch, int) or not 0 <= prefetch <= _MAX_RECEIVE:
        raise ValueError(f"prefetch must be 0 to {_MAX_RECEIVE}, got {prefetch!r}")
