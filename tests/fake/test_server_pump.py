"""The fake's pump runs once per run of queued events, not once per transfer or
settlement (fakes/_server.py, ``Server.on_events_dispatched``): a receiver's batch of
settlements, one event each, costs a pump or two, not one each; and what the pump does
(feeding a waiting receiver) still happens before the fake waits again."""

from __future__ import annotations

import threading

import pytest

from fakes import FakeNamespace
from fakes._server import Server
from sbmgmt import ManagementClient, Message, ReceivedMessage
from tests._waiting import wait_until

_COUNT = 1000


class _Pumps:
    """Counts the calls of ``Server.pump`` (the class's: the server calls it by name)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self._lock = threading.Lock()
        pump = Server.pump

        def counted(server: Server) -> None:
            with self._lock:
                self.count += 1
            pump(server)

        monkeypatch.setattr(Server, "pump", counted)


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(queues=["a"])


def _messages(count: int) -> list[Message]:
    return [Message(body=f"m{i}".encode(), message_id=f"id-{i}") for i in range(count)]


def test_a_batch_of_settlements_costs_a_few_pumps_not_one_each(
        fake: FakeNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        with client.entity("a").sender() as sender:
            sender.send_messages(_messages(_COUNT))
        with client.entity("a").receiver(prefetch=_COUNT) as receiver:
            got = receiver.receive_messages(_COUNT, max_wait_time=10)
            assert len(got) == _COUNT
            pumps = _Pumps(monkeypatch)
            receiver.complete_messages(got)  # one disposition event a message
            # Settled on the client's side first: the fake's events may still be queued.
            assert wait_until(lambda: fake.accounting("a")["completed"] == _COUNT, 10)
            settled_pumps = pumps.count
        assert list(client.entity("a").peek_all()) == []
    assert fake.accounting("a")["completed"] == _COUNT
    assert 1 <= settled_pumps < _COUNT // 10


def test_a_waiting_receiver_is_fed_by_the_pump_after_the_transfers(
        fake: FakeNamespace) -> None:
    got: list[ReceivedMessage] = []
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client, \
            client.entity("a").receiver() as receiver, client.entity("a").sender() as sender:
        waiting = threading.Thread(
            target=lambda: got.extend(receiver.receive_messages(3, max_wait_time=10)))
        waiting.start()
        sender.send_messages(_messages(3))
        waiting.join(15)
        assert not waiting.is_alive()
        receiver.complete_messages(got)
    assert sorted(str(m.message_id) for m in got) == ["id-0", "id-1", "id-2"]
    assert fake.accounting("a")["completed"] == 3
