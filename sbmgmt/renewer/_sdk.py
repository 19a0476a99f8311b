"""Renewing a session lock through the session object that holds it.

The service applies renew-session-lock only on the connection whose receiver link
holds the session (named in the request's ``associated-link-name``); a renewer on its
own connection is refused. A session object of the official SDK, or sbmgmt's own
``SessionLock``, is therefore renewed with its own ``renew_lock`` (which sends the
request on the holder's connection and updates the object's cached expiry): a sync
call runs on a worker thread of the renewer, a coroutine on the renewer's event loop. Either way the
scheduler sees a ``concurrent.futures.Future`` of a ``renew_session_lock.Response``,
and the SDK's errors become sbmgmt's: a lost lock is :class:`SessionLockLostError`,
an error the SDK marks retryable a :class:`TransportError`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from concurrent.futures import Executor, Future
from datetime import datetime
from typing import Any

from ..errors import SessionLockLostError, TransportError, UnsupportedLockTargetError
from ..ops import renew_session_lock
from ._timeline import Renew

__all__ = ["session_renewal"]

_LOCK_LOST = frozenset({"SessionLockLostError", "MessageLockLostError"})


def session_renewal(
    session: object,
    executor: Callable[[], Executor],
    loop: Callable[[], asyncio.AbstractEventLoop | None],
) -> Renew:
    """How to renew an SDK ``session`` on its own receiver's connection.

    ``executor()`` gives the worker threads for a sync session, ``loop()`` the event
    loop an aio session's coroutine runs on (None: this renewer has none, refused).
    """
    renew_lock = getattr(session, "renew_lock", None)
    if not callable(renew_lock):
        raise UnsupportedLockTargetError(
            f"this {type(session).__name__} has no renew_lock: the renewer cannot renew it "
            "on its receiver's connection (the only one the service accepts)"
        )
    if inspect.iscoroutinefunction(renew_lock):
        running = loop()
        if running is None:
            raise UnsupportedLockTargetError(
                f"this {type(session).__name__} is an asyncio session: register it with "
                "an AsyncLockRenewer"
            )

        def renew_async(timeout: float) -> Future[renew_session_lock.Response]:
            return _converted(asyncio.run_coroutine_threadsafe(
                renew_lock(timeout=timeout), running))

        return renew_async

    def renew_sync(timeout: float) -> Future[renew_session_lock.Response]:
        return _converted(executor().submit(renew_lock, timeout=timeout))

    return renew_sync


def _converted(inner: Future[Any]) -> Future[renew_session_lock.Response]:
    """A future of the renew-session-lock Response for ``inner``'s datetime."""
    outer: Future[renew_session_lock.Response] = Future()

    def done(finished: Future[Any]) -> None:
        if finished.cancelled():
            outer.cancel()
            return
        error = finished.exception()
        if error is not None:
            outer.set_exception(_mapped(error))
            return
        expiry = finished.result()
        if not isinstance(expiry, datetime):
            outer.set_exception(TypeError(
                f"the SDK's renew_lock returned {type(expiry).__name__}, not a datetime"))
            return
        outer.set_result(renew_session_lock.Response(expiration=expiry))

    inner.add_done_callback(done)
    return outer


def _mapped(error: BaseException) -> BaseException:
    """The sbmgmt error for an SDK exception (classified by name: no SDK import)."""
    name = type(error).__name__
    if name in _LOCK_LOST:
        return SessionLockLostError(
            f"{renew_session_lock.OPERATION} through the SDK's session: {error}",
            operation=renew_session_lock.OPERATION,
        )
    if getattr(error, "_retryable", False):
        return TransportError(
            f"{renew_session_lock.OPERATION} through the SDK's session failed ({name}): {error}",
            operation=renew_session_lock.OPERATION,
        )
    return error
