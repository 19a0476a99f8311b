"""FakeNamespace(network_latency=...): a round trip added to every AMQP connection, half each
way, held in the fake's own loop. Measured from both peers' side (our client, the official
SDK): a request takes at least the round trip, every byte arrives whole and in order, large
transfers included, and the fake closes and stops cleanly while it holds bytes. Only lower
bounds on time are checked (never how fast)."""

from __future__ import annotations

import math
import threading
import time

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.errors import NotFoundError, ServiceBusManagementError
from tests.fake.test_emulator_dropin import start_fakes, stop

ROUND_TRIP = 0.1


def _timed_peek(client: ManagementClient, queue: str) -> float:
    started = time.monotonic()
    client.entity(queue).peek_messages(1, 1)
    return time.monotonic() - started


def test_a_request_takes_at_least_the_round_trip() -> None:
    with FakeNamespace(network_latency=ROUND_TRIP) as fake:
        fake.add_queue("orders")
        fake.send("orders", Message(body=b"kept"))
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            # the connection's first request waits for several round trips (SASL, open,
            # token, link); each later one for one
            assert _timed_peek(client, "orders") >= 3 * ROUND_TRIP
            for _ in range(3):
                assert _timed_peek(client, "orders") >= ROUND_TRIP
            [peeked] = client.entity("orders").peek_messages(1, 1)
            assert peeked.body == b"kept"


def test_a_connection_keeps_the_latency_it_was_accepted_with() -> None:
    with FakeNamespace() as fake:
        fake.add_queue("orders")
        fake.network_latency = ROUND_TRIP
        assert fake.network_latency == ROUND_TRIP
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            _timed_peek(client, "orders")
            fake.network_latency = 0
            assert _timed_peek(client, "orders") >= ROUND_TRIP


@pytest.mark.timeout(120)
def test_the_sdk_sends_and_receives_every_size_whole_and_in_order() -> None:
    # bodies from 1 byte to ~200 KB: transfers split over many frames and many reads
    bodies = [bytes([i % 251]) * (i * 7919 % 200_000 + 1) for i in range(40)]
    with FakeNamespace(network_latency=0.02) as fake:
        fake.add_queue("orders")
        with ServiceBusClient.from_connection_string(fake.connection_string) as sdk:
            with sdk.get_queue_sender("orders") as sender:
                for body in bodies:
                    sender.send_messages(ServiceBusMessage(body))
            received: list[bytes] = []
            with sdk.get_queue_receiver("orders") as receiver:
                while len(received) < len(bodies):
                    batch = receiver.receive_messages(len(bodies), max_wait_time=5)
                    assert batch, f"only {len(received)} of {len(bodies)} came"
                    for message in batch:
                        received.append(b"".join(message.body))
                        receiver.complete_message(message)
    assert received == bodies


def test_the_fake_stops_while_it_holds_a_connections_bytes() -> None:
    fake = FakeNamespace(network_latency=1.0).start()
    fake.add_queue("orders")
    outcome: list[Exception | None] = []
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        def peek() -> None:
            try:
                client.entity("orders").peek_messages(1, 1)
                outcome.append(None)
            except Exception as exc:
                outcome.append(exc)

        worker = threading.Thread(target=peek)
        worker.start()
        time.sleep(0.3)  # the client's first bytes are held in the fake now
        fake.stop()  # its loop ends: what it holds is dropped, the socket closed
        worker.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], ServiceBusManagementError)


@pytest.mark.parametrize("value", [-0.1, math.nan, math.inf, "0.1", True])
def test_a_latency_that_is_not_a_number_of_seconds_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="network_latency"):
        FakeNamespace(network_latency=value)  # type: ignore[arg-type]
    fake = FakeNamespace()
    with pytest.raises(ValueError, match="network_latency"):
        fake.network_latency = value  # type: ignore[assignment]
    assert fake.network_latency == 0


def test_network_latency_on_the_command_line() -> None:
    served = start_fakes("--network-latency-ms", "100", "--host", "127.0.0.1", "--port", "0",
                         "--http-port", "0")
    try:
        with ManagementClient.from_connection_string(served.connection_string,
                                                     timeout=30) as client:
            with pytest.raises(NotFoundError):
                client.entity("missing").peek_messages(1, 1)  # the connection opens
            started = time.monotonic()
            with pytest.raises(NotFoundError):  # a refused attach: one round trip
                client.entity("missing").peek_messages(1, 1)
            assert time.monotonic() - started >= ROUND_TRIP
    finally:
        assert stop(served) == 0
