"""A data body read from a lazily decoded message's wire bytes (sbmgmt/_messages/wire_body.py)
is the body the whole decoding gives, and reading it decodes nothing else; what it does not
take (another body kind, another encoding of a data section) it leaves to the decoding. It
finds the body by the first data section's opening bytes (``00 53 75``): a message holding
those bytes before its body (in a property) or in a body of another kind is decoded whole
when it comes, so the rule never reads the wrong bytes."""

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


#: A data section's opening bytes, and a vbin32 constructor with a size after them: what the
#: body reader looks for, where it is no section.
_OPENING = prefix(DATA)
_LOOKALIKES = st.sampled_from([_OPENING, _OPENING + b"\xb0\x00\x00\x00\x01x",
                               _OPENING + b"\xa0\x02ab", b"\x00\x53"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BODIES, st.lists(st.tuples(st.binary(max_size=6), _LOOKALIKES, st.binary(max_size=6)),
                         max_size=2), st.booleans())
def test_the_opening_bytes_elsewhere_never_mislead_the_reader(
        message: Message, lookalikes: list[tuple[bytes, bytes, bytes]], in_subject: bool) -> None:
    values = [b"".join(parts) for parts in lookalikes]
    update: dict[str, Any] = {"application_properties": {f"k{n}": value
                                                         for n, value in enumerate(values)}}
    if in_subject and values:
        update["subject"] = values[0].decode("latin-1")  # the same bytes in UTF-8 or not
    raw = _wire(message.model_copy(update=update))
    lazy = decode(raw, None)
    decoded = ReceivedMessage.from_bytes(raw)
    found = wire_data_body(lazy)
    if pending_bytes(lazy) is not None:  # kept lazy: the rule holds
        assert found == (decoded.body_bytes() if decoded.body_type == "data" else None)
    else:  # decoded when it came, because the rule would not hold
        assert raw.find(_OPENING) < raw.rfind(_OPENING) or decoded.body_type != "data"
    assert body_view(lazy) == body_view(decoded)
    assert lazy == decoded


def test_opening_bytes_before_the_body_have_the_message_decoded_when_it_comes() -> None:
    plain = decode(_wire(Message(body=b"the body")), None)
    assert pending_bytes(plain) is not None and wire_data_body(plain) == b"the body"
    lookalike = _OPENING + b"\xa0\x01z"
    for message in (Message(body=b"the body", application_properties={"k": lookalike}),
                    Message(body=lookalike, body_type="value")):
        lazy = decode(_wire(message), None)
        assert pending_bytes(lazy) is None  # decoded at once: its body is read decoded
        assert wire_data_body(lazy) is None
        assert lazy.body == message.body


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
