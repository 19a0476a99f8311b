"""A data body read from a lazily decoded message's wire bytes (sbmgmt/_messages/wire_body.py)
is the body the whole decoding gives, and reading it decodes nothing else; what it does not
take (another body kind, another encoding of a data section) it leaves to the decoding."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbmgmt._messages.lazy_decoder import lazy_decoder, pending_bytes
from sbmgmt._messages.wire_body import wire_data_body
from sbmgmt.amqp.sections import DATA, prefix
from sbmgmt.message import Message, ReceivedMessage, as_received
from sbmgmt.message_view import body_view

decode = lazy_decoder(ReceivedMessage, ReceivedMessage._construct)

_BODIES = st.one_of(
    st.binary(max_size=300).map(lambda body: Message(body=body)),  # vbin8 and vbin32
    st.lists(st.binary(max_size=20), min_size=2, max_size=4).map(
        lambda parts: Message(body=parts)),  # several data sections, joined
    st.text(max_size=20).map(lambda value: Message(body=value, body_type="value")),
    st.lists(st.integers(0, 9), max_size=3).map(
        lambda items: Message(body=items, body_type="sequence")),
)


def _wire(message: Message) -> bytes:
    return as_received(message, sequence_number=7).to_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BODIES)
def test_the_wire_body_is_the_decoded_body(message: Message) -> None:
    raw = _wire(message)
    lazy = decode(raw, None)
    found = wire_data_body(lazy)
    assert pending_bytes(lazy) == raw  # nothing else was decoded
    decoded = ReceivedMessage.from_bytes(raw)
    if decoded.body_type == "data":
        assert found == decoded.body_bytes()
    else:
        assert found is None
    assert body_view(lazy) == body_view(decoded)


def test_a_message_decoded_already_is_read_decoded() -> None:
    lazy = decode(_wire(Message(body=b'{"a": 1}')), None)
    assert lazy.subject is None  # a field read: the rest decoded
    assert pending_bytes(lazy) is None
    assert wire_data_body(lazy) is None
    assert wire_data_body(Message(body=b"x")) is None  # never lazy


def test_a_data_section_described_by_its_symbol_is_left_to_the_decoding() -> None:
    raw = _wire(Message(body=b"abc"))
    named = b"\x00\xa3\x10amqp:data:binary"
    assert raw.count(prefix(DATA)) == 1
    lazy: Any = decode(raw.replace(prefix(DATA), named), None)
    assert wire_data_body(lazy) is None
    assert lazy.body == b"abc"
