"""Each fault x each management operation, through sbmgmt's client against the fake.

Every call either returns the right result (after retries where the client may retry)
or raises the typed error within its deadline; non-idempotent operations are never
applied twice (the fake's ``applied`` counter); nothing hangs and no thread is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.errors import (
    ConnectionLostError,
    OperationTimeoutError,
    ServiceBusManagementError,
)

from ._cases import CASES, Case
from .conftest import wait_until

#: generous where a reply is expected (a loaded machine must not fail the test) ...
ATTEMPT_TIMEOUT = 5.0
#: ... short where a reply is lost on purpose (idempotent calls are retried after it)
LOST_REPLY_TIMEOUT = 0.5
RETRY = RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.05, deadline=15.0)
CASE_IDS = [case.operation.split(":")[1] for case in CASES]


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string,
                                                 timeout=ATTEMPT_TIMEOUT, retry=RETRY) as c:
        yield c


@pytest.fixture
def short_client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string,
                                                 timeout=LOST_REPLY_TIMEOUT, retry=RETRY) as c:
        yield c


def _applied(fake: FakeNamespace, case: Case) -> int:
    return fake.applied(case.entity, case.operation)


def _succeeds_once(fake: FakeNamespace, client: ManagementClient, case: Case) -> None:
    prepared = case.prepare(fake, client)
    before = _applied(fake, case)
    result = case.run(client, prepared)
    case.check(fake, prepared, result)
    assert _applied(fake, case) - before == 1


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_latency(fake: FakeNamespace, client: ManagementClient, case: Case) -> None:
    fake.faults.latency(0.05, jitter=0.02, entity=case.entity, operation=case.operation)
    _succeeds_once(fake, client, case)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_server_busy_is_retried_and_not_applied(fake: FakeNamespace, client: ManagementClient,
                                                case: Case) -> None:
    handle = fake.faults.server_busy(2, entity=case.entity, operation=case.operation)
    _succeeds_once(fake, client, case)
    assert handle.hits == 2


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_duplicate_reply(fake: FakeNamespace, client: ManagementClient, case: Case) -> None:
    fake.faults.duplicate_replies(1, entity=case.entity, operation=case.operation)
    _succeeds_once(fake, client, case)


def _one_reply_lost(fake: FakeNamespace, setup: ManagementClient, client: ManagementClient,
                    case: Case) -> None:
    """After one lost reply: idempotent calls are replayed, the others time out."""
    prepared = case.prepare(fake, setup)
    before = _applied(fake, case)
    if case.idempotent:
        try:
            result = case.run(client, prepared)
        except ServiceBusManagementError as error:     # the replay found it already done
            assert type(error).__name__ in case.replay_errors
        else:
            case.check(fake, prepared, result)
        assert _applied(fake, case) - before >= 1
    else:
        with pytest.raises(OperationTimeoutError):
            case.run(client, prepared)
        assert _applied(fake, case) - before == 1


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_dropped_reply(fake: FakeNamespace, client: ManagementClient,
                       short_client: ManagementClient, case: Case) -> None:
    fake.faults.drop_replies(1, entity=case.entity, operation=case.operation)
    _one_reply_lost(fake, client, short_client, case)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_wrong_correlation_id(fake: FakeNamespace, client: ManagementClient,
                              short_client: ManagementClient, case: Case) -> None:
    fake.faults.wrong_correlation_id(1, entity=case.entity, operation=case.operation)
    _one_reply_lost(fake, client, short_client, case)


@pytest.mark.parametrize("kind", ["detach", "close"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_link_or_connection_lost_mid_flight(fake: FakeNamespace, case: Case, kind: str) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5.0,
                                                 retry=RETRY) as client:
        prepared = case.prepare(fake, client)
        before = _applied(fake, case)
        pause = fake.faults.pause(entity=case.entity, operation=case.operation)
        with ThreadPoolExecutor(1) as pool:
            call = pool.submit(case.run, client, prepared)
            wait_until(lambda: _applied(fake, case) > before, "the request to be applied")
            if kind == "detach":
                assert fake.faults.detach_management_link(case.entity) >= 1
            else:
                assert fake.faults.close_connections() >= 1
            pause.remove()
            if case.idempotent:
                try:
                    case.check(fake, prepared, call.result(timeout=10))
                except ServiceBusManagementError as error:
                    assert type(error).__name__ in case.replay_errors
            else:
                with pytest.raises(ConnectionLostError) as caught:
                    call.result(timeout=10)
                assert caught.value.may_have_been_applied
                assert _applied(fake, case) - before == 1
        # the client is still usable afterwards
        assert isinstance(client.entity(case.entity).peek_messages(), list)
