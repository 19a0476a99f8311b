"""The thin shells that drive a :class:`RenewalScheduler`: a thread, or an asyncio task.

Both share :class:`_RenewerBase` (construction, registration, stats); each only
decides how to sleep until the scheduler's next time or a wake-up, and how to stop.
Sync azure-servicebus sessions are renewed through their own ``renew_lock`` on a small
pool of worker threads (``sbmgmt-sdk-renew``), created on first use and shut down
with the renewer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

from .._client.argument_checks import positive_seconds
from .._client.session_lock import AsyncSessionLock, SessionLock
from .._engine.connection import Endpoint
from ..aio import AsyncManagementClient
from ..client import ManagementClient
from ..ops._base import OpModel, OpRequest
from ._model import OnLockLost, RenewerStats
from ._scheduler import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BATCH_WINDOW,
    DEFAULT_MAX_RENEWAL_DURATION,
    DEFAULT_REQUEST_TIMEOUT,
    RenewalScheduler,
    Submit,
)
from ._sdk import session_renewal
from ._targets import entity_of, message_lock, seconds, session_lock, timestamp

__all__ = ["AsyncLockRenewer", "LockRenewer"]

_log = logging.getLogger("sbmgmt.renewer")
_Resp = TypeVar("_Resp", bound=OpModel)

_DEFAULT: Any = object()
_DEFAULT_POLL_INTERVAL = 1.0
# Worker threads for sync SDK sessions' own renew_lock calls (each blocks for a reply).
_SDK_WORKERS = 4

#: A duration: seconds, or a ``timedelta``.
Duration = float | timedelta


def _submit_of(client: ManagementClient | AsyncManagementClient | Submit) -> Submit:
    """Requests go through the client's own pipelined submit (one connection); not the
    public ``submit``, which would trace each request again under the renewer's span."""
    if isinstance(client, (ManagementClient, AsyncManagementClient)):
        core = client._core

        def submit(path: str, request: OpRequest[_Resp], timeout: float) -> Future[_Resp]:
            future: Future[_Resp] = Future()
            core.submit(path, request, timeout, None, future)
            return future

        return submit
    if callable(client):
        return client
    raise TypeError(
        "client must be a ManagementClient, an AsyncManagementClient or a submit function, "
        f"got {type(client).__name__}"
    )


def _endpoint_of(client: object) -> Endpoint | None:
    if isinstance(client, (ManagementClient, AsyncManagementClient)):
        return client._core.endpoint
    return None


class _RenewerBase:
    """Registration and stats, shared by the thread and the asyncio renewer."""

    def __init__(
        self,
        client: ManagementClient | AsyncManagementClient | Submit,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_window: float = DEFAULT_BATCH_WINDOW,
        max_renewal_duration: Duration | None = DEFAULT_MAX_RENEWAL_DURATION,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        on_lock_lost: OnLockLost | None = None,
        log_interval: float = 60.0,
        clock: Callable[[], float] = time.time,
        poll_interval: float = _DEFAULT_POLL_INTERVAL,
    ) -> None:
        poll_interval = positive_seconds(poll_interval, "poll_interval")
        if not callable(clock):
            raise TypeError(f"clock must be a function returning epoch seconds, got "
                            f"{type(clock).__name__}")
        self._clock = clock
        self._poll_interval = poll_interval
        self._stopping = False
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._core = RenewalScheduler(
            _submit_of(client),
            self.wake,
            batch_size=batch_size,
            batch_window=batch_window,
            max_renewal_duration=seconds(max_renewal_duration, "max_renewal_duration"),
            request_timeout=request_timeout,
            log_interval=log_interval,
            on_lock_lost=on_lock_lost,
            endpoint=_endpoint_of(client),
        )

    def __repr__(self) -> str:
        s = self._core.stats()
        state = "stopped" if self._stopping else "running" if self._running() else "idle"
        return f"{type(self).__name__}({state}, tracked={s.tracked})"

    def register(
        self,
        entity: object,
        lock: object,
        locked_until: datetime | None = None,
        *,
        max_renewal_duration: Duration | None = _DEFAULT,
        lock_duration: Duration | None = None,
        on_lock_lost: OnLockLost | None = None,
    ) -> None:
        """Keep a message lock alive until it is unregistered, lost, or renewed long enough.

        Registering the same lock again replaces the earlier registration. An SDK message
        (``ServiceBusReceivedMessage``) has its cached ``locked_until_utc`` updated at each
        renewal, so that the SDK still settles it.

        Args:
            entity: The entity the lock is on: its path, an [EntityClient][sbmgmt.EntityClient],
                an SDK receiver, or None for the message's own receiver.
            lock: A lock token (``uuid.UUID`` or its string; then ``locked_until`` is needed), a
                [ReceivedMessage][sbmgmt.ReceivedMessage], or an SDK
                ``ServiceBusReceivedMessage``.
            locked_until: When the lock expires (a UTC datetime); taken from ``lock`` when it is
                a message.
            max_renewal_duration: Seconds (or a ``timedelta``) to renew it for at most, from now;
                None: no limit; by default the renewer's ``max_renewal_duration``.
            lock_duration: The entity's lock duration, when known: renewals start a third of
                it before expiry; by default it is estimated from ``locked_until``.
            on_lock_lost: Called instead of the renewer's ``on_lock_lost`` when this lock is
                lost.

        Raises:
            TypeError: ``entity`` or ``lock`` is of a kind the renewer does not take, or
                ``locked_until`` is not a datetime.
            ValueError: A token that is not a UUID, ``locked_until`` unknown, or a duration that
                is not positive.
            sbmgmt.errors.UnsupportedLockTargetError: An SDK version whose lock-expiry cache the
                renewer does not know (a ``TypeError``).
            RuntimeError: The renewer was stopped.
        """
        resolved = message_lock(lock, locked_until)
        path = entity_of(entity, lock)
        until = timestamp(resolved.locked_until, "register")
        self._ensure_running()
        self._core.register_message(
            path, resolved.token, until, self._clock(),
            lock_duration=seconds(lock_duration, "lock_duration"), on_lock_lost=on_lock_lost,
            target=resolved.target, cache=resolved.cache,
            **self._max_duration(max_renewal_duration),
        )

    def register_session(
        self,
        entity: object,
        session: object,
        locked_until: datetime | None = None,
        *,
        max_renewal_duration: Duration | None = _DEFAULT,
        lock_duration: Duration | None = None,
        on_lock_lost: OnLockLost | None = None,
    ) -> None:
        """Keep a session lock alive (renew-session-lock).

        A [SessionLock][sbmgmt.SessionLock] (or ``AsyncSessionLock``) and an SDK session are
        renewed with their own ``renew_lock()``, on the connection that holds the session, the
        only one the service accepts; an asyncio one needs an
        [AsyncLockRenewer][sbmgmt.renewer.AsyncLockRenewer].

        Args:
            entity: The entity the session is on: its path, an
                [EntityClient][sbmgmt.EntityClient], an SDK receiver, or None for the session's
                own receiver (not with a session id or a ``SessionLock``).
            session: A session id (then ``locked_until`` is needed, and the session must be
                locked on the renewer's client's connection), sbmgmt's own session lock
                (``q.session(id)``), or an SDK ``ServiceBusSession`` (``receiver.session``).
            locked_until: When the lock expires (a UTC datetime); taken from ``session`` when it
                knows it.
            max_renewal_duration: Seconds (or a ``timedelta``) to renew it for at most, from now;
                None: no limit; by default the renewer's ``max_renewal_duration``.
            lock_duration: The entity's lock duration, when known: renewals start a third of
                it before expiry; by default it is estimated from ``locked_until``.
            on_lock_lost: Called instead of the renewer's ``on_lock_lost`` when this lock is
                lost.

        Raises:
            TypeError: ``entity`` or ``session`` is of a kind the renewer does not take.
            ValueError: An empty session id, ``locked_until`` unknown, or a duration that is not
                positive.
            sbmgmt.errors.UnsupportedLockTargetError: An SDK version whose lock-expiry cache the
                renewer does not know.
            RuntimeError: The renewer was stopped.
        """
        resolved = session_lock(session, locked_until)
        path = entity_of(entity, session)
        until = timestamp(resolved.locked_until, "register_session")
        self._ensure_running()
        renew = None if resolved.cache is None and not isinstance(
            session, SessionLock | AsyncSessionLock) else session_renewal(
            session, self._sdk_executor, self._event_loop)
        self._core.register_session(
            path, resolved.session_id, until, self._clock(),
            lock_duration=seconds(lock_duration, "lock_duration"), on_lock_lost=on_lock_lost,
            target=resolved.target, cache=resolved.cache, renew=renew,
            **self._max_duration(max_renewal_duration),
        )

    def unregister(self, entity: object, lock: object) -> bool:
        """Stop renewing a message lock (after completing or abandoning the message).

        An SDK message forgets its lock token once settled: unregister it before settling, or
        pass the token.

        Args:
            entity: As given to [register][sbmgmt.renewer.LockRenewer.register].
            lock: As given to ``register`` (or its lock token).

        Returns:
            True if the lock was registered, False if not.

        Raises:
            TypeError: ``entity`` or ``lock`` is of a kind the renewer does not take.
            ValueError: ``lock`` is not a valid lock token.
        """
        token = message_lock(lock, None).token
        return self._core.unregister_message(entity_of(entity, lock), token)

    def unregister_session(self, entity: object, session: object) -> bool:
        """Stop renewing a session lock.

        Args:
            entity: As given to [register_session][sbmgmt.renewer.LockRenewer.register_session].
            session: As given to ``register_session`` (or its session id).

        Returns:
            True if the session was registered, False if not.

        Raises:
            TypeError: ``entity`` or ``session`` is of a kind the renewer does not take.
        """
        session_id = session_lock(session, None).session_id
        return self._core.unregister_session(entity_of(entity, session), session_id)

    def stats(self) -> RenewerStats:
        """The renewer's counters.

        Returns:
            A snapshot: locks tracked, requests sent, tokens renewed, losses by reason, and how
            late renewals were.
        """
        return self._core.stats()

    def wake(self) -> None:
        """Look at the timeline now, not at the next planned time (thread-safe)."""
        raise NotImplementedError

    def _running(self) -> bool:
        raise NotImplementedError

    def _ensure_running(self) -> None:
        raise NotImplementedError

    def _event_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop an aio SDK session's renewals run on (None: not an asyncio renewer)."""
        return None

    def _sdk_executor(self) -> Executor:
        with self._executor_lock:
            if self._stopping:
                raise RuntimeError("the lock renewer is stopped")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    _SDK_WORKERS, thread_name_prefix="sbmgmt-sdk-renew")
            return self._executor

    def _stop_executor(self) -> None:
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    @staticmethod
    def _max_duration(value: Duration | None) -> dict[str, float | None]:
        if value is _DEFAULT:
            return {}
        return {"max_renewal_duration": seconds(value, "max_renewal_duration")}

    def _sleep_for(self, next_run: float | None) -> float:
        if next_run is None:
            return self._poll_interval
        return min(max(next_run - self._clock(), 0.0), self._poll_interval)

    def _tick(self) -> float | None:
        """One scheduler run; a failure in it is logged and does not stop the renewer."""
        try:
            return self._core.run(self._clock())
        except Exception:
            _log.exception("lock renewer: a scheduling run failed")
            return None


class LockRenewer(_RenewerBase):
    """Keeps message and session locks alive from one background thread.

    Every registered lock is renewed through ``client`` shortly before it expires; the tokens of
    one entity that fall due together leave in one renew-lock request, and all requests are
    pipelined on the client's connection. Use it as a context manager (or ``start()`` /
    ``stop()``); registering starts it too (docs/lock-renewal.md).

    Args:
        client: The client whose connection the renewals go through: a
            [ManagementClient][sbmgmt.ManagementClient], or for tests a ``submit(entity, request,
            timeout) -> Future`` function.
        **settings: The renewer's options, all keywords: ``batch_size`` (the most tokens per
            renew-lock request, default 500), ``batch_window`` (seconds: locks due within it
            leave together, default 1.0), ``max_renewal_duration`` (seconds or ``timedelta`` a
            lock is renewed for at most, None for no limit; default 300, as in the official SDK),
            ``request_timeout`` (seconds one renewal may wait for its reply, default 10),
            ``on_lock_lost`` (called with a [LockLoss][sbmgmt.renewer.LockLoss] when a lock is
            lost or given up), ``log_interval`` (seconds between summary log lines, default 60),
            ``clock`` (epoch seconds, on the clock of the locks' expiries; default ``time.time``)
            and ``poll_interval`` (the longest sleep between looks at the clock, default 1.0).

    Raises:
        TypeError: ``client`` is neither a client nor a function.
        ValueError: An option is out of range (``batch_size`` below 1, a duration or interval
            that is not positive).
    """

    def __init__(self, client: ManagementClient | Submit, **settings: Any) -> None:
        super().__init__(client, **settings)
        self._event = threading.Event()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> LockRenewer:
        """Start the renewer thread (idempotent).

        Returns:
            The renewer itself.

        Raises:
            RuntimeError: The renewer was stopped.
        """
        self._ensure_running()
        return self

    def _ensure_running(self) -> None:
        with self._start_lock:
            if self._stopping:
                raise RuntimeError("the lock renewer is stopped")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="sbmgmt-lock-renewer", daemon=True
                )
                self._thread.start()

    def _running(self) -> bool:
        return self._thread is not None

    def wake(self) -> None:
        """Look at the timeline now, not at the next planned time (thread-safe).

        For example after moving a test clock forward.
        """
        self._event.set()

    def _loop(self) -> None:
        while not self._stopping:
            next_run = self._tick()
            self._event.wait(self._sleep_for(next_run))
            self._event.clear()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop renewing and join the thread; replies still on their way are ignored.

        Locks are not reported lost on stop: they expire at their ``locked_until``. A stopped
        renewer cannot be started again.

        Args:
            timeout: Seconds to wait for the thread to end; None: as long as it takes.


        Raises nothing; stopping twice does nothing.
        """
        with self._start_lock:
            self._stopping = True
            thread = self._thread
        self._core.close()
        self._stop_executor()
        self._event.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def __enter__(self) -> LockRenewer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class AsyncLockRenewer(_RenewerBase):
    """Keeps message and session locks alive from one asyncio task.

    The same scheduling as [LockRenewer][sbmgmt.renewer.LockRenewer]; it runs on the event loop
    it is started on (``async with``, ``await start()``, or the first registration, which must
    happen on that loop). Registering and ``stats()`` are plain methods: call them on that loop.
    ``on_lock_lost`` callbacks run on the loop and must not block.

    Args:
        client: The client whose connection the renewals go through: a
            [AsyncManagementClient][sbmgmt.aio.AsyncManagementClient] (or a ManagementClient), or
            for tests a ``submit(entity, request, timeout) -> Future`` function.
        **settings: The renewer's options, all keywords: ``batch_size`` (the most tokens per
            renew-lock request, default 500), ``batch_window`` (seconds: locks due within it
            leave together, default 1.0), ``max_renewal_duration`` (seconds or ``timedelta`` a
            lock is renewed for at most, None for no limit; default 300, as in the official SDK),
            ``request_timeout`` (seconds one renewal may wait for its reply, default 10),
            ``on_lock_lost`` (called with a [LockLoss][sbmgmt.renewer.LockLoss] when a lock is
            lost or given up), ``log_interval`` (seconds between summary log lines, default 60),
            ``clock`` (epoch seconds, on the clock of the locks' expiries; default ``time.time``)
            and ``poll_interval`` (the longest sleep between looks at the clock, default 1.0).

    Raises:
        TypeError: ``client`` is neither a client nor a function.
        ValueError: An option is out of range (``batch_size`` below 1, a duration or interval
            that is not positive).
    """

    def __init__(
        self, client: AsyncManagementClient | ManagementClient | Submit, **settings: Any
    ) -> None:
        super().__init__(client, **settings)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> AsyncLockRenewer:
        """Start the renewer task, on the running event loop (idempotent).

        Returns:
            The renewer itself.

        Raises:
            RuntimeError: The renewer was stopped, or no event loop is running.
        """
        self._ensure_running()
        return self

    def _ensure_running(self) -> None:
        if self._stopping:
            raise RuntimeError("the lock renewer is stopped")
        if self._task is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError(
                    "an AsyncLockRenewer starts on a running event loop: use 'async with', "
                    "await start(), or register from a coroutine"
                ) from None
            self._event = asyncio.Event()
            self._loop = loop
            self._task = loop.create_task(self._loop_body(), name="sbmgmt-lock-renewer")

    def _running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _event_loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def wake(self) -> None:
        """Look at the timeline now, not at the next planned time (thread-safe).

        For example after moving a test clock forward.
        """
        loop, event = self._loop, self._event
        if loop is None or event is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to wake
            loop.call_soon_threadsafe(event.set)

    async def _loop_body(self) -> None:
        assert self._event is not None
        event = self._event
        while not self._stopping:
            next_run = self._tick()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(event.wait(), self._sleep_for(next_run))
            event.clear()

    async def stop(self) -> None:
        """Stop renewing and await the task; replies still on their way are ignored.

        Locks are not reported lost on stop: they expire at their ``locked_until``. A stopped
        renewer cannot be started again.

        """
        self._stopping = True
        self._core.close()
        self._stop_executor()
        task = self._task
        if task is not None and self._event is not None:
            self._event.set()
            if task is not asyncio.current_task():
                await task

    async def __aenter__(self) -> AsyncLockRenewer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
