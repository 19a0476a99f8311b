"""Transactions: declared on the client's `$coordinator` link, used by schedule-message and
update-disposition, committed or rolled back; against the fake namespace (sync and asyncio)
and, for what the fake cannot stage (a discharge that is never answered, the bytes of each
transfer's state), against the silent server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from proton import Described

from fakes import FakeNamespace
from sbmgmt import ops
from sbmgmt._engine.coordinator_link import Control
from sbmgmt.aio import AsyncManagementClient, AsyncTransaction
from sbmgmt.client import ManagementClient, Transaction
from sbmgmt.errors import (
    TransactionDeclareError,
    TransactionLostError,
    TransactionOutcomeUnknownError,
    TransactionRolledBackError,
    TransactionTimeoutError,
    TransactionUnknownError,
    error_for_status,
    transaction_refusal,
)
from sbmgmt.message import Message, MessageState, ReceivedMessage
from tests._waiting import wait_until

from ._silent_server import TXN_ID, SilentServer

AT = datetime(2030, 1, 1, tzinfo=timezone.utc)


def _connection_string(port: int) -> str:
    return (f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true")


def _deferred(fake: FakeNamespace, client: ManagementClient, entity: str,
              count: int) -> list[ReceivedMessage]:
    """``count`` deferred messages of ``entity``, received (locked) by sequence number."""
    fake.send(entity, *[Message(body=f"m{i}".encode()) for i in range(count)])
    locked = fake.receive_and_lock(entity, count)
    q = client.entity(entity)
    q.update_disposition([m.lock_token for m in locked if m.lock_token], "defered")
    return q.receive_deferred_messages([m.sequence_number or 0 for m in locked])


def _tokens(messages: list[ReceivedMessage]) -> list[uuid.UUID]:
    return [m.lock_token for m in messages if m.lock_token is not None]


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    assert wait_until(condition), what


# ---- against the fake --------------------------------------------------------------------


def test_commit_applies_everything_at_once(fake: FakeNamespace,
                                           client: ManagementClient) -> None:
    q = client.entity("q")
    deferred = _deferred(fake, client, "q", 2)
    before = fake.accounting("q")
    with client.transaction() as txn:
        assert txn.txn_id
        numbers = q.schedule_messages([Message(body=b"a"), Message(body=b"b")], AT,
                                      transaction=txn)
        q.update_disposition(_tokens(deferred), "completed", transaction=txn)
        assert fake.accounting("q") == before  # staged, not applied
        assert q.peek_messages(max(numbers), 5) == []
    after = fake.accounting("q")
    assert (after["scheduled"], after["completed"], after["locked"]) == (2, 2, 0)
    scheduled = [m.sequence_number for m in q.peek_messages(1, 10)
                 if m.state is MessageState.SCHEDULED]
    assert scheduled == numbers


def test_rollback_applies_nothing(fake: FakeNamespace, client: ManagementClient) -> None:
    q = client.entity("q")
    deferred = _deferred(fake, client, "q", 2)
    before = fake.accounting("q")
    with client.transaction() as txn:
        q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
        q.update_disposition(_tokens(deferred), "completed", transaction=txn)
        txn.rollback()
    assert fake.accounting("q") == before
    q.update_disposition(_tokens(deferred), "completed")  # the locks are still ours
    assert fake.accounting("q")["completed"] == 2


def test_an_exception_inside_the_block_rolls_back(fake: FakeNamespace,
                                                  client: ManagementClient) -> None:
    q = client.entity("q")
    deferred = _deferred(fake, client, "q", 1)
    before = fake.accounting("q")
    with pytest.raises(KeyError, match="the block's own"), client.transaction() as txn:
        q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
        q.update_disposition(_tokens(deferred), "suspended", transaction=txn)
        raise KeyError("the block's own")
    assert fake.accounting("q") == before
    assert fake.accounting("q/$DeadLetterQueue")["accepted"] == 0


def test_scheduling_and_settling_deferred_messages_are_all_or_nothing(
        fake: FakeNamespace, client: ManagementClient) -> None:
    """One settled lock expires before the commit: nothing is applied, the schedule neither."""
    fake.add_queue("short", lock_duration=timedelta(seconds=30))
    q = client.entity("short")
    deferred = _deferred(fake, client, "short", 2)
    with pytest.raises(TransactionRolledBackError) as info, client.transaction() as txn:
        q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
        q.update_disposition(_tokens(deferred), "completed", transaction=txn)
        fake.clock.advance(31)  # the locks expire; the fake's clock, no SDK reads it
    assert info.value.error_condition == "amqp:transaction:rollback"
    after = fake.accounting("short")
    assert (after["scheduled"], after["completed"], after["deferred"]) == (0, 0, 2)


def test_a_transaction_left_open_is_rolled_back_after_two_minutes(
        fake: FakeNamespace, client: ManagementClient) -> None:
    """The client goes silent between declare and discharge: nothing is ever applied."""
    fake.add_queue("long", lock_duration=timedelta(minutes=5))
    q = client.entity("long")
    deferred = _deferred(fake, client, "long", 1)
    before = fake.accounting("long")
    txn = client.transaction().__enter__()
    q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
    q.update_disposition(_tokens(deferred), "completed", transaction=txn)
    fake.clock.advance(119)
    assert fake.accounting("long") == before
    fake.clock.advance(2)  # past the service's 2 minutes: rolled back
    assert fake.accounting("long") == before
    with pytest.raises(TransactionTimeoutError, match="amqp:transaction:timeout"):
        q.schedule_messages([Message(body=b"b")], AT, transaction=txn)
    with pytest.raises(TransactionTimeoutError):
        txn.commit()
    assert fake.accounting("long") == before


def test_a_lost_connection_fails_the_transaction_and_commits_nothing(
        fake: FakeNamespace, client: ManagementClient) -> None:
    q = client.entity("q")
    with pytest.raises(TransactionLostError) as info, client.transaction() as txn:
        q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
        assert fake.faults.close_connections() == 1
        q.schedule_messages([Message(body=b"b")], AT, transaction=txn)
    assert "nothing done in it was committed" in str(info.value)
    assert info.value.may_have_been_applied is False
    assert not info.value.retryable
    assert fake.accounting("q")["accepted"] == 0
    assert q.peek_messages() == []  # the client itself goes on, on a new connection


def test_committing_after_the_connection_was_lost_says_nothing_was_committed(
        fake: FakeNamespace, client: ManagementClient) -> None:
    q = client.entity("q")
    txn = client.transaction().__enter__()
    q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
    fake.faults.close_connections()
    _wait_for(lambda: txn.state.lost is not None, "the client noticed the lost connection")
    with pytest.raises(TransactionLostError, match="nothing done in it was committed"):
        txn.commit()
    assert fake.accounting("q")["accepted"] == 0


def test_a_transaction_belongs_to_its_client_and_its_block(fake: FakeNamespace,
                                                           client: ManagementClient) -> None:
    q = client.entity("q")
    txn = client.transaction()
    with pytest.raises(ValueError, match="transaction: cannot"):
        q.schedule_messages([Message(body=b"a")], AT, transaction=txn)  # not declared yet
    other = ManagementClient.from_connection_string(fake.connection_string, timeout=10)
    with other, other.transaction() as foreign, pytest.raises(ValueError, match="another client"):
        q.schedule_messages([Message(body=b"a")], AT, transaction=foreign)
    with txn:
        pass
    with pytest.raises(ValueError, match="committed"):
        q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
    with pytest.raises(ValueError, match="already committed"):
        txn.commit()
    with pytest.raises(ValueError, match="transaction"):
        ops.peek_message.Request(from_sequence_number=1, message_count=1,
                                 transaction=txn)  # type: ignore[call-arg]
    assert fake.accounting("q")["accepted"] == 0


def test_raw_requests_take_the_transaction(fake: FakeNamespace,
                                           client: ManagementClient) -> None:
    q = client.entity("q")
    with client.transaction() as txn:
        response = q.send_request(ops.schedule_message.Request(
            messages=(Message(body=b"x", message_id="m", scheduled_enqueue_time=AT),),
            transaction=txn))
        assert fake.accounting("q")["accepted"] == 0
    assert fake.accounting("q")["scheduled"] == 1
    assert len(response.sequence_numbers) == 1


def test_asyncio_commit_rollback_and_lost_connection(fake: FakeNamespace) -> None:
    async def main() -> None:
        async with AsyncManagementClient.from_connection_string(
                fake.connection_string, timeout=10) as client:
            q = client.entity("q")
            async with client.transaction() as txn:
                numbers = await q.schedule_messages([Message(body=b"a")], AT, transaction=txn)
                assert fake.accounting("q")["accepted"] == 0
            assert fake.accounting("q")["scheduled"] == 1
            with pytest.raises(RuntimeError):
                async with client.transaction() as txn:
                    await q.cancel_scheduled_messages(numbers)  # not in the transaction
                    await q.schedule_messages([Message(body=b"b")], AT, transaction=txn)
                    raise RuntimeError("rolled back")
            assert fake.accounting("q")["cancelled"] == 1
            assert fake.accounting("q")["accepted"] == 1
            async with client.transaction() as txn:
                await q.schedule_messages([Message(body=b"c")], AT, transaction=txn)
                await txn.rollback()
            with pytest.raises(TransactionLostError):
                async with client.transaction() as txn:
                    fake.faults.close_connections()
                    await q.schedule_messages([Message(body=b"d")], AT, transaction=txn)
            assert fake.accounting("q")["accepted"] == 1

    asyncio.run(main())


def test_asyncio_settles_deferred_messages_in_a_transaction(
        fake: FakeNamespace, client: ManagementClient) -> None:
    deferred = _deferred(fake, client, "q", 2)

    async def main() -> None:
        async with AsyncManagementClient.from_connection_string(
                fake.connection_string, timeout=10) as other:
            q = other.entity("q")
            async with other.transaction() as txn:
                await q.update_disposition(_tokens(deferred), "completed", transaction=txn)
                assert fake.accounting("q")["completed"] == 0
            assert fake.accounting("q")["completed"] == 2

    asyncio.run(main())


# ---- against the silent server -------------------------------------------------------------


def _states_after(silent: SilentServer, count: int) -> list[tuple[int, list[bytes]]]:
    _wait_for(lambda: len(silent.states) >= count, f"{count} requests arrived")
    return list(silent.states)


def test_the_txn_id_rides_on_each_transactional_transfer(silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=30) as client:
        q = client.entity("q")
        txn = client.transaction().__enter__()
        assert txn.txn_id == TXN_ID
        q.submit(ops.schedule_message.Request(
            messages=(Message(body=b"x", message_id="m", scheduled_enqueue_time=AT),),
            transaction=txn))
        q.submit(ops.update_disposition.Request(
            disposition_status="completed", lock_tokens=(uuid.uuid4(),), transaction=txn))
        q.submit(ops.peek_message.Request(from_sequence_number=1, message_count=1))
        states = _states_after(silent, 3)
    assert states[0] == (0x34, [TXN_ID])
    assert states[1] == (0x34, [TXN_ID])
    assert states[2][0] != 0x34  # no transaction, no transactional-state
    declare = silent.controls[0]
    assert isinstance(declare, Described) and declare.descriptor == 0x31


def test_a_commit_whose_outcome_never_arrives_may_have_been_applied(
        silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=30) as client:
        txn: Transaction = client.transaction().__enter__()
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(txn.commit)
            _wait_for(lambda: len(silent.controls) == 2, "the discharge arrived")
            discharge = silent.controls[1]
            assert discharge.descriptor == 0x32 and discharge.value == [TXN_ID, False]
            silent.stop()
            with pytest.raises(TransactionOutcomeUnknownError) as info:
                done.result(10)
    assert info.value.may_have_been_applied is True
    assert "may have been applied" in str(info.value)


def test_a_rollback_whose_outcome_never_arrives_is_a_rollback(silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=30) as client:
        txn = client.transaction().__enter__()
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(txn.rollback)
            _wait_for(lambda: len(silent.controls) == 2, "the discharge arrived")
            assert silent.controls[1].value == [TXN_ID, True]
            silent.stop()
            assert done.result(10) is None


def test_a_refused_declare_is_typed_and_opens_nothing(silent: SilentServer) -> None:
    silent.refuse_declares = "amqp:resource-limit-exceeded"
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=30) as client:
        txn = client.transaction()
        with pytest.raises(TransactionDeclareError, match="resource-limit-exceeded") as info:
            txn.__enter__()
        assert info.value.error_condition == "amqp:resource-limit-exceeded"
        assert txn.txn_id is None
        with pytest.raises(ValueError, match="transaction: cannot"):
            client.entity("q").schedule_messages([Message(body=b"a")], AT, transaction=txn)


@pytest.mark.parametrize(("operation", "condition", "expected"), [
    ("declare", "amqp:not-allowed", TransactionDeclareError),
    ("declare", None, TransactionDeclareError),
    ("discharge", "amqp:transaction:unknown-id", TransactionUnknownError),
    ("discharge", "amqp:transaction:timeout", TransactionTimeoutError),
    ("discharge", "amqp:transaction:rollback", TransactionRolledBackError),
])
def test_coordinator_refusals_map_through_the_one_table(
        operation: str, condition: str | None, expected: type[Exception]) -> None:
    error = transaction_refusal(operation, condition, "why")
    assert type(error) is expected
    assert not error.retryable
    assert error.error_condition == condition


def test_a_management_reply_with_a_transaction_condition_is_a_transaction_error() -> None:
    error = error_for_status("com.microsoft:schedule-message", 400,
                             "amqp:transaction:unknown-id", "not open")
    assert isinstance(error, TransactionUnknownError)
    assert error.status_code == 400


def test_a_commit_with_no_outcome_in_time_may_have_been_applied(silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=0.5) as client:
        txn = client.transaction().__enter__()
        with pytest.raises(TransactionOutcomeUnknownError, match="no outcome within") as info:
            txn.commit()
        assert info.value.may_have_been_applied is True
        with pytest.raises(ValueError, match="already discharged with an unknown outcome"):
            txn.rollback()


def test_a_commit_lost_with_its_connection_on_the_way_leaves_the_transaction_rolled_back(
        ) -> None:
    """The I/O side found the connection gone before the discharge went out (it fails
    the discharge with TransactionLostError): nothing was committed, and the transaction
    says so afterwards."""
    def lost_on_the_way(control: Control) -> None:
        if control.fail is None:  # the declare
            control.state.txn_id = TXN_ID
            control.future.set_result(None)
        else:
            control.future.set_exception(TransactionLostError(
                "discharge: its connection was closed; nothing done in it was committed",
                operation="discharge"))

    async def main() -> AsyncTransaction:
        txn = AsyncTransaction(object(), lost_on_the_way, 5.0)
        await txn.__aenter__()
        with pytest.raises(TransactionLostError, match="nothing done in it was committed"):
            await txn.commit()
        with pytest.raises(ValueError, match="already rolled back"):
            await txn.rollback()
        return txn

    assert repr(asyncio.run(main())) == "AsyncTransaction(rolled back)"
