"""Application property values as they come off the wire: sent by the official SDK to the
fake, peeked back by sbmgmt (decoded from the reply's bytes), rendered into the Spark row.

proton's typed numbers (``int32``, ``short``, ``ubyte``, ``float32``, ``decimal128``...)
have no ``__str__`` of their own; the row holds each as the number it is. A message the
SDK dead-letters keeps ``DeadLetterReason`` / ``DeadLetterErrorDescription`` among its
application properties, as the SDK's own peek shows them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus._pyamqp.types import TYPE, VALUE, AMQPTypes
from proton import char, decimal32, decimal64, decimal128

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.message import Message
from sbmgmt.spark import render_property
from sbmgmt.spark._schema import row_from_message

from .test_schema import COLUMNS


def _typed(kind: str, value: Any) -> dict[str, Any]:
    """A value the SDK's AMQP layer encodes as the AMQP type ``kind``."""
    return {TYPE: kind, VALUE: value}


#: name -> (what the SDK is given, the text the row must hold)
SENT: dict[str, tuple[Any, str]] = {
    "int": (0, "0"),                                     # the SDK sends a Python int as int32
    "negative-int": (-7, "-7"),
    "short": (_typed(AMQPTypes.short, -3), "-3"),
    "byte": (_typed(AMQPTypes.byte, -128), "-128"),
    "ubyte": (_typed(AMQPTypes.ubyte, 255), "255"),
    "ushort": (_typed(AMQPTypes.ushort, 65535), "65535"),
    "uint": (_typed(AMQPTypes.uint, 2**32 - 1), "4294967295"),
    "ulong": (_typed(AMQPTypes.ulong, 2**64 - 1), "18446744073709551615"),
    "long": (_typed(AMQPTypes.long, -(2**63)), "-9223372036854775808"),
    "float": (_typed(AMQPTypes.float, 0.1), "0.1"),      # float32: its shortest decimal
    "double": (2.5, "2.5"),
    "decimal": (Decimal("12.345"), "12.345"),            # decimal128
    "negative-decimal": (Decimal("-1E+3"), "-1E+3"),
    "timestamp": (datetime(2024, 1, 2, tzinfo=timezone.utc), "2024-01-02T00:00:00+00:00"),
    "bool": (True, "true"),
    "text": ("x", "x"),
}


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(queues=["q"])


def _peek_row(client: ManagementClient, entity: str) -> dict[str, Any]:
    [message] = client.entity(entity).peek_messages(max_count=1)
    return dict(zip(COLUMNS, row_from_message(message), strict=True))


def test_numbers_sent_by_the_sdk_render_as_numbers(fake: FakeNamespace) -> None:
    with ServiceBusClient.from_connection_string(fake.connection_string) as sdk, \
            sdk.get_queue_sender("q") as sender:
        sender.send_messages(ServiceBusMessage(
            "x", application_properties={name: sent for name, (sent, _) in SENT.items()}))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        row = _peek_row(client, "q")
    assert row["application_properties"] == {name: text for name, (_, text) in SENT.items()}


def test_decimal32_decimal64_and_char_from_the_wire(fake: FakeNamespace) -> None:
    # The SDK cannot send these types: proton's encoding, peeked back from the fake.
    # decimal32 1 = 0x32800001; decimal64 -25 * 10**-1 = 0xB1A0000000000019;
    # the "11" combination form: decimal32 9_999_999 = 0x6CB8967F.
    fake.send("q", Message(body=b"x", application_properties={
        "d32": decimal32(0x32800001), "d64": decimal64(0xB1A0000000000019),
        "d32-large": decimal32(0x6CB8967F), "inf": decimal32(0x78000000),
        "nan": decimal64(0x7C00000000000000),
        "d128": decimal128((0x3040 << 112 | 7).to_bytes(16, "big")), "c": char("é"),
    }))
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        row = _peek_row(client, "q")
    assert row["application_properties"] == {
        "d32": "1", "d64": "-2.5", "d32-large": "9999999", "inf": "Infinity", "nan": "NaN",
        "d128": "7", "c": "é"}


def test_dead_letter_properties_stay_as_the_sdk_shows_them(fake: FakeNamespace) -> None:
    with ServiceBusClient.from_connection_string(fake.connection_string) as sdk:
        with sdk.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage("x", application_properties={"k": 1}))
        with sdk.get_queue_receiver("q") as receiver:
            [message] = receiver.receive_messages(max_wait_time=5)
            receiver.dead_letter_message(message, reason="bad", error_description="why")
        with sdk.get_queue_receiver("q", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            [sdk_peeked] = dlq.peek_messages()
    sdk_properties = {key.decode() if isinstance(key, bytes) else key:
                      value.decode() if isinstance(value, bytes) else value
                      for key, value in (sdk_peeked.application_properties or {}).items()}
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        [ours] = client.entity("q/$DeadLetterQueue").peek_messages()
        row = _peek_row(client, "q/$DeadLetterQueue")
    assert ours.application_properties == sdk_properties == {
        "k": 1, "DeadLetterReason": "bad", "DeadLetterErrorDescription": "why"}
    assert (ours.dead_letter_reason, ours.dead_letter_description) == ("bad", "why")
    assert row["application_properties"] == {
        "k": "1", "DeadLetterReason": "bad", "DeadLetterErrorDescription": "why"}
    assert render_property(ours.application_properties["k"]) == "1"
