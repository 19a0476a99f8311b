"""Retries of transient failures: one policy, used by the sync and the asyncio clients.

A call is attempted until it succeeds, fails with an error that is not worth
retrying, runs out of attempts, or would sleep past its total deadline. Waits grow
exponentially with jitter. What is retried (:func:`is_retryable`):

- ServerBusyError (503: the service did not apply the request), always;
- ServerTimeoutError and InternalServerError (408, 500: the outcome is unknown)
  only for idempotent operations; a non-idempotent request answered so is not
  replayed, its error says ``may_have_been_applied``;
- ConnectionLostError when the operation is idempotent, or when the request never
  left (``may_have_been_applied`` is False). A non-idempotent request that was on
  the wire is *not* replayed: its ConnectionLostError says it may have been applied;
- OperationTimeoutError only for idempotent operations.

Everything else (bad requests, lock lost, not found, unauthorized, closed client,
protocol errors) is raised at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

from .errors import (
    OUTCOME_UNKNOWN,
    ClientClosedError,
    ConnectionLostError,
    OperationTimeoutError,
    ServerBusyError,
)

__all__ = ["RetryPolicy", "is_retryable"]

T = TypeVar("T")

def is_retryable(error: BaseException, *, idempotent: bool) -> bool:
    """Whether sending the same request again is safe and may succeed."""
    if isinstance(error, ServerBusyError):
        return True
    if isinstance(error, OUTCOME_UNKNOWN):
        return idempotent
    if isinstance(error, ClientClosedError):
        return False
    if isinstance(error, ConnectionLostError):
        return idempotent or not error.may_have_been_applied
    if isinstance(error, OperationTimeoutError):
        return idempotent
    return False


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded by attempts and a total deadline.

    ``deadline`` (seconds) bounds a whole call, retries included; ``None`` means the
    client's ``timeout``. ``max_attempts=1`` disables retries.
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
        self, attempt: Callable[[float], T], *, idempotent: bool, timeout: float
    ) -> T:
        """Call ``attempt(seconds_left)`` until it succeeds or must give up."""
        clock = _Deadline(self.deadline if self.deadline is not None else timeout, timeout)
        retrying = Retrying(**self._settings(idempotent, clock))
        return retrying(lambda: attempt(clock.attempt_timeout()))

    async def run_async(
        self, attempt: Callable[[float], Awaitable[T]], *, idempotent: bool, timeout: float
    ) -> T:
        """The coroutine twin of :meth:`run` (tenacity's AsyncRetrying, same settings)."""
        clock = _Deadline(self.deadline if self.deadline is not None else timeout, timeout)
        retrying = AsyncRetrying(**self._settings(idempotent, clock))

        async def once() -> T:
            return await attempt(clock.attempt_timeout())

        result: T = await retrying(once)
        return result

    def _settings(self, idempotent: bool, clock: _Deadline) -> dict[str, Any]:
        def retry_if(state: RetryCallState) -> bool:
            outcome = state.outcome
            error = None if outcome is None else outcome.exception()
            return error is not None and is_retryable(error, idempotent=idempotent)

        return {
            "retry": retry_if,
            "stop": stop_after_attempt(self.max_attempts) | stop_before_delay(clock.total),
            "wait": wait_exponential_jitter(
                multiplier=self.initial_backoff, max=self.max_backoff, jitter=self.jitter
            ),
            "reraise": True,
        }


class _Deadline:
    """The time left for a call, and for each of its attempts."""

    __slots__ = ("_end", "_per_attempt", "total")

    def __init__(self, total: float, per_attempt: float) -> None:
        self.total = total
        self._per_attempt = per_attempt
        self._end = time.monotonic() + total

    def attempt_timeout(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise OperationTimeoutError(f"the call's deadline of {self.total:g} s has passed")
        return min(self._per_attempt, left)
