"""sbmgmt._protocol.retry: the backoff every waiter uses, and the one retry predicate."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sbmgmt import errors
from sbmgmt._protocol.retry import (
    RECONNECT_BACKOFF,
    RENEWAL_BACKOFF,
    Backoff,
    RetryPolicy,
    is_retryable,
)


@pytest.mark.parametrize("failures", [1, 2, 3, 7, 10_000])
def test_half_jitter_stays_in_the_upper_half_of_the_capped_wait(failures: int) -> None:
    backoff = Backoff(initial=0.2, maximum=5.0)
    wait = min(5.0, 0.2 * 2 ** min(failures - 1, 64))
    for _ in range(200):
        assert wait / 2 <= backoff.delay(failures) <= wait


@pytest.mark.parametrize("failures", [1, 2, 5, 10_000])
def test_additive_jitter_is_tenacitys_wait_exponential_jitter(failures: int) -> None:
    backoff = Backoff(initial=0.1, maximum=5.0, jitter=0.1)
    base = 0.1 * 2 ** min(failures - 1, 64)
    for _ in range(200):
        assert min(base, 5.0) <= backoff.delay(failures) <= min(base + 0.1, 5.0)


def test_the_policies_keep_their_numbers() -> None:
    assert (RECONNECT_BACKOFF.initial, RECONNECT_BACKOFF.maximum) == (0.05, 5.0)
    assert (RENEWAL_BACKOFF.initial, RENEWAL_BACKOFF.maximum) == (0.2, 5.0)


def test_retry_policy_waits_with_its_own_backoff() -> None:
    policy = RetryPolicy(initial_backoff=0.5, max_backoff=3.0, jitter=0.25)
    wait = policy._settings(True, SimpleNamespace(total=1.0))["wait"]
    for attempt, low in ((1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (40, 3.0)):
        for _ in range(100):
            assert low <= wait(SimpleNamespace(attempt_number=attempt)) <= min(low + 0.25, 3.0)


def lost(applied: bool) -> errors.ConnectionLostError:
    return errors.ConnectionLostError("lost", may_have_been_applied=applied)


@pytest.mark.parametrize(("error", "idempotent", "expected"), [
    (errors.ServerBusyError("busy"), False, True),
    (errors.ServerTimeoutError("timeout"), True, True),
    (errors.InternalServerError("500"), True, True),
    (errors.ServerTimeoutError("timeout"), False, False),
    (errors.InternalServerError("500"), False, False),
    (lost(True), True, True),
    (lost(True), False, False),
    (lost(False), False, True),
    (errors.LinkDetachedError("detached", may_have_been_applied=True), False, False),
    (errors.OperationTimeoutError("slow"), True, True),
    (errors.OperationTimeoutError("slow"), False, False),
    (errors.ClientClosedError("closed"), True, False),
    (errors.ProtocolMismatchError("mismatch"), True, False),
    (errors.MessageLockLostError("gone"), True, False),
    (errors.BadRequestError("bad"), True, False),
    (errors.ProtocolError("garbage"), True, False),
    (errors.TransactionLostError("lost", may_have_been_applied=False), True, False),
    (errors.TransportError("the SDK's session: transient"), False, True),
    (ValueError("not ours"), True, False),
], ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value))
def test_is_retryable_is_the_error_kind_and_the_requests_idempotence(
    error: BaseException, idempotent: bool, expected: bool
) -> None:
    assert is_retryable(error, idempotent=idempotent) is expected
    if expected:
        assert isinstance(error, errors.ServiceBusManagementError) and error.retryable
