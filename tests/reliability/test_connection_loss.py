"""Connection loss mid-flight: waiters fail at once, the client reconnects, close() is prompt."""

from __future__ import annotations

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.errors import ClientClosedError, ConnectionLostError
from sbmgmt.message import Message
from sbmgmt.ops import peek_message

from ._cases import QUEUE
from .conftest import wait_until

LONG_TIMEOUT = 60.0      # far beyond each wait below: a failure there comes from the loss
PEEK = peek_message.Request(from_sequence_number=1, message_count=1)


def test_pending_requests_fail_on_connection_loss_and_later_ones_succeed(
        fake: FakeNamespace) -> None:
    fake.send(QUEUE, Message(body=b"m"))
    with ManagementClient.from_connection_string(fake.connection_string,
                                                 timeout=LONG_TIMEOUT) as client:
        queue = client.entity(QUEUE)
        assert len(queue.peek_messages()) == 1
        pause = fake.faults.pause(entity=QUEUE)
        futures = [queue.submit(PEEK) for _ in range(20)]
        wait_until(lambda: fake.applied(QUEUE, peek_message.OPERATION) == 21,
                   "every request to reach the fake")
        assert fake.faults.close_connections() == 1
        for future in futures:
            with pytest.raises(ConnectionLostError):
                future.result(timeout=10)
        pause.remove()
        assert [m.body for m in queue.peek_messages()] == [b"m"]


def test_repeated_connection_loss_then_recovery(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string,
                                                 timeout=10) as client:
        for _ in range(5):
            assert client.entity(QUEUE).peek_messages() == []
            fake.faults.close_connections()
        assert client.entity(QUEUE).peek_messages() == []


def test_close_fails_pending_requests_promptly(fake: FakeNamespace) -> None:
    client = ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=LONG_TIMEOUT)
    queue = client.entity(QUEUE)
    assert queue.peek_messages() == []
    fake.faults.pause()
    futures = [queue.submit(PEEK) for _ in range(10)]
    wait_until(lambda: fake.applied(QUEUE, peek_message.OPERATION) == 11,
               "every request to reach the fake")
    client.close()
    for future in futures:
        with pytest.raises(ClientClosedError):
            future.result(timeout=10)
    with pytest.raises(ClientClosedError):
        queue.peek_messages()
