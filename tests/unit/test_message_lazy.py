"""Lazily decoded messages (sbmgmt/_messages/lazy_decoder.py) against the eager decoder
(``ReceivedMessage.from_bytes``): the same fields, read in any order and from several
threads at once, the same public behaviour at every stage of their decoding; the
structure, the sequence number and the lock token checked at once, a malformed rest at
the first read of a field left."""

from __future__ import annotations

import contextlib
import itertools
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from proton import Described, symbol, timestamp, ulong
from pydantic_core import PydanticSerializationError
from test_decode import amqp_values, app_values, assert_same, messages, value_bodies
from test_decode_common import ANNOTATIONS, encodings, mutated, mutations, section, text_maps

from sbmgmt._messages.lazy_decoder import _fields_set, _instance_dict, lazy_decoder
from sbmgmt.amqp.decode import decode_value
from sbmgmt.amqp.encode import encode_value
from sbmgmt.amqp.scan import decode_text_map, text_map_find, text_map_find_two, value_end
from sbmgmt.amqp.sections import section_spans, sections
from sbmgmt.amqp.values import Fields
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message, MessageState, ReceivedMessage
from sbmgmt.ops import peek_message
from sbmgmt.ops._messages import decode_message_list, encoded_message_list
from tests._lazy_checks import (
    BEHAVIOURS,
    NAMES,
    assert_behaves_as,
    assert_reads_as,
    outcome,
    read_from_threads,
    snapshot,
)

LAZY = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
decode = lazy_decoder(ReceivedMessage, ReceivedMessage._construct)

times = st.integers(-(2**40), 2**45).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms))
texts = st.none() | st.text(max_size=20)
#: Every field the wire carries, the Service Bus annotations included.
service_messages = st.builds(
    ReceivedMessage,
    body=st.binary(max_size=40), message_id=texts, session_id=texts, correlation_id=texts,
    subject=texts, to=texts, reply_to=texts, reply_to_session_id=texts,
    content_type=st.none() | st.sampled_from(["text/plain", "application/json"]),
    content_encoding=st.none() | st.just("gzip"), user_id=st.none() | st.binary(max_size=4),
    absolute_expiry_time=st.none() | times, creation_time=st.none() | times,
    group_sequence=st.none() | st.integers(0, 2**32 - 1),
    partition_key=texts, via_partition_key=texts, scheduled_enqueue_time=st.none() | times,
    durable=st.none() | st.booleans(), priority=st.none() | st.integers(0, 255),
    time_to_live=st.none() | st.integers(0, 2**32 - 1).map(
        lambda ms: timedelta(milliseconds=ms)),
    first_acquirer=st.none() | st.booleans(),
    delivery_count=st.none() | st.integers(0, 2**32 - 1),
    application_properties=st.dictionaries(st.text(max_size=8), app_values, max_size=3),
    annotations=st.dictionaries(st.text(alphabet="abcxyz-", min_size=1, max_size=8).map(
        lambda k: "user-" + k), app_values, max_size=2),
    delivery_annotations=st.dictionaries(st.just("da"), app_values, max_size=1),
    footer=st.dictionaries(st.just("f"), app_values, max_size=1),
    sequence_number=st.integers(0, 2**63 - 1), enqueued_time=st.none() | times,
    locked_until=st.none() | times, state=st.sampled_from(MessageState),
    dead_letter_reason=texts, dead_letter_description=texts, dead_letter_source=texts,
)
# NaN is not equal to itself: two decodings of a message holding one are never equal.
received = (service_messages | messages | value_bodies).filter(lambda m: "nan" not in repr(m))
tokens = st.none() | st.uuids()


@st.composite
def wires(draw: st.DrawFn) -> tuple[bytes, uuid.UUID | None]:
    """A message's bytes, as proton and sbmgmt encode them or compacted (list8 / map8),
    and the lock token it comes with."""
    return draw(st.sampled_from(encodings(draw(received)))), draw(tokens)


def both(raw: bytes, token: uuid.UUID | None) -> tuple[ReceivedMessage, ReceivedMessage]:
    return decode(raw, token), ReceivedMessage.from_bytes(raw, lock_token=token)


# --- what the lazy decoding gives -----------------------------------------------


@LAZY
@given(wires(), st.permutations(NAMES))
def test_fields_read_in_any_order_are_the_eager_ones(wire: tuple[bytes, uuid.UUID | None],
                                                     order: list[str]) -> None:
    lazy, eager = both(*wire)
    assert type(lazy) is ReceivedMessage
    assert_reads_as(lazy, eager, order)
    assert_same(vars(lazy), vars(eager))
    assert list(vars(lazy)) == list(vars(eager)) == list(NAMES)  # declaration order
    assert lazy._pending is None  # every field decoded: the wire bytes are dropped


@LAZY
@given(wires(), st.permutations(NAMES), st.integers(0, len(NAMES)),
       st.permutations(list(BEHAVIOURS)))
def test_public_behaviour_from_any_stage_is_the_eager_one(
        wire: tuple[bytes, uuid.UUID | None], order: list[str], read: int,
        behaviours: list[str]) -> None:
    lazy, eager = both(*wire)
    assert_reads_as(lazy, eager, order[:read])
    assert_behaves_as(lazy, eager, behaviours)
    assert_reads_as(lazy, eager, order)


@LAZY
@given(wires(), st.permutations(NAMES), st.integers(0, len(NAMES)), st.integers(0, len(NAMES)))
def test_messages_at_different_stages_are_equal(wire: tuple[bytes, uuid.UUID | None],
                                                order: list[str], first: int,
                                                second: int) -> None:
    one, other = decode(*wire), decode(*wire)
    for name in order[:first]:
        getattr(one, name)
    for name in order[:second]:
        getattr(other, name)
    assert one == other and other == one
    different = decode(ReceivedMessage(sequence_number=(one.sequence_number or 0) ^ 1,
                                       body=b"other").to_bytes(), None)
    assert one != different and different != one


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wires(), st.lists(st.permutations(NAMES), min_size=2, max_size=4),
       st.lists(st.sampled_from(list(BEHAVIOURS)), max_size=3))
def test_read_from_several_threads_at_once(wire: tuple[bytes, uuid.UUID | None],
                                           orders: list[list[str]],
                                           behaviours: list[str]) -> None:
    """Each thread reads what the eager message holds, and every thread the very same
    objects: a value once in the message is never replaced."""
    lazy, eager = both(*wire)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # as many thread switches as the interpreter allows
    try:
        seen = read_from_threads(lazy, orders, behaviours)
    finally:
        sys.setswitchinterval(switch)
    for values in seen:
        assert_reads_as(lazy, eager, NAMES)
        for name in NAMES:
            assert values[name] is seen[0][name], name
        for name in behaviours:
            assert values[f"behaviour:{name}"] == outcome(name, eager), name
    assert snapshot(lazy) == snapshot(eager) and lazy._pending is None


def test_the_sequence_number_state_and_lock_token_at_once_the_rest_at_the_first_other_read(
        ) -> None:
    token = uuid.uuid4()
    raw = ReceivedMessage(sequence_number=77, subject="s", body=b"b",
                          application_properties={"k": 1}).to_bytes()
    lazy = decode(raw, token)
    first = _instance_dict(lazy)  # what is there, without asking for __dict__
    assert first == {"sequence_number": 77, "state": MessageState.ACTIVE, "lock_token": token}
    assert lazy.sequence_number == 77 and lazy.lock_token == token  # nothing more decoded
    assert lazy.state is MessageState.ACTIVE
    deferred = decode(ReceivedMessage(sequence_number=5, state=MessageState.DEFERRED,
                                      body=b"d").to_bytes(), None)
    assert _instance_dict(deferred)["state"] is MessageState.DEFERRED  # one map reading
    assert lazy._pending == raw and lazy.model_fields_set == set(NAMES)
    number = lazy.sequence_number
    assert lazy.subject == "s"  # the rest, all of it, at once
    assert lazy._pending is None
    assert list(_instance_dict(lazy)) == list(NAMES)  # declaration order
    assert _instance_dict(lazy) == vars(ReceivedMessage.from_bytes(raw, lock_token=token))
    assert lazy.sequence_number is number  # read at once: the very same object
    assert lazy.body == b"b" and lazy.application_properties == {"k": 1}
    assert vars(lazy) is _instance_dict(lazy)


def test_the_fields_set_is_made_at_its_first_read_one_per_message() -> None:
    raw = ReceivedMessage(sequence_number=3).to_bytes()
    first, second = decode(raw, None), decode(raw, None)
    with pytest.raises(AttributeError):  # the slot itself, unset until read
        _fields_set(first)
    assert first.model_fields_set == set(NAMES) and _fields_set(first) is first.model_fields_set
    assert second.model_fields_set == set(NAMES)
    assert first.model_fields_set is not second.model_fields_set
    assert ReceivedMessage.from_bytes(raw).model_fields_set == set(NAMES)


def test_vars_is_every_field() -> None:
    raw = ReceivedMessage(sequence_number=7, subject="s").to_bytes()
    lazy = decode(raw, None)
    assert vars(lazy) == vars(ReceivedMessage.from_bytes(raw))
    assert list(vars(lazy)) == list(NAMES) and lazy._pending is None


def test_each_message_keeps_its_own_bytes_not_the_reply() -> None:
    wires = [ReceivedMessage(sequence_number=n, body=b"x" * 300).to_bytes() for n in range(3)]
    reply = encode_value({"messages": encoded_message_list(wires)})
    body, _ = decode_value(reply)
    listed = decode_message_list(Fields(body, peek_message.OPERATION))
    for message, raw in zip(listed, wires, strict=True):
        kept = message._pending
        assert type(kept) is bytes and kept == raw and len(kept) < len(reply)


def test_to_bytes_before_any_other_read_is_the_bytes_it_came_as() -> None:
    """A peeked message written out before any field but those read at once is read (an
    export, a resubmit) is the bytes it came as, not its fields encoded anew: here the
    annotations came as a map8, which the encoder would write as a map32 (a hypothesis
    example of test_public_behaviour_from_any_stage_is_the_eager_one)."""
    raw = (b"\x00Sr\xc1\x1a\x02\xa3\x15x-opt-sequence-number\x55\x00"  # a map8
           b"\x00Sw\x40")  # an amqp-value, null
    assert decode(raw, None).to_bytes() == ReceivedMessage.from_bytes(raw).to_bytes() == raw
    sent = ReceivedMessage(sequence_number=3, subject="s", body=b"x").to_bytes()
    assert decode(sent, None).to_bytes() == sent


def test_hash_raises_as_for_an_eager_message() -> None:
    raw = ReceivedMessage(sequence_number=1).to_bytes()
    for message in (decode(raw, None), ReceivedMessage.from_bytes(raw),
                    ReceivedMessage(sequence_number=1)):
        with pytest.raises(TypeError, match="unhashable type: 'dict'"):
            hash(message)


def test_the_serialization_schema_is_the_messages_own() -> None:
    """Nothing of the lazy decoding shows in the JSON schemas."""
    for cls in (Message, ReceivedMessage):
        assert (cls.model_json_schema(mode="serialization")
                == cls.model_json_schema(mode="validation"))
        assert set(cls.model_json_schema(mode="serialization")["properties"]) == set(
            cls.model_fields)


def test_a_message_nested_in_a_model_typed_message_is_dumped_whole() -> None:
    """A serializer typed ``Message`` (schedule-message's request) dumps a lazy
    ReceivedMessage with every Message field, as it does an eager one."""
    from sbmgmt.ops import schedule_message

    raw = ReceivedMessage(sequence_number=3, message_id="m", subject="s",
                          scheduled_enqueue_time=datetime(2030, 1, 1, tzinfo=timezone.utc),
                          application_properties={"a": 1}).to_bytes()
    dumps = [schedule_message.Request(messages=(message,)).model_dump(exclude={"transaction"})
             for message in both(raw, None)]
    assert dumps[0] == dumps[1] and dumps[0]["messages"][0]["subject"] == "s"


def test_the_deprecated_copy_copies_every_field() -> None:
    lazy, eager = both(ReceivedMessage(sequence_number=5, subject="s").to_bytes(), None)
    with pytest.warns(DeprecationWarning):
        copied = lazy.copy(update={"to": "t"})
    with pytest.warns(DeprecationWarning):
        assert snapshot(copied) == snapshot(eager.copy(update={"to": "t"}))


# --- malformed bytes: at once if their structure is, at the read otherwise --------


@pytest.mark.parametrize("raw", [
    b"", b"garbage!", b"\x00\x53\x77", b"\x00\x53\x70\x45" * 3,  # as from_bytes refuses
    ReceivedMessage(sequence_number=1, body=b"x" * 40).to_bytes()[:-1],  # truncated
    ANNOTATIONS + b"\x00\x53\x79\x40",  # an unknown section
    ANNOTATIONS + b"\x00\xa3\x08amqp:foo\x40",
    ANNOTATIONS + b"\x00\x53\x75\xb0\x00\x00\x01\x00xx",  # a size past the end
    ANNOTATIONS + b"\x00\x53\x75\x99",  # not a constructor
    section(0x75, b"no annotations"),
    section(0x72, {symbol("x-opt-sequence-number"): None}) + section(0x75, b"x"),
    section(0x72, {symbol("x-opt-sequence-number"): "seven"}),
])
def test_broken_structure_or_sequence_number_is_refused_at_once(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        ReceivedMessage.from_bytes(raw)
    with pytest.raises(ProtocolError):
        decode(raw, None)


@pytest.mark.parametrize("bad", [
    section(0x70, "not a list"),
    section(0x70, [None, "not a number"]),
    section(0x71, "not a map"),
    section(0x73, [None, "not binary"]),
    section(0x73, [None, None, None, None, None, None, None, None, "not a time"]),
    section(0x74, [1, 2]),
    section(0x74, {"DeadLetterReason": b"binary"}),
    section(0x75, "not binary"),
    section(0x76, "not a list"),
    section(0x78, 5),
    # a list whose size is right and whose count is not: found, not decoded
    b"\x00\x53\x73\xc0\x03\x05\x40\x40",
])
def test_a_malformed_section_raises_at_the_first_read_of_a_field_left(bad: bytes) -> None:
    good = ReceivedMessage(subject="s", body=b"b", application_properties={"k": 1},
                           delivery_count=2)
    raw = good.model_copy(update={"sequence_number": 9}).to_bytes() + bad
    with pytest.raises(ProtocolError) as eager_error:
        ReceivedMessage.from_bytes(raw)
    lazy = decode(raw, None)
    assert lazy.sequence_number == 9 and lazy.lock_token is None  # read at once
    assert lazy.state is MessageState.ACTIVE  # read at once, from the annotations
    for name in [*NAMES, "subject"]:  # any other field, at every read: the same error
        if name not in ("sequence_number", "lock_token", "state"):
            with pytest.raises(ProtocolError, match=rf"^ReceivedMessage\.{name}: the "
                                                    "message does not decode: ") as error:
                getattr(lazy, name)
            assert str(error.value).endswith(str(eager_error.value))
    for behaviour in ("repr", "model_dump", "iteration", "hash", "copy.copy", "pickle",
                      "model_copy"):
        with pytest.raises(ProtocolError, match="the message does not decode"):
            BEHAVIOURS[behaviour](lazy)
    for behaviour in ("model_dump_json", "in a Response"):  # pydantic-core wraps it in JSON
        with pytest.raises((ProtocolError, PydanticSerializationError),
                           match="ProtocolError: the message does not decode"):
            BEHAVIOURS[behaviour](lazy)
    with pytest.raises(ProtocolError, match="the message does not decode"):
        assert lazy == ReceivedMessage.from_bytes(good.model_copy(
            update={"sequence_number": 9}).to_bytes())
    assert lazy._pending == raw  # kept, for what it is worth


def test_a_malformed_message_in_a_reply_is_named_by_peek_messages_at_the_read() -> None:
    wire = ReceivedMessage(sequence_number=4, body=b"b").to_bytes() + section(0x70, "x")
    listed = decode_message_list(Fields({"messages": encoded_message_list([wire])},
                                        peek_message.OPERATION))
    assert listed[0].sequence_number == 4
    with pytest.raises(ProtocolError, match=r"body: the message does not decode: .*header"):
        assert listed[0].body == b"b"


@LAZY
@given(received, mutations)
def test_mutated_bytes_decode_as_eagerly_or_raise_protocol_error(
        message: ReceivedMessage, changes: list[tuple[int, int]]) -> None:
    """Whatever the bytes: where from_bytes decodes them, the lazy message has the same
    fields and behaviour; where it raises, the lazy decoding raises ProtocolError at once
    (structure, sequence number) or at the read of a malformed section's field."""
    for raw in encodings(message):
        for broken in (mutated(raw, changes), raw[:changes[0][0] % len(raw)]):
            _assert_lazy_as_eager(broken)


def _assert_lazy_as_eager(raw: bytes) -> None:
    try:
        eager = ReceivedMessage.from_bytes(raw)
    except ProtocolError:
        eager = None
    try:
        lazy = decode(raw, None)
    except ProtocolError:
        assert eager is None, raw.hex()  # what the lazy decoding refuses at once, eager does
        event("refused at once")
        return
    if eager is not None:
        assert_reads_as(lazy, eager, NAMES)
        assert snapshot(lazy) == snapshot(eager)
        event("decoded as eagerly")
        return
    failed = []
    for name in NAMES:
        try:
            getattr(lazy, name)
        except ProtocolError:
            failed.append(name)
    assert failed, raw.hex()  # the section from_bytes refused fails at the read
    event("refused at a read")


# --- the readers the lazy decoding checks the structure with ----------------------


def _value_ends(raw: bytes) -> Iterator[tuple[int, int | None]]:
    """(offset, what decode_value says ends the value there, None if it raises)."""
    for offset in range(len(raw)):
        try:
            yield offset, decode_value(raw, offset)[1]
        except ProtocolError:
            yield offset, None


@LAZY
@given(amqp_values, mutations)
def test_value_end_is_where_the_decoded_value_ends(value: Any,
                                                   changes: list[tuple[int, int]]) -> None:
    raw = encode_value(value)
    assert value_end(raw, 0, len(raw)) == len(raw)
    for broken in (mutated(raw, changes), raw[:changes[0][0] % len(raw)]):
        for offset, end in _value_ends(broken):
            if end is not None:  # a value the decoder reads: the same end
                assert value_end(broken, offset, len(broken)) == end
            else:  # else value_end may find its bounds, or raises ProtocolError
                with contextlib.suppress(ProtocolError):
                    value_end(broken, offset, len(broken))


@LAZY
@given(received, mutations)
def test_section_spans_are_the_sections_decoded(message: ReceivedMessage,
                                                changes: list[tuple[int, int]]) -> None:
    for raw in encodings(message):
        for candidate in (raw, mutated(raw, changes)):
            try:
                decoded = sections(candidate)
            except ProtocolError:
                continue
            spans = section_spans(candidate)
            assert [code for code, _ in decoded] == [code for code, _, _ in spans]
            assert spans[0][1] == 0 and spans[-1][2] == len(candidate)
            assert all(a[2] == b[1] for a, b in itertools.pairwise(spans))
            for (_, start, end), (_, value) in zip(spans, decoded, strict=True):
                assert_same(sections(candidate[start:end])[0][1], value)


@LAZY
@given(text_maps, st.text(max_size=5), mutations)
def test_text_map_find_is_the_key_of_the_decoded_map(value: dict[Any, Any], key: str,
                                                     changes: list[tuple[int, int]]) -> None:
    """Where the map decodes, the value found is the key's; where the reader raises, so
    does the decoder (it checks less: what is inside the other values is not read)."""
    raw = encode_value(value)
    keys = [str(k) for k in value] + [key]
    for candidate in (raw, mutated(raw, changes)):
        try:
            decoded: dict[str, Any] | None = decode_text_map(candidate, 0)[0]
        except ProtocolError:
            decoded = None
        for wanted in keys:
            try:
                found = text_map_find(candidate, 0, wanted.encode())
            except ProtocolError:
                with pytest.raises(ProtocolError):
                    decode_value(candidate, 0)
                continue
            if decoded is None:
                continue
            if found is not None:
                assert wanted in decoded
                assert_same(decode_value(candidate, found)[0], decoded[wanted])
            elif candidate == raw:  # keys below 256 bytes: all str8 / sym8, all read
                assert wanted not in decoded or any(len(str(k).encode()) > 255 for k in value)


@LAZY
@given(text_maps, st.text(max_size=5), st.text(max_size=5))
def test_text_map_find_two_finds_each_key_as_text_map_find_does(
        value: dict[Any, Any], key: str, other: str) -> None:
    raw = encode_value(value)
    for first, second in itertools.product([*map(str, value), key], [other, key]):
        pair = text_map_find_two(raw, 0, first.encode(), second.encode())
        one = text_map_find(raw, 0, first.encode())
        if pair is None:
            assert one is None
            continue
        assert pair[0] == one
        if second != first:
            assert pair[1] == text_map_find(raw, 0, second.encode())


def test_text_map_find_declines_what_it_does_not_read() -> None:
    key = b"x-opt-sequence-number"
    assert text_map_find(encode_value([1, 2]), 0, key) is None  # not a map
    assert text_map_find(encode_value({1: 2, "x-opt-sequence-number": 3}), 0, key) is None
    raw = encode_value({symbol("x-opt-sequence-number"): 1,
                             "x-opt-sequence-number": 2})  # the last one, as in the dict
    found = text_map_find(raw, 0, key)
    assert found is not None and decode_value(raw, found)[0] == 2


def test_an_unusual_sequence_number_encoding_is_read_by_the_generic_decoding() -> None:
    for mapped in ({symbol("x-opt-sequence-number"): ulong(3)},  # not a common one
                   {symbol("x-opt-sequence-number"): 1, "x-opt-sequence-number": 3},
                   {symbol("k" * 300): 1, symbol("x-opt-sequence-number"): 3}):
        raw = section(0x72, mapped) + section(0x75, b"x")
        lazy, eager = both(raw, None)
        assert lazy.sequence_number == eager.sequence_number == 3
        assert_reads_as(lazy, eager, NAMES)
    raw = (encode_value(Described(symbol("amqp:message-annotations:map"),
                                       {symbol("x-opt-sequence-number"): 8}))
           + section(0x75, b"x") + encode_value(Described(ulong(0x78), {"f": timestamp(1)})))
    lazy, eager = both(raw, None)
    assert lazy.sequence_number == 8
    assert_reads_as(lazy, eager, NAMES)
