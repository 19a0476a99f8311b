"""Crafted messages that used to stop the fake's server thread: each is now confined to
its delivery (rejected, or answered with an error) and the fake goes on serving."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.amqp.decode import decode_value
from sbmgmt.amqp.encode import encode_value
from sbmgmt.message import Message as SbMessage

from ._raw import RawPeer, authorize, message_bytes
from .conftest import QUEUE, served

_PUT_TOKEN = {"operation": "put-token", "type": "servicebus.windows.net:sastoken",
              "name": "sb://127.0.0.1/q"}
_LONG_EXPIRY = ("SharedAccessSignature sr=sb%3a%2f%2f127.0.0.1%2fq&sig=abc&se="
                + "9" * 5000 + "&skn=RootManageSharedAccessKey")
_PEEK = {"operation": "com.microsoft:peek-message"}
_HEADER = b"\x00\x53\x70"  # the header section's descriptor
_LATER = datetime.now(timezone.utc) + timedelta(hours=1)
#: The largest AMQP timestamp (ms), far past any date a datetime can hold.
_LAST_TIMESTAMP = decode_value(b"\x83\x7f" + b"\xff" * 7)[0]


def _props(reply_to: Any = None, **more: Any) -> list[Any]:
    fields: list[Any] = [uuid.uuid4(), None, None, None, reply_to]
    if more:
        fields += [more.get("correlation_id")]
    return fields


CASES: dict[str, tuple[str, bytes]] = {
    "put-token se with 5000 digits": (
        "$cbs", message_bytes(properties=_props("$cbs/r"), application_properties=_PUT_TOKEN,
                              body=_LONG_EXPIRY)),
    "put-token application properties a list": (
        "$cbs", message_bytes(properties=_props("$cbs/r"), application_properties=[1, 2],
                              body="x")),
    "put-token audience not a URI": (
        "$cbs", message_bytes(properties=_props("$cbs/r"),
                              application_properties={**_PUT_TOKEN, "name": "sb://[::1"},
                              body="SharedAccessSignature sr=a&sig=b&se=1&skn=c")),
    "put-token reply-to a list": (
        "$cbs", message_bytes(properties=_props([1, 2]), application_properties=_PUT_TOKEN,
                              body="x")),
    "put-token reply-to a map": (
        "$cbs", message_bytes(properties=_props({1: 2}), application_properties=_PUT_TOKEN,
                              body="x")),
    "put-token reply-to an int": (
        "$cbs", message_bytes(properties=_props(7), application_properties=_PUT_TOKEN,
                              body="x")),
    "management reply-to a map": (
        f"{QUEUE}/$management", message_bytes(properties=_props({"a": 1}),
                                              application_properties=_PEEK, body={})),
    "management application properties a list": (
        f"{QUEUE}/$management", message_bytes(properties=_props("r"),
                                              application_properties=[1], body={})),
    "management correlation-id huge": (
        f"{QUEUE}/$management", message_bytes(properties=_props("r", correlation_id=2**63 - 1),
                                              application_properties=_PEEK, body={})),
    "entity message with a negative TTL": (
        QUEUE, _HEADER + encode_value([None, None, -5]) + message_bytes(body="x")[4:]),
    "entity message with a TTL of 2**62 ms": (
        QUEUE, _HEADER + encode_value([None, None, 2**62]) + message_bytes(body="x")[4:]),
    "entity message with a content-type string that is not ASCII": (
        QUEUE, message_bytes(properties=[None] * 6 + ["t\u00e9xt/plain"], body="x")),
    "management request with a negative message-id": (
        f"{QUEUE}/$management", message_bytes(properties=[-5, None, None, None, "r"],
                                              application_properties=_PEEK, body={})),
    "entity message with a group-sequence beyond a uint": (
        QUEUE, message_bytes(properties=[None] * 11 + [2**40], body="x")),
    "schedule-message of a message with a negative TTL": (
        f"{QUEUE}/$management", message_bytes(
            properties=_props("r"),
            application_properties={"operation": "com.microsoft:schedule-message"},
            body={"messages": [{"message-id": "m", "message": _HEADER + encode_value(
                [None, None, -5]) + SbMessage(body=b"x", scheduled_enqueue_time=_LATER)
                .to_bytes()}]})),
    "entity message with absolute-expiry-time out of range": (
        QUEUE, message_bytes(properties=[None] * 8 + [_LAST_TIMESTAMP],
                             application_properties={"a": 1}, body="x")),
    "entity message with application properties a list": (
        QUEUE, message_bytes(application_properties=[1, 2], body="x")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_crafted_message_is_confined_to_its_delivery(
        fake: FakeNamespace, client: ManagementClient, name: str) -> None:
    address, data = CASES[name]
    with RawPeer(fake.host, fake.port) as peer:
        authorize(peer, fake.host, fake.port, fake.key_name, "SAS_KEY_VALUE")
        sender = peer.sender(address)
        target = "$cbs/r" if address == "$cbs" else f"{QUEUE}/$management/r"
        peer.receiver(address if address != QUEUE else f"{QUEUE}/$management", target)
        assert peer.pump(lambda: sender.credit > 0), "the attach was not answered"
        delivery = peer.send(sender, data)
        assert peer.pump(lambda: delivery.remote_state is not None or peer.peer_closed), \
            "the message got no outcome"
        # The same connection is still served (only the delivery was affected).
        again = peer.send(sender, message_bytes(properties=_props("r"), body="y",
                                                application_properties={"a": 1}))
        assert peer.pump(lambda: again.remote_state is not None)
    assert served(client)
    # Whatever was kept of it can still be peeked (nothing stored that fails to encode).
    assert isinstance(client.entity(QUEUE).peek_messages(max_count=100), list)
