"""The one-pass readers of the common encodings against the generic decoding they stand in
for: the same values and types where they read something, the generic decoding (and its
ProtocolError) wherever they do not."""

from __future__ import annotations

import struct
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from proton import Described, int32, symbol, timestamp, ubyte, uint, ulong
from test_decode import (
    CHECKS,
    app_values,
    assert_same,
    messages,
    proton_encode,
    value_bodies,
)

from sbmgmt._messages import common_decoder as _message_common
from sbmgmt._messages import section_decoder as _message_sections
from sbmgmt.amqp import envelope
from sbmgmt.amqp.decode import decode_value
from sbmgmt.amqp.encode import encode_amqp_value
from sbmgmt.amqp.scan import compound_at, decode_message_list_map, decode_text_map
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.ops._messages import encoded_message_list

mutations = st.lists(st.tuples(st.integers(0), st.integers(0, 255)), min_size=1, max_size=3)


def mutated(raw: bytes, changes: list[tuple[int, int]]) -> bytes:
    out = bytearray(raw)
    for index, new in changes:
        out[index % len(out)] = new
    return bytes(out)


# --- compact encodings (list8, map8) that proton and sbmgmt.amqp.encode do not write -----


def compact(raw: bytes) -> bytes:
    """``raw`` (one value) with every list32 / map32 small enough rewritten as list8 /
    map8 and every list32 of no items as list0, recursively through lists and maps."""
    out, _ = _compact(raw, 0)
    return out


def _compact(raw: bytes, pos: int) -> tuple[bytes, int]:
    code = raw[pos]
    _, after = decode_value(raw, pos)
    if code not in (0xD0, 0xD1):
        return raw[pos:after], after
    _, count = struct.unpack_from(">II", raw, pos + 1)
    at = pos + 9
    items = []
    for _ in range(count):
        item, at = _compact(raw, at)
        items.append(item)
    body = b"".join(items)
    if code == 0xD0 and count == 0:
        return b"\x45", after
    if len(body) + 1 > 255 or count > 255:
        return bytes([code]) + struct.pack(">II", len(body) + 4, count) + body, after
    return bytes([code - 0x10, len(body) + 1, count]) + body, after


def section(code: int, value: Any) -> bytes:
    return proton_encode(Described(ulong(code), value))


# --- whole messages ------------------------------------------------------------


def assert_common_is_generic(raw: bytes) -> None:
    """Where the one-pass reading gives fields, the generic one gives the same fields
    (same order, values and types); where it gives none, ``_decode`` is the generic one."""
    for cls in (ReceivedMessage, Message):
        decoding = _message_common.decoding(cls)
        common = _message_common._decode_common(raw, decoding)
        try:
            generic = _message_sections._decode_sections(raw, decoding)
        except ProtocolError:
            assert common is None, raw.hex()
            with pytest.raises(ProtocolError):
                cls.from_bytes(raw)
            continue
        if common is not None:
            assert list(common) == list(generic)
            assert_same(common, generic)
        assert_same(_message_common._decode(raw, decoding), generic)


def encodings(message: Message) -> list[bytes]:
    raw = message.to_bytes()
    sections = []
    offset = 0
    while offset < len(raw):
        _, after = decode_value(raw, offset)
        sections.append(raw[offset:offset + 3] + compact(raw[offset + 3:after]))
        offset = after
    return [raw, b"".join(sections)]


@CHECKS
@given(messages | value_bodies)
def test_common_reading_is_the_generic_reading(message: Message) -> None:
    for raw in encodings(message):
        assert_common_is_generic(raw)


@CHECKS
@given(messages, mutations)
def test_common_reading_of_mutated_messages(message: Message,
                                            changes: list[tuple[int, int]]) -> None:
    for raw in encodings(message):
        assert_common_is_generic(mutated(raw, changes))
        assert_common_is_generic(raw[:changes[0][0] % len(raw)])


ANNOTATIONS = section(0x72, {symbol("x-opt-sequence-number"): 7})


@pytest.mark.parametrize("raw", [
    # every header field, in each encoding the common reading knows, then others
    section(0x70, [True, ubyte(4), uint(0), False, uint(3)]),
    section(0x70, [False, ubyte(255), uint(255), True, uint(2**32 - 1)]),
    section(0x70, [None, None, uint(70000)]),
    section(0x70, ["durable?", None]),
    section(0x70, [None, 4]),
    b"\x00\x53\x70\xc0\x03\x02\x56\x07",  # boolean 0x56
    b"\x00\x53\x70\x45",  # list0
    # a header section twice: the second sets all its fields, null or not
    section(0x70, [True, ubyte(4), uint(9)]) + section(0x70, [None, None, None, None, uint(1)]),
    # properties: str8 / sym8 text, ids of other types, timestamps, group sequence
    section(0x73, ["m", b"user", "to", "subj", "reply", "corr", symbol("ct"), symbol("ce"),
                   timestamp(1_700_000_000_000), timestamp(-5), "group", uint(2**32 - 1),
                   "reply-group"]),
    section(0x73, [uuid.UUID(int=5), None, None, None, None, ulong(7)]),
    section(0x73, [None, None, None, None, None, None, None, None, timestamp(2**62)]),
    section(0x73, [symbol("sym-id"), None, None, None, None, b"binary-corr"]),
    section(0x73, ["x" * 300]),  # str32
    section(0x73, [None, None, None, None, None, None, None, None, None, None, None, uint(3)]),
    section(0x73, [None, None, None, None, None, None, None, None, None, None, None, 2**40]),
    section(0x73, [None, None, None, None, None, None, None, None, None, None, None, -1]),
    section(0x73, ["m"]) + section(0x73, [None, None, "to"]),
    b"\x00\x53\x73\xc0\x05\x03\x40\x40\x40" + b"\x00\x53\x73\x45",
    # the maps: text keys as str, keys of other types, a null where a map goes
    section(0x74, {"a": 1, symbol("a"): 2, "DeadLetterReason": "r"}),
    section(0x74, {1: "one", "two": 2}),
    section(0x74, None),
    section(0x71, {symbol("d"): [1, {"x": None}]}) + section(0x78, {symbol("f"): b"x"}),
    section(0x72, None),
    section(0x72, {symbol("x-opt-sequence-number"): "seven"}),
    section(0x72, {symbol("x-opt-sequence-number"): 1, "x-opt-sequence-number": 2}),
    section(0x72, {symbol("x-opt-enqueued-time"): timestamp(2**62)}),
    section(0x72, {symbol("k" * 300): 1}),
    # typed annotations in each encoding the common reading knows, then others
    section(0x72, {symbol("x-opt-message-state"): 1, symbol("x-opt-locked-until"): timestamp(9),
                   symbol("x-opt-deadletter-source"): "dlq", symbol("x-opt-partition-key"): "p",
                   symbol("x-opt-scheduled-enqueue-time"): timestamp(-1)}),
    section(0x72, {symbol("x-opt-message-state"): int32(2), "x-opt-via-partition-key": "v"}),
    section(0x72, {symbol("x-opt-message-state"): 2**40}),
    section(0x72, {symbol("x-opt-message-state"): 7}),
    section(0x72, {symbol("x-opt-message-state"): int32(-1)}),
    section(0x72, {symbol("x-opt-message-state"): uint(1)}),
    section(0x72, {symbol("x-opt-sequence-number"): 2**40, symbol("x-opt-partition-key"): 5}),
    section(0x72, {symbol("x-opt-sequence-number"): ulong(3)}),
    section(0x72, {symbol("x-opt-sequence-number"): -3}),
    section(0x72, {symbol("x-opt-enqueued-time"): 17}),
    section(0x72, {symbol("x-opt-sequence-number"): "x" * 300}),
    # bodies
    section(0x75, b"a") + section(0x75, b"b"),
    section(0x75, "not binary"),
    section(0x77, {"v": 1}) + section(0x75, b"data after value"),
    section(0x76, [1, 2]),
    # descriptors the common reading leaves to the generic one
    proton_encode(Described(symbol("amqp:data:binary"), b"x")),
    proton_encode(Described(ulong(0x1_0000_0075), b"x")),
    b"\x00\x80\x00\x00\x00\x00\x00\x00\x00\x75\xa0\x01x",
    b"\x00\x53\x79\x40",
    b"\x01\x53\x75\xa0\x00",
    b"\x00\x53\x75",
])
def test_common_reading_of_unusual_encodings(raw: bytes) -> None:
    for body in (raw, raw + ANNOTATIONS, ANNOTATIONS + raw):
        assert_common_is_generic(body)


def test_common_reading_takes_the_usual_service_bus_message() -> None:
    message = ReceivedMessage(body=b"x" * 1024, message_id="m", content_type="text/plain",
                              application_properties={"a": 1, "b": "two"}, partition_key="p",
                              sequence_number=5, delivery_count=0)
    for raw in encodings(message):
        decoding = _message_common.decoding(ReceivedMessage)
        assert _message_common._decode_common(raw, decoding) is not None
        assert ReceivedMessage.from_bytes(raw) == message


# --- decode_text_map -----------------------------------------------------------


text_keys = st.text(max_size=5) | st.text(alphabet=st.characters(max_codepoint=127),
                                         max_size=5).map(symbol)
text_maps = st.dictionaries(text_keys, app_values, max_size=5)
any_maps = st.dictionaries(text_keys | st.integers(-(2**63), 2**63 - 1) | st.none(), app_values,
                           max_size=4)


def assert_text_map(raw: bytes, offset: int = 0) -> None:
    try:
        ours, after = decode_text_map(raw, offset)
    except ProtocolError:
        with pytest.raises(ProtocolError):
            decode_value(raw, offset)
        return
    if ours is None:
        assert after == offset
        return
    value, end = decode_value(raw, offset)
    assert isinstance(value, dict) and all(isinstance(k, str) for k in value)
    assert after == end
    assert_same(ours, {str(k): v for k, v in value.items()})
    assert all(type(k) is str for k in ours)


@CHECKS
@given(text_maps | any_maps, st.booleans())
def test_text_map_is_the_generic_map_with_str_keys(value: dict[Any, Any], small: bool) -> None:
    raw = proton_encode(value)
    assert_text_map(compact(raw) if small else raw)


@CHECKS
@given(text_maps, mutations, st.booleans())
def test_text_map_of_mutated_bytes(value: dict[Any, Any], changes: list[tuple[int, int]],
                                   small: bool) -> None:
    raw = proton_encode(value)
    raw = mutated(compact(raw) if small else raw, changes)
    assert_text_map(raw)
    assert_text_map(raw[:changes[0][0] % len(raw)])


@pytest.mark.parametrize("raw", [b"", b"\x40", b"\xc0\x01\x00", b"\xc1\x01\x00",
                                 b"\xc1\x02\x01\xa3", b"\xc1\x03\x02\xa3\x00",
                                 b"\xc1\x05\x02\xa3\x01\xe9\x40", b"\xc1\x04\x02\xa1\x01a",
                                 b"\xc1\x04\x01\xa1\x01a\x40"])
def test_text_map_edge_cases(raw: bytes) -> None:
    assert_text_map(raw)


# --- decode_message_list_map and reply_parts -----------------------------------------


entries = st.lists(st.binary(max_size=300), max_size=4)


def assert_message_list(raw: bytes) -> None:
    ours, after = decode_message_list_map(raw, 0)
    if ours is None:
        assert after == 0
        return
    value, end = decode_value(raw, 0)
    assert after == end
    assert_same(ours, value)


@CHECKS
@given(entries, st.booleans())
def test_message_list_is_the_generic_value(wires: list[bytes], small: bool) -> None:
    raw = encode_amqp_value({"messages": encoded_message_list(wires)})[3:]
    raw = compact(raw) if small else raw
    assert decode_message_list_map(raw, 0)[0] is not None
    assert_message_list(raw)


@CHECKS
@given(entries, mutations, st.booleans())
def test_message_list_of_mutated_bytes(wires: list[bytes], changes: list[tuple[int, int]],
                                       small: bool) -> None:
    raw = encode_amqp_value({"messages": encoded_message_list(wires)})[3:]
    raw = mutated(compact(raw) if small else raw, changes)
    assert_message_list(raw)
    assert_message_list(raw[:changes[0][0] % len(raw)])


@pytest.mark.parametrize("body", [
    {"messages": [{"message": b"x", "lock-token": uuid.UUID(int=1)}]},
    {"messages": [{symbol("message"): b"x"}]},
    {"messages": [{"message": "text"}]},
    {"messages": [{"message": b"x"}], "more": 1},
    {symbol("messages"): []},
    {"messages": []},
    {"messages": None},
    {"message": [{"message": b"x"}]},
    [{"message": b"x"}],
])
def test_message_list_other_shapes(body: Any) -> None:
    raw = proton_encode(body)
    for encoded in (raw, compact(raw)):
        assert_message_list(encoded)


@CHECKS
@given(entries, st.booleans(), st.sampled_from([None, {"x": 1}]))
def test_reply_parts_of_a_message_list(wires: list[bytes], small: bool, extra: Any) -> None:
    body: Any = {"messages": encoded_message_list(wires)}
    if extra is not None:
        body = [body, extra]
    raw = envelope.encode_reply(uuid.UUID(int=3), 200, body)
    if small:
        split = raw.index(b"\x00\x53\x77")
        raw = raw[:split + 3] + compact(raw[split + 3:])
    correlation, properties, decoded = envelope.reply_parts(raw)
    assert_same(decoded, decode_value(raw, raw.index(b"\x00\x53\x77") + 3)[0])
    assert correlation == uuid.UUID(int=3) and properties["statusCode"] == 200


def test_compound_at() -> None:
    assert compound_at(b"\xc0\x03\x02\x40\x40", 0, 0xC0, 0xD0) == (3, 2, 5)
    assert compound_at(b"\xd0\x00\x00\x00\x04\x00\x00\x00\x00", 0, 0xC0, 0xD0) == (9, 0, 9)
    assert compound_at(b"\xc0\x03\x02\x40", 0, 0xC0, 0xD0) is None  # past the end
    assert compound_at(b"\xc0\x00\x00", 0, 0xC0, 0xD0) is None  # no room for the count
    assert compound_at(b"\xc1\x01\x00", 0, 0xC0, 0xD0) is None  # another constructor
    assert compound_at(b"\xc0", 0, 0xC0, 0xD0) is None
    assert compound_at(b"", 0, 0xC0, 0xD0) is None


def test_kept_headers_and_repeated_times_read_as_fresh_ones() -> None:
    """The common reading keeps header encodings and the last timestamp it converted:
    a page of messages alternating between them decodes as each one alone does."""
    first = datetime(2030, 1, 1, tzinfo=timezone.utc)
    pages = [
        ReceivedMessage(sequence_number=n, delivery_count=n % 2, time_to_live=ttl,
                        enqueued_time=first + timedelta(milliseconds=n // 2))
        for n, ttl in enumerate([None, timedelta(seconds=5), None, None, timedelta(0)])
    ]
    for message in pages + pages[::-1]:
        for raw in encodings(message):
            assert_common_is_generic(raw)
            assert ReceivedMessage.from_bytes(raw) == message


@pytest.mark.parametrize("wrap", [bytes, bytearray])  # bytearray: the generic path
def test_decoded_messages_do_not_share_their_maps(wrap: Any) -> None:
    """Two messages decoded without application properties, annotations or footer each
    get their own empty dicts: changing one leaves the other alone."""
    raw = wrap(ReceivedMessage(body=b"x", sequence_number=1).to_bytes())
    first, second = (ReceivedMessage.from_bytes(raw) for _ in range(2))
    for name in ("application_properties", "annotations", "delivery_annotations", "footer"):
        getattr(first, name)["changed"] = 1
        assert getattr(second, name) == {}


@pytest.mark.parametrize("descriptor", [b"\x00\x53\x79", b"\x00\xa3\x08amqp:foo"])
def test_an_unknown_section_is_refused_by_every_reader(descriptor: bytes) -> None:
    """One rule for a descriptor that names no section: the bytes are not a message,
    whether a reply, a request or a message decodes them."""
    raw = envelope.encode_reply(uuid.UUID(int=3), 200, "x") + descriptor + b"\x40"
    with pytest.raises(ProtocolError, match="unknown section"):
        envelope.reply_parts(raw)
    with pytest.raises(ProtocolError, match="unknown section"):
        envelope.parse_request(raw)
    with pytest.raises(ProtocolError, match="unknown section"):
        ReceivedMessage.from_bytes(raw)
