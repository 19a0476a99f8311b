"""What the fake answers to transfers it cannot apply: each is settled, the server goes on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from proton import Delivery, Message, Timeout
from proton.utils import BlockingConnection

from fakes import FakeNamespace


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
