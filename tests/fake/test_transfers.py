"""Transfers to the fake: the credit it gives for them (a sender to an entity gets the
service's 1000 and keeps it; a request link 500) and what it answers to those it cannot
apply (each is settled, the server goes on)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from proton import Delivery, Message, Timeout
from proton.utils import BlockingConnection

from fakes import FakeNamespace
from fakes._links import CREDIT, ENTITY_CREDIT


@pytest.fixture
def connection() -> Iterator[tuple[FakeNamespace, BlockingConnection]]:
    with FakeNamespace(accept_any_token=True) as namespace:
        namespace.add_queue("q")
        client = BlockingConnection(f"amqp://127.0.0.1:{namespace.port}",
                                    allowed_mechs="ANONYMOUS", timeout=10)
        try:
            replies = client.create_receiver("$cbs", name="cbs-replies")
            put_token = Message(body="any token", reply_to="cbs-reply",
                                properties={"operation": "put-token", "name": "q"})
            client.create_sender("$cbs", name="cbs-requests").send(put_token)
            replies.receive()
            yield namespace, client
        finally:
            client.close()


def _transfer(client: BlockingConnection, address: str, *chunks: bytes,
              abort: bool = False) -> Any:
    link = client.create_sender(address, name=f"sender-{uuid.uuid4()}").link
    delivery = link.delivery(b"tag")
    for chunk in chunks:
        link.stream(chunk)
    if abort:
        with pytest.raises(Timeout):  # the first part goes out before the abort
            client.wait(lambda: False, timeout=0.2)
        delivery.abort()
    else:
        link.advance()
    return delivery


@pytest.mark.parametrize("address", ["q", "q/$management", "$cbs"])
def test_bytes_that_are_no_message_are_rejected_as_a_decode_error(
        connection: tuple[FakeNamespace, BlockingConnection], address: str) -> None:
    namespace, client = connection
    delivery = _transfer(client, address, b"\x00Sw\xa1\x05ab")
    client.wait(lambda: delivery.settled, msg="no outcome")
    assert delivery.remote_state == Delivery.REJECTED
    assert delivery.remote.condition.name == "amqp:decode-error"
    sent = _transfer(client, "q", Message(body=b"fine").encode())
    client.wait(lambda: sent.settled, msg="no outcome")
    assert sent.remote_state == Delivery.ACCEPTED
    assert namespace.accounting("q")["active"] == 1


def test_an_aborted_transfer_is_dropped(
        connection: tuple[FakeNamespace, BlockingConnection]) -> None:
    namespace, client = connection
    _transfer(client, "q", Message(body=b"half").encode()[:5], abort=True)
    sent = _transfer(client, "q", Message(body=b"whole").encode())
    client.wait(lambda: sent.settled, msg="no outcome")
    assert sent.remote_state == Delivery.ACCEPTED
    assert namespace.accounting("q")["accepted"] == 1


def test_a_sender_to_an_entity_gets_the_services_credit_and_keeps_it(
        connection: tuple[FakeNamespace, BlockingConnection]) -> None:
    """Service Bus answers a sender's attach with a flow of ``link-credit`` 1000 (the
    frames of azure-sdk-for-js issue 9958); the fake tops it up after each read, so a
    sender with many messages on the wire never waits a round trip for more."""
    namespace, client = connection
    sender = client.create_sender("q", name="entity-sender")
    client.wait(lambda: sender.link.credit == ENTITY_CREDIT, msg="no first credit")
    deliveries = [sender.send(Message(body=f"m{n}"), timeout=5) for n in range(300)]
    assert all(d.remote_state == Delivery.ACCEPTED for d in deliveries)
    client.wait(lambda: sender.link.credit == ENTITY_CREDIT, msg="credit not topped up")
    assert namespace.accounting("q")["active"] == 300
    requests = client.create_sender("q/$management", name="request-sender")
    client.wait(lambda: requests.link.credit == CREDIT, msg="no request-link credit")
    assert CREDIT < ENTITY_CREDIT
