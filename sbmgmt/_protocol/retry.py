"""Retries and backoff: the one place that says what is retried and how long to wait.

Everything that waits before trying again takes its numbers from here: the clients'
:class:`RetryPolicy` (a call retried until it succeeds, fails with an error that is not
worth retrying, runs out of attempts, or would sleep past its total deadline), the I/O
thread's reconnects (:data:`RECONNECT_BACKOFF`) and token refreshes
(:data:`TOKEN_REFRESH_RETRY`), and the lock renewer's retries (:data:`RENEWAL_BACKOFF`).
A change of retry policy is a change of this file.

What is retried is :func:`is_retryable`, the one definition (the renewer, the Spark
pager and the clients all ask it). An error class's ``retryable`` attribute says whether
its *kind* of failure is transient; the predicate adds what the request is:

- ServerBusyError (503: the service did not apply the request), always;
- ServerTimeoutError and InternalServerError (408, 500: the outcome is unknown)
  only for idempotent operations; a non-idempotent request answered so is not
  replayed, its error says ``may_have_been_applied``;
- ConnectionLostError when the operation is idempotent, or when the request never
  left (``may_have_been_applied`` is False). A non-idempotent request that was on
  the wire is *not* replayed: its ConnectionLostError says it may have been applied;
- OperationTimeoutError only for idempotent operations.

Everything else (bad requests, lock lost, not found, unauthorized, closed client,
protocol errors, transaction errors) is raised at once. A request inside a transaction
is never retried (the clients send it once: a transaction's work is not replayed).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    stop_after_attempt,
)
from tenacity.stop import stop_base

from ..errors import (
    OUTCOME_UNKNOWN,
    ConnectionLostError,
    OperationError,
    OperationTimeoutError,
    ServiceBusManagementError,
)

__all__ = [
    "RECONNECT_BACKOFF",
    "RENEWAL_BACKOFF",
    "TOKEN_REFRESH_RETRY",
    "Backoff",
    "CallClock",
    "OnRetry",
    "RetryPolicy",
    "is_retryable",
]

T = TypeVar("T")
#: Told before each wait between two attempts (tenacity's ``before_sleep``): telemetry.
OnRetry = Callable[[RetryCallState], None]

# Past this many failures the wait is the cap anyway (and 2**n stays a float).
_MAX_DOUBLINGS = 64


def is_retryable(error: BaseException, *, idempotent: bool) -> bool:
    """Whether sending the same request again is safe and may succeed."""
    if not isinstance(error, ServiceBusManagementError) or not error.retryable:
        return False
    if isinstance(error, OUTCOME_UNKNOWN):  # 408, 500: the service may have applied it
        return idempotent
    if isinstance(error, OperationError):  # 503: it did not
        return True
    if isinstance(error, ConnectionLostError):
        return idempotent or not error.may_have_been_applied
    if isinstance(error, OperationTimeoutError):
        return idempotent
    return True  # any other transient kind (the renewer's SDK path raises a TransportError)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: the wait after the n-th failure is ``initial * 2**(n-1)``,
    at most ``maximum``, jittered.

    ``jitter=None`` draws the wait from the upper half of that (``[w/2, w]``: spread, and
    never more than the cap); a number adds up to that many seconds before the cap.
    """

    initial: float
    maximum: float
    jitter: float | None = None

    def delay(self, failures: int) -> float:
        """The seconds to wait after ``failures`` failures in a row (``failures >= 1``)."""
        wait = self.initial * 2.0 ** min(max(failures - 1, 0), _MAX_DOUBLINGS)
        if self.jitter is None:
            wait = min(wait, self.maximum)
            return random.uniform(wait / 2, wait)
        return max(0.0, min(wait + random.uniform(0, self.jitter), self.maximum))


#: Between attempts to open the I/O thread's connection (while there is work).
RECONNECT_BACKOFF = Backoff(initial=0.05, maximum=5.0)
#: Between attempts to renew a lock after a transient error (the renewer also keeps each
#: wait under half the lock's remaining time).
RENEWAL_BACKOFF = Backoff(initial=0.2, maximum=5.0)
#: A failed token refresh is tried again as if the token expired this many seconds later.
TOKEN_REFRESH_RETRY = 10.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a client retries a failed call: exponential backoff with jitter, bounded by attempts and
    by a total deadline.

    Passed as ``retry=`` to a client (``ManagementClient.from_connection_string(conn_str,
    retry=RetryPolicy(max_attempts=3))``). What is retried is decided by the error and the
    operation: a 503 always; a lost connection, a 408 or a 500 only for idempotent operations (or
    a request that never left); nothing else (docs/errors.md). The wait after the n-th failure is
    ``initial_backoff * 2**(n-1)`` plus up to ``jitter`` seconds, at most ``max_backoff``.

    Attributes:
        max_attempts: The most attempts per call, the first included (1: no retries).
        initial_backoff: Seconds to wait after the first failure.
        max_backoff: The longest wait between attempts, in seconds.
        jitter: Up to this many random seconds added to each wait.
        deadline: Seconds a whole call may take, retries included; None: the client's
            ``timeout``.

    Raises:
        ValueError: ``max_attempts`` is below 1.
    """

    max_attempts: int = 5
    initial_backoff: float = 0.1
    max_backoff: float = 5.0
    jitter: float = 0.1
    deadline: float | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")

    def run(
        self, attempt: Callable[[float], T], *, idempotent: bool, timeout: float,
        on_retry: OnRetry | None = None,
    ) -> T:
        """Call ``attempt(seconds_left)`` until it succeeds or must give up (the clients' own use).

        The first attempt runs directly (a call that succeeds costs no retry machinery); if it
        fails with an error worth retrying, tenacity takes over.

        Args:
            attempt: One attempt; it gets the seconds it may take.
            idempotent: Whether the operation may be sent again after an unknown outcome.
            timeout: The client's timeout (the deadline when ``deadline`` is None, and the
                longest attempt).
            on_retry: Called before each wait with tenacity's retry state (the failed
                attempt, its number, the wait): the telemetry's retry events; None: nothing.

        Returns:
            What the successful attempt returned.

        Raises:
            Exception: The last attempt's error, when it is not worth retrying, the attempts ran
                out, or the next wait would pass the deadline.
        """
        clock = self.clock(timeout)
        try:
            return attempt(clock.attempt_timeout())
        except Exception as exc:
            return self.after(exc, attempt, idempotent=idempotent, clock=clock,
                              on_retry=on_retry)

    async def run_async(
        self, attempt: Callable[[float], Awaitable[T]], *, idempotent: bool, timeout: float,
        on_retry: OnRetry | None = None,
    ) -> T:
        """The coroutine twin of [run][sbmgmt.RetryPolicy.run] (tenacity's ``AsyncRetrying``).

        Args:
            attempt: One attempt, awaited; it gets the seconds it may take.
            idempotent: Whether the operation may be sent again after an unknown outcome.
            timeout: The client's timeout.
            on_retry: As for [run][sbmgmt.RetryPolicy.run].

        Returns:
            What the successful attempt returned.

        Raises:
            Exception: The last attempt's error, as for ``run``.
        """
        clock = self.clock(timeout)
        try:
            return await attempt(clock.attempt_timeout())
        except Exception as exc:
            return await self.after_async(exc, attempt, idempotent=idempotent, clock=clock,
                                          on_retry=on_retry)

    def clock(self, timeout: float) -> CallClock:
        """The clock of a call that starts now (the clients' own use).

        Args:
            timeout: The client's timeout: each attempt's longest, and the total deadline when
                ``deadline`` is None.

        Returns:
            The call's clock: its total deadline and each attempt's time-out.

        Raises:
            sbmgmt.errors.OperationTimeoutError: Later, from ``attempt_timeout()``, once the
                deadline has passed.
        """
        return CallClock(self.deadline if self.deadline is not None else timeout, timeout)

    def after(self, first: Exception, attempt: Callable[[float], T], *, idempotent: bool,
              clock: CallClock, on_retry: OnRetry | None = None) -> T:
        """Go on after a call's first attempt failed with ``first`` (the clients' own use).

        Args:
            first: The first attempt's error.
            attempt: One attempt; it gets the seconds it may take.
            idempotent: Whether the operation may be sent again after an unknown outcome.
            clock: The call's clock (from [clock][sbmgmt.RetryPolicy.clock]).
            on_retry: Called before each wait with tenacity's retry state (the failed
                attempt, its number, the wait): the telemetry's retry events; None: nothing.

        Returns:
            What a later, successful attempt returned.

        Raises:
            Exception: ``first`` when it is not worth retrying; else the last attempt's error.
        """
        self._first_failure(first, idempotent)
        retrying = Retrying(**self._settings(idempotent, clock, on_retry))
        return retrying(_after(first, lambda: attempt(clock.attempt_timeout())))

    async def after_async(self, first: Exception, attempt: Callable[[float], Awaitable[T]],
                          *, idempotent: bool, clock: CallClock,
                          on_retry: OnRetry | None = None) -> T:
        """The coroutine twin of [after][sbmgmt.RetryPolicy.after].

        Args:
            first: The first attempt's error.
            attempt: One attempt, awaited; it gets the seconds it may take.
            idempotent: Whether the operation may be sent again after an unknown outcome.
            clock: The call's clock.
            on_retry: As for [after][sbmgmt.RetryPolicy.after].

        Returns:
            What a later, successful attempt returned.

        Raises:
            Exception: ``first`` when it is not worth retrying; else the last attempt's error.
        """
        self._first_failure(first, idempotent)
        retrying = AsyncRetrying(**self._settings(idempotent, clock, on_retry))
        again = _after(first, lambda: attempt(clock.attempt_timeout()))

        async def once() -> T:
            return await again()

        result: T = await retrying(once)
        return result

    def _first_failure(self, error: Exception, idempotent: bool) -> None:
        """Raise the first attempt's error unless the call goes on."""
        if self.max_attempts == 1 or not is_retryable(error, idempotent=idempotent):
            raise error

    def _settings(self, idempotent: bool, clock: CallClock,
                  on_retry: OnRetry | None = None) -> dict[str, Any]:
        backoff = Backoff(self.initial_backoff, self.max_backoff, self.jitter)

        def retry_if(state: RetryCallState) -> bool:
            outcome = state.outcome
            error = None if outcome is None else outcome.exception()
            return error is not None and is_retryable(error, idempotent=idempotent)

        settings: dict[str, Any] = {
            "retry": retry_if,
            "stop": stop_after_attempt(self.max_attempts) | _OutOfTime(clock),
            "wait": lambda state: backoff.delay(state.attempt_number),
            "reraise": True,
        }
        if on_retry is not None:
            settings["before_sleep"] = on_retry
        return settings


def _after(first: Exception, again: Callable[[], T]) -> Callable[[], T]:
    """An attempt that raises ``first`` the first time (the failure tenacity takes over
    from), then calls ``again``."""
    replay = [first]

    def attempt() -> T:
        if replay:
            raise replay.pop()
        return again()

    return attempt


class _OutOfTime(stop_base):
    """tenacity's ``stop_before_delay`` on the call's own clock (the first attempt ran
    before tenacity started)."""

    def __init__(self, clock: CallClock) -> None:
        self._clock = clock

    def __call__(self, retry_state: RetryCallState) -> bool:
        upcoming = retry_state.upcoming_sleep or 0.0
        return self._clock.elapsed() + upcoming >= self._clock.total


class CallClock:
    """The time left for a call, and for each of its attempts."""

    __slots__ = ("_end", "_per_attempt", "_start", "total")

    def __init__(self, total: float, per_attempt: float) -> None:
        self.total = total
        self._per_attempt = per_attempt
        self._start = time.monotonic()
        self._end = self._start + total

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def attempt_timeout(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise OperationTimeoutError(f"the call's deadline of {self.total:g} s has passed")
        return min(self._per_attempt, left)
