"""sbmgmt.amqp.decode against proton's own codec: same values, same types, ProtocolError only."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proton import (
    UNDESCRIBED,
    Array,
    Data,
    DataException,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from sbmgmt._messages import common_decoder as _message_common
from sbmgmt._messages import section_decoder as _message_sections
from sbmgmt.amqp.decode import MAX_DEPTH, decode_described, decode_value
from sbmgmt.amqp.sections import SECTION_CODES
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message, ReceivedMessage
from tests._wire import owned

CHECKS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- proton as the reference -------------------------------------------------


def proton_encode(value: Any) -> bytes:
    data = Data()
    data.put_object(value)
    return bytes(data.encode())


def proton_owned(value: Any) -> Any:
    """``owned`` plus the descriptor of an array (``owned`` leaves that one a view)."""
    value = owned(value)
    if isinstance(value, Array):
        return Array(owned(value.descriptor), value.type,
                     *(proton_owned(v) for v in value.elements))
    if isinstance(value, list):
        return [proton_owned(v) for v in value]
    if isinstance(value, dict):
        return {k: proton_owned(v) for k, v in value.items()}
    if isinstance(value, Described):
        return Described(value.descriptor, proton_owned(value.value))
    return value


def proton_decode(raw: bytes) -> tuple[Any, int]:
    data = Data()
    used = data.decode(raw)
    data.rewind()
    data.next()
    return proton_owned(data.get_object()), used


def assert_same(ours: Any, theirs: Any) -> None:
    """Equal values of exactly the same types, all the way down (NaN equals NaN)."""
    assert type(ours) is type(theirs), (ours, theirs)
    if isinstance(ours, Array):
        assert ours.type == theirs.type
        assert_same(ours.descriptor, theirs.descriptor)
        assert_same(list(ours.elements), list(theirs.elements))
    elif isinstance(ours, Described):
        assert_same(ours.descriptor, theirs.descriptor)
        assert_same(ours.value, theirs.value)
    elif isinstance(ours, list):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)
    elif isinstance(ours, dict):
        assert len(ours) == len(theirs)
        for (ka, va), (kb, vb) in zip(ours.items(), theirs.items(), strict=True):
            assert_same(ka, kb)
            assert_same(va, vb)
    elif isinstance(ours, float) and math.isnan(ours):
        assert math.isnan(theirs)
    else:
        assert ours == theirs


# --- values of every AMQP type -----------------------------------------------

long_text = st.text(min_size=256, max_size=400)
strings = st.text(max_size=20) | long_text
symbols = st.text(alphabet=st.characters(max_codepoint=127), max_size=300).map(symbol)
binaries = st.binary(max_size=20) | st.binary(min_size=256, max_size=300)

# (proton array element type, strategy of elements of that type)
TYPED: list[tuple[int, st.SearchStrategy[Any]]] = [
    (Data.BOOL, st.booleans()),
    (Data.UBYTE, st.integers(0, 255).map(ubyte)),
    (Data.BYTE, st.integers(-128, 127).map(byte)),
    (Data.USHORT, st.integers(0, 2**16 - 1).map(ushort)),
    (Data.SHORT, st.integers(-(2**15), 2**15 - 1).map(short)),
    (Data.UINT, st.sampled_from([0, 1, 255, 256, 2**32 - 1]).map(uint)
     | st.integers(0, 2**32 - 1).map(uint)),
    (Data.INT, st.sampled_from([-(2**31), -129, -128, 127, 128, 2**31 - 1]).map(int32)
     | st.integers(-(2**31), 2**31 - 1).map(int32)),
    (Data.ULONG, st.sampled_from([0, 255, 256, 2**64 - 1]).map(ulong)
     | st.integers(0, 2**64 - 1).map(ulong)),
    (Data.LONG, st.sampled_from([-(2**63), -129, -128, 127, 128, 2**63 - 1])
     | st.integers(-(2**63), 2**63 - 1)),
    (Data.FLOAT, st.floats(width=32).map(float32)),
    (Data.DOUBLE, st.floats()),
    (Data.CHAR, st.characters(blacklist_categories=()).map(char)),
    (Data.DECIMAL32, st.integers(0, 2**32 - 1).map(decimal32)),
    (Data.DECIMAL64, st.integers(0, 2**64 - 1).map(decimal64)),
    (Data.DECIMAL128, st.binary(min_size=16, max_size=16).map(decimal128)),
    (Data.TIMESTAMP, st.integers(-(2**63), 2**63 - 1).map(timestamp)),
    (Data.UUID, st.uuids()),
    (Data.BINARY, binaries),
    (Data.STRING, strings),
    (Data.SYMBOL, symbols),
]
scalars = st.one_of(st.none(), *(strategy for _, strategy in TYPED))
descriptors = st.integers(0, 2**64 - 1).map(ulong) | symbols
# proton cannot read a map with a binary key back (it hashes a memoryview): see
# test_binary_map_keys; NaN keys do not compare.
hashable_keys = st.one_of(st.none(), *(strategy for kind, strategy in TYPED
                                       if kind not in (Data.FLOAT, Data.DOUBLE, Data.BINARY)))


def arrays(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Array]:
    element_kinds = [st.just((kind, strategy)) for kind, strategy in TYPED] + [
        st.just((Data.LIST, st.lists(children, max_size=3))),
        st.just((Data.MAP, st.dictionaries(hashable_keys, children, max_size=3))),
    ]

    @st.composite
    def build(draw: st.DrawFn) -> Array:
        kind, strategy = draw(st.one_of(element_kinds))
        descriptor = draw(st.just(UNDESCRIBED) | descriptors)
        elements = draw(st.lists(strategy, max_size=5))
        return Array(descriptor, kind, *elements)

    return build()


def compounds(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(hashable_keys, children, max_size=5),
        # proton's binding loses the item after a described value that is itself a
        # described value's value: see test_described_described_value.
        st.builds(Described, descriptors, children.filter(lambda v: not isinstance(v, Described))),
        arrays(children),
        # Proton encodes arrays of nulls with zero-width elements (see test_array_of_nulls).
        st.integers(0, 5).map(lambda n: Array(UNDESCRIBED, Data.NULL, *([None] * n))),
    )


amqp_values = st.recursive(scalars, compounds, max_leaves=12)


@CHECKS
@given(amqp_values)
def test_decodes_what_proton_encodes_as_proton_does(value: Any) -> None:
    raw = proton_encode(value)
    theirs, used = proton_decode(raw)
    ours, after = decode_value(raw)
    assert after == used == len(raw)
    assert_same(ours, theirs)


@CHECKS
@given(amqp_values, st.binary(max_size=4))
def test_decodes_at_an_offset_and_stops_at_the_value_end(value: Any, prefix: bytes) -> None:
    raw = proton_encode(value)
    ours, after = decode_value(prefix + raw + b"\x40trailing", len(prefix))
    assert after == len(prefix) + len(raw)
    assert_same(ours, proton_decode(raw)[0])


# --- malformed input: ProtocolError and nothing else -------------------------


def decodes_or_refuses(raw: bytes) -> None:
    """Our decoder returns or raises ProtocolError; what it accepts, proton reads alike."""
    try:
        ours, after = decode_value(raw)
    except ProtocolError:
        return
    try:
        theirs, used = proton_decode(raw)
    except ValueError as exc:
        assert "memoryview" in str(exc), exc  # a binary map key: see test_binary_map_keys
        return
    except (DataException, TypeError) as exc:
        pytest.fail(f"decoded {raw.hex()} that proton refuses ({exc!r})")
    assert after == used
    if not has_described_described(ours):  # see test_described_described_value
        assert_same(ours, theirs)


def has_described_described(value: Any) -> bool:
    if isinstance(value, Described):
        return isinstance(value.value, Described) or has_described_described(value.value)
    if isinstance(value, Array):
        return has_described_described(list(value.elements))
    if isinstance(value, list):
        return any(has_described_described(v) for v in value)
    if isinstance(value, dict):
        return any(has_described_described(v) for v in (*value, *value.values()))
    return False


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes(raw: bytes) -> None:
    decodes_or_refuses(raw)


@CHECKS
@given(amqp_values, st.lists(st.tuples(st.integers(0), st.integers(0, 255)), max_size=4),
       st.integers(0))
def test_mutated_encodings(value: Any, changes: list[tuple[int, int]], cut: int) -> None:
    raw = bytearray(proton_encode(value))
    for index, new in changes:
        raw[index % len(raw)] = new
    decodes_or_refuses(bytes(raw))
    decodes_or_refuses(bytes(raw[: cut % len(raw)]))


@pytest.mark.parametrize(
    ("raw", "what"),
    [
        (b"", "truncated"),
        (b"\x22", "bad constructor 0x22"),
        (b"\x71\x00\x00", "truncated"),
        (b"\xa1\x05ab", "past the end"),
        (b"\xb0\xff\xff\xff\xffab", "past the end"),
        (b"\xa1\x02\xff\xfe", "not utf-8"),
        (b"\xa1\x03\xed\xa0\x80", "not utf-8"),  # an encoded surrogate
        (b"\xa3\x01\xe9", "not ascii"),
        (b"\x73\x00\x11\x00\x00", "not a code point"),
        (b"\xc1\x02\x01\x40", "odd number"),
        (b"\xc1\x03\x02\x45\x40", "not hashable"),
        (b"\xd0\x00\x00\x00\x04\xff\xff\xff\xff", "larger than the encoding"),
        (b"\xe0\x02\xff\x40", "larger than the encoding"),
        (b"\xc0\x05\x01\x40\x00\x00\x00", "does not match"),
        (b"\xc0\x02\x02\x40\x40", "larger than the encoding"),
        (b"\xc0\x04\x02\xa1\x01\x61", "truncated compound"),
        (b"\xe0\x01\x00", "without an element constructor"),
        (b"\xe0\x07\x01\x00\x53\x01\x00\x53\x02", "element constructor 0x00"),
        (b"\x00\xc1\x01\x00\x40", "descriptor is not a plain value"),
        (b"\x00\x53\x01", "truncated"),
    ],
)
def test_malformed_values(raw: bytes, what: str) -> None:
    with pytest.raises(ProtocolError, match=f"(?i){what}"):
        decode_value(raw)


def nested_lists(depth: int) -> bytes:
    raw = b"\x40"
    for _ in range(depth):
        raw = b"\xd0" + (len(raw) + 4).to_bytes(4, "big") + (1).to_bytes(4, "big") + raw
    return raw


def test_nesting_is_bounded() -> None:
    raw = nested_lists(MAX_DEPTH)
    assert_same(decode_value(raw)[0], proton_decode(raw)[0])
    with pytest.raises(ProtocolError, match="nesting deeper"):
        decode_value(nested_lists(MAX_DEPTH + 1))
    described = b"\x00\x53\x01" * (MAX_DEPTH * 10) + b"\x40"
    with pytest.raises(ProtocolError, match="nesting deeper"):
        decode_value(described)


def test_array_of_nulls() -> None:
    """Zero-width elements: as many as the array's encoding has bytes, no more."""
    raw = proton_encode(Array(UNDESCRIBED, Data.NULL, *([None] * 9)))
    assert_same(decode_value(raw)[0], proton_decode(raw)[0])
    with pytest.raises(ProtocolError, match="larger than the encoding"):
        decode_value(proton_encode(Array(UNDESCRIBED, Data.NULL, *([None] * 10))))


@pytest.mark.parametrize(("element_type", "elements"), [
    (Data.LONG, [-(2 ** 63), 0, 2 ** 63 - 1] * 200),
    (Data.TIMESTAMP, [timestamp(0), timestamp(1_700_000_000_000)] * 300),
    (Data.UUID, [uuid.UUID(int=i * 7919) for i in range(500)]),
])
def test_big_fixed_width_arrays_decode_in_bulk_as_proton_does(element_type: int,
                                                              elements: list[Any]) -> None:
    """Arrays of long, timestamp and uuid are read in one pass; same values and types."""
    raw = proton_encode(Array(UNDESCRIBED, element_type, *elements))
    assert_same(decode_value(raw)[0], proton_decode(raw)[0])
    # one element's bytes missing, with the sizes still saying the array is complete
    short = bytearray(raw[:-1])
    short[1:5] = (int.from_bytes(raw[1:5], "big") - 1).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="array size does not match"):
        decode_value(bytes(short))


def test_described_described_value() -> None:
    """proton's binding drops the list item after a described described value."""
    raw = proton_encode([Described(ulong(0), Described(ulong(1), None)), uint(7)])
    assert len(proton_decode(raw)[0]) == 1
    assert_same(decode_value(raw)[0], [Described(ulong(0), Described(ulong(1), None)), uint(7)])


def test_binary_map_keys() -> None:
    """Legal AMQP that proton's Python binding cannot read back: the key is bytes here."""
    raw = proton_encode({b"k": uint(1)})
    with pytest.raises(ValueError, match="memoryview"):
        proton_decode(raw)
    assert_same(decode_value(raw)[0], {b"k": uint(1)})


def test_boolean_byte_as_proton_reads_it() -> None:
    for raw in (b"\x56\x00", b"\x56\x01", b"\x56\x02"):
        assert_same(decode_value(raw)[0], proton_decode(raw)[0])


def test_decode_described() -> None:
    raw = proton_encode(Described(ulong(0x77), [uint(1)]))
    descriptor, value, after = decode_described(raw)
    assert_same(descriptor, ulong(0x77))
    assert_same(value, [uint(1)])
    assert after == len(raw)
    with pytest.raises(ProtocolError, match="not a described value"):
        decode_described(proton_encode([1]))


# --- whole messages against the proton-based decoder it replaces -------------


def proton_sections(raw: bytes) -> list[tuple[int, Any]]:
    """The message sections as proton's Data codec read them before sbmgmt.amqp.decode."""
    out = []
    offset = 0
    data = Data()
    while offset < len(raw):
        data.clear()
        used = data.decode(raw[offset:])
        data.rewind()
        data.next()
        section = owned(data.get_object())
        code = section.descriptor
        if isinstance(code, symbol):
            code = SECTION_CODES[code]
        out.append((int(code), section.value))
        offset += used
    return out


app_values = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                       st.text(max_size=300), st.binary(max_size=8), st.uuids(),
                       st.floats(allow_nan=False), st.integers(0, 2**32 - 1).map(uint),
                       st.integers(-(2**31), 2**31 - 1).map(int32))
keys = st.text(alphabet=st.characters(max_codepoint=127), max_size=10)
optional_text = st.none() | st.text(max_size=300)
messages = st.builds(
    ReceivedMessage,
    body=st.one_of(st.binary(max_size=300), st.lists(st.binary(max_size=8), min_size=2,
                                                     max_size=3)),
    message_id=optional_text, session_id=optional_text, correlation_id=optional_text,
    subject=optional_text, to=optional_text, reply_to=optional_text,
    content_type=st.none() | keys, user_id=st.none() | st.binary(max_size=4),
    partition_key=optional_text,
    time_to_live=st.none() | st.integers(0, 2**32 - 1).map(lambda ms: timedelta(milliseconds=ms)),
    durable=st.none() | st.booleans(), priority=st.none() | st.integers(0, 255),
    delivery_count=st.none() | st.integers(0, 2**32 - 1),
    group_sequence=st.none() | st.integers(0, 2**32 - 1),
    application_properties=st.dictionaries(keys, app_values, max_size=4),
    annotations=st.dictionaries(keys, app_values, max_size=3),
    delivery_annotations=st.dictionaries(keys, app_values, max_size=2),
    footer=st.dictionaries(keys, app_values, max_size=2),
    sequence_number=st.integers(0, 2**63 - 1),
    dead_letter_reason=optional_text,
)
value_bodies = st.builds(
    lambda body_type, body, number: ReceivedMessage(body_type=body_type, body=body,
                                                    sequence_number=number),
    st.just("value"), amqp_values, st.integers(0, 2**63 - 1),
) | st.builds(
    lambda body, number: ReceivedMessage(body_type="sequence", body=body, sequence_number=number),
    st.lists(amqp_values, max_size=4), st.integers(0, 2**63 - 1),
)


def decode_both(raw: bytes, cls: type[Message]) -> tuple[Message, Message]:
    ours = cls.from_bytes(raw)
    with pytest.MonkeyPatch.context() as patch:
        # proton's sections, through the generic reading (test_decode_common.py holds the
        # one-pass reading of the common encodings to the generic one)
        patch.setattr(_message_common, "_decode_common", lambda raw, decoding, defaults=None: None)
        patch.setattr(_message_sections, "_sections", proton_sections)
        theirs = cls.from_bytes(raw)
    return ours, theirs


@CHECKS
@given(messages | value_bodies)
def test_messages_decode_as_with_proton(message: ReceivedMessage) -> None:
    raw = message.to_bytes()
    for cls in (ReceivedMessage, Message):
        ours, theirs = decode_both(raw, cls)
        assert type(ours) is type(theirs)
        assert ours.model_fields_set == theirs.model_fields_set
        assert list(vars(ours)) == list(vars(theirs))
        assert_same(vars(ours), vars(theirs))


@CHECKS
@given(messages, st.lists(st.tuples(st.integers(0), st.integers(0, 255)), min_size=1,
                          max_size=3))
def test_mutated_messages_decode_or_raise_protocol_error(
    message: ReceivedMessage, changes: list[tuple[int, int]]
) -> None:
    raw = bytearray(message.to_bytes())
    for index, new in changes:
        raw[index % len(raw)] = new
    try:
        decoded = ReceivedMessage.from_bytes(bytes(raw))
    except ProtocolError:
        return
    assert isinstance(decoded.sequence_number, int)


def test_user_id_must_be_binary() -> None:
    raw = proton_encode(Described(ulong(0x73), [None, uint(2**31)])) + proton_encode(
        Described(ulong(0x72), {symbol("x-opt-sequence-number"): 1}))
    with pytest.raises(ProtocolError, match="user-id"):
        ReceivedMessage.from_bytes(raw)
