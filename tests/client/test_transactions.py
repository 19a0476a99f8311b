"""A transaction id rides on the request's transfer as transactional-state (0x34)."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest

from sbmgmt import ops
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message

from ._silent_server import SilentServer

TXN = b"txn-0001"
AT = datetime(2030, 1, 1, tzinfo=timezone.utc)


def _connection_string(port: int) -> str:
    return (f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true")


def _states_after(silent: SilentServer, count: int) -> list[tuple[int, list[bytes]]]:
    deadline = time.monotonic() + 10
    while len(silent.states) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return list(silent.states)


def test_transactional_requests_carry_the_txn_id_on_the_transfer(silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=30) as client:
        q = client.entity("q")
        q.submit(ops.schedule_message.Request(
            messages=(Message(body=b"x", message_id="m", scheduled_enqueue_time=AT),),
            transaction_id=TXN))
        q.submit(ops.update_disposition.Request(
            disposition_status="completed", lock_tokens=(uuid.uuid4(),), transaction_id=TXN))
        q.submit(ops.peek_message.Request(from_sequence_number=1, message_count=1))
        states = _states_after(silent, 3)
    assert states[0] == (0x34, [TXN])
    assert states[1] == (0x34, [TXN])
    assert states[2][0] != 0x34  # no transaction, no transactional-state


def test_transaction_ids_are_validated_and_only_on_transactional_operations() -> None:
    with pytest.raises(ValueError, match="transaction_id"):
        ops.update_disposition.Request(disposition_status="completed",
                                       lock_tokens=(uuid.uuid4(),), transaction_id=b"")
    with pytest.raises(ValueError, match="transaction_id"):
        ops.peek_message.Request(from_sequence_number=1, message_count=1,
                                 transaction_id=TXN)  # type: ignore[call-arg]


def test_update_disposition_method_passes_the_transaction(silent: SilentServer) -> None:
    with ManagementClient.from_connection_string(_connection_string(silent.port),
                                                 timeout=30) as client:
        q = client.entity("q")
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(q.update_disposition, [uuid.uuid4()], "completed",
                               transaction_id=TXN)
            assert _states_after(silent, 1) == [(0x34, [TXN])]
            silent.reply_to_held()
            assert done.result(10) is None
