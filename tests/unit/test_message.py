"""Message <-> AMQP wire bytes: every section, Service Bus annotations, and SDK interop."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import proton
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from sbmgmt.amqp.sections import section_spans
from sbmgmt.errors import ProtocolError
from sbmgmt.message import (
    BrokerHead,
    Message,
    MessageState,
    ReceivedMessage,
    as_received,
    encode_sections,
    encoded_as_now,
    lock_token_from_delivery_tag,
    same_encoding,
)

T0 = datetime(2031, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
ms_datetimes = st.integers(0, 253402300799000).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms))
texts = st.text(max_size=12)
symbols = st.text(alphabet=st.characters(max_codepoint=127), max_size=12)
values = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), texts,
                   st.binary(max_size=8), st.uuids())


@settings(max_examples=150, deadline=None)
@given(
    message=st.builds(
        ReceivedMessage,
        body=st.one_of(st.binary(max_size=40), st.lists(st.binary(min_size=1, max_size=8),
                                                        min_size=2, max_size=3)),
        message_id=st.none() | texts, session_id=st.none() | texts,
        correlation_id=st.none() | texts, subject=st.none() | texts, to=st.none() | texts,
        reply_to=st.none() | texts, reply_to_session_id=st.none() | texts,
        content_type=st.none() | symbols.filter(bool), user_id=st.none() | st.binary(max_size=4),
        partition_key=st.none() | texts, time_to_live=st.none() | st.integers(0, 2**31).map(
            lambda ms: timedelta(milliseconds=ms)),
        scheduled_enqueue_time=st.none() | ms_datetimes, creation_time=st.none() | ms_datetimes,
        durable=st.none() | st.booleans(), priority=st.none() | st.integers(0, 255),
        delivery_count=st.none() | st.integers(0, 2**32 - 1),
        application_properties=st.dictionaries(texts, values, max_size=3),
        annotations=st.dictionaries(symbols.map(lambda k: "user-" + k), values, max_size=2),
        delivery_annotations=st.dictionaries(symbols, values, max_size=2),
        footer=st.dictionaries(symbols, values, max_size=2),
        sequence_number=st.integers(0, 2**63 - 1), enqueued_time=st.none() | ms_datetimes,
        locked_until=st.none() | ms_datetimes, state=st.sampled_from(MessageState),
        dead_letter_reason=st.none() | texts, dead_letter_description=st.none() | texts,
        dead_letter_source=st.none() | texts,
    )
)
def test_received_message_round_trips_through_bytes(message: ReceivedMessage) -> None:
    assert ReceivedMessage.from_bytes(message.to_bytes()) == message


_BROKER_NAMES = ["x-opt-partition-key", "x-opt-via-partition-key",
                 "x-opt-scheduled-enqueue-time", "x-opt-sequence-number",
                 "x-opt-enqueued-time", "x-opt-locked-until", "x-opt-message-state",
                 "x-opt-deadletter-source"]


def _broker_written(message: ReceivedMessage) -> list[tuple[str, object]]:
    """The broker's annotations as the service writes them, in order (the reference)."""
    def ts(moment: datetime | None) -> object:
        return None if moment is None else proton.timestamp(
            (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1))
    written = [
        ("x-opt-partition-key", message.partition_key),
        ("x-opt-via-partition-key", message.via_partition_key),
        ("x-opt-scheduled-enqueue-time", ts(message.scheduled_enqueue_time)),
        ("x-opt-sequence-number", message.sequence_number),
        ("x-opt-enqueued-time", ts(message.enqueued_time)),
        ("x-opt-locked-until", ts(message.locked_until)),
        ("x-opt-message-state", None if message.state is MessageState.ACTIVE
         else int(message.state)),
        ("x-opt-deadletter-source", message.dead_letter_source),
    ]
    return [(name, value) for name, value in written if value is not None]


@settings(max_examples=150, deadline=None)
@given(
    message=st.builds(
        ReceivedMessage, body=st.just(b"b"),
        durable=st.none() | st.booleans(), priority=st.none() | st.integers(0, 255),
        time_to_live=st.none() | st.integers(0, 2**31).map(lambda ms: timedelta(milliseconds=ms)),
        first_acquirer=st.none() | st.booleans(),
        delivery_count=st.none() | st.integers(0, 2**32 - 1),
        partition_key=st.none() | texts, scheduled_enqueue_time=st.none() | ms_datetimes,
        delivery_annotations=st.dictionaries(symbols, values, max_size=2),
        sequence_number=st.integers(0, 2**63 - 1), enqueued_time=st.none() | ms_datetimes,
        locked_until=st.none() | ms_datetimes, state=st.sampled_from(MessageState),
        dead_letter_source=st.none() | texts,
    ),
    # the sender's own, some under a broker's name (replaced where they stand)
    annotations=st.dictionaries(st.sampled_from(["user-a", "user-b", *_BROKER_NAMES]), values,
                                max_size=3),
)
def test_the_broker_head_is_what_proton_encodes(message: ReceivedMessage,
                                                annotations: dict[str, object]) -> None:
    """The header, delivery annotations and message annotations of BrokerHead are proton's
    encoding of those sections as the service writes them."""
    message = message.model_copy(update={"annotations": annotations})
    expected = b""
    header = [message.durable,
              None if message.priority is None else proton.ubyte(message.priority),
              None if message.time_to_live is None else proton.uint(
                  message.time_to_live // timedelta(milliseconds=1)),
              message.first_acquirer,
              None if message.delivery_count is None else proton.uint(message.delivery_count)]
    while header and header[-1] is None:
        header.pop()
    written = {proton.symbol(key): value for key, value in annotations.items()}
    written.update({proton.symbol(key): value for key, value in _broker_written(message)})
    for code, value in ((0x70, header), (0x71, {proton.symbol(k): v for k, v in
                                                message.delivery_annotations.items()}),
                        (0x72, written)):
        if value:
            data = proton.Data()
            data.put_object(proton.Described(proton.ulong(code), value))
            expected += bytes(data.encode())
    head = BrokerHead(message).sections(message.delivery_count, message.locked_until,
                                        message.state)
    assert b"".join(section for _, section in head) == expected
    assert encode_sections(message, (0x70, 0x71, 0x72)) == expected


def test_sections_are_what_proton_reads() -> None:
    message = Message(body=b"payload", message_id="id-1", session_id="s-1", subject="label",
                      content_type="application/json", correlation_id="c", to="dest",
                      reply_to="back", reply_to_session_id="rs", partition_key="s-1",
                      time_to_live=timedelta(seconds=30), scheduled_enqueue_time=T0,
                      application_properties={"n": 1, "t": "x"})
    wire = proton.Message()
    wire.decode(message.to_bytes())
    assert bytes(wire.body) == b"payload"
    assert (wire.id, wire.group_id, wire.subject) == ("id-1", "s-1", "label")
    assert (wire.correlation_id, wire.address, wire.reply_to) == ("c", "dest", "back")
    assert wire.reply_to_group_id == "rs" and wire.content_type == "application/json"
    assert wire.ttl == 30
    assert wire.annotations["x-opt-scheduled-enqueue-time"] == int(T0.timestamp() * 1000)
    assert wire.annotations["x-opt-partition-key"] == "s-1"
    assert wire.properties == {"n": 1, "t": "x"}


def test_str_body_is_sent_as_utf8_data() -> None:
    decoded = Message.from_bytes(Message(body="héllo").to_bytes())
    assert decoded.body == "héllo".encode() and decoded.body_type == "data"


def test_non_ascii_annotation_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="ASCII"):
        Message(annotations={"clé": 1}).to_bytes()


def test_value_and_sequence_bodies() -> None:
    value = Message(body={"a": [1, 2]}, body_type="value")
    assert Message.from_bytes(value.to_bytes()).body == {"a": [1, 2]}
    sequence = Message(body=[1, "two"], body_type="sequence")
    decoded = Message.from_bytes(sequence.to_bytes())
    assert decoded.body == [1, "two"] and decoded.body_type == "sequence"
    with pytest.raises(ValueError, match="sequence"):
        Message(body="x", body_type="sequence").to_bytes()


def test_service_bus_annotations_are_typed_fields() -> None:
    wire = proton.Message(id="m", body=b"x", properties={"DeadLetterReason": "because",
                                                         "DeadLetterErrorDescription": "why",
                                                         "other": 1})
    wire.annotations = {
        proton.symbol("x-opt-sequence-number"): 99,
        proton.symbol("x-opt-enqueued-time"): proton.timestamp(1_700_000_000_000),
        proton.symbol("x-opt-locked-until"): proton.timestamp(1_700_000_060_000),
        proton.symbol("x-opt-message-state"): 1,
        proton.symbol("x-opt-deadletter-source"): "queue",
        proton.symbol("x-custom"): "kept",
    }
    message = ReceivedMessage.from_bytes(wire.encode())
    assert message.sequence_number == 99
    assert message.enqueued_time == datetime.fromtimestamp(1_700_000_000, timezone.utc)
    assert message.locked_until == datetime.fromtimestamp(1_700_000_060, timezone.utc)
    assert message.state is MessageState.DEFERRED
    assert message.dead_letter_source == "queue"
    assert (message.dead_letter_reason, message.dead_letter_description) == ("because", "why")
    # Every application property from the wire stays (the dead-letter fields are views).
    assert message.application_properties == {
        "DeadLetterReason": "because", "DeadLetterErrorDescription": "why", "other": 1}
    assert message.annotations == {"x-custom": "kept"}
    assert message.raw_annotations["x-opt-sequence-number"] == 99


def test_dead_letter_fields_are_views_of_their_application_properties() -> None:
    built = ReceivedMessage(body=b"x", sequence_number=1, dead_letter_reason="r",
                            application_properties={"DeadLetterErrorDescription": "d"})
    assert built.application_properties == {"DeadLetterReason": "r",
                                             "DeadLetterErrorDescription": "d"}
    assert built.dead_letter_description == "d"
    assert ReceivedMessage.from_bytes(built.to_bytes()) == built


@pytest.mark.parametrize("raw", [b"", b"garbage!", b"\x00\x53\x77", b"\x00\x53\x70\x45" * 3])
def test_garbage_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        ReceivedMessage.from_bytes(raw)


def test_received_message_without_sequence_number_is_refused() -> None:
    with pytest.raises(ProtocolError, match="x-opt-sequence-number"):
        ReceivedMessage.from_bytes(Message(body=b"x").to_bytes())


def test_lock_token_uses_dotnet_guid_byte_order() -> None:
    token = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    assert lock_token_from_delivery_tag(token.bytes_le) == token
    with pytest.raises(ProtocolError):
        lock_token_from_delivery_tag(b"short")


def test_interop_with_the_official_sdk_message() -> None:
    from azure.servicebus import ServiceBusMessage
    from azure.servicebus._pyamqp._decode import decode_payload
    from azure.servicebus._transport._pyamqp_transport import PyamqpTransport

    sdk = ServiceBusMessage(b"sdk-body", message_id="mid", session_id="sid", subject="subj",
                            content_type="text/plain", correlation_id="cid",
                            application_properties={"k": "v"}, scheduled_enqueue_time_utc=T0,
                            time_to_live=timedelta(seconds=10))
    sdk._message = PyamqpTransport.to_outgoing_amqp_message(sdk.raw_amqp_message)
    raw = bytes(PyamqpTransport.encode_message(sdk))
    ours = Message.from_bytes(raw)
    assert ours.body == b"sdk-body" and ours.message_id == "mid" and ours.session_id == "sid"
    assert ours.subject == "subj" and ours.content_type == "text/plain"
    assert ours.correlation_id == "cid" and ours.scheduled_enqueue_time == T0
    assert ours.time_to_live == timedelta(seconds=10)
    assert {str(k): v for k, v in ours.application_properties.items()} == {"k": "v"}

    back = decode_payload(memoryview(Message(
        body=b"ours", message_id="m2", session_id="s2", subject="sj",
        application_properties={"a": "b"}).to_bytes()))
    assert b"".join(back.data) == b"ours"
    assert back.properties.message_id in ("m2", b"m2")
    assert back.properties.group_id in ("s2", b"s2")


@pytest.mark.parametrize("cls", [Message, ReceivedMessage])
@pytest.mark.parametrize("lock_token", [None, uuid.UUID(int=7)])
def test_decoded_instances_are_what_model_construct_builds(cls: type[Message],
                                                           lock_token: uuid.UUID | None) -> None:
    """Message._construct writes pydantic's slots itself (for speed): the instance is the
    one pydantic's ``model_construct`` makes of the same fields."""
    raw = ReceivedMessage(body=b"x" * 64, message_id="m", subject="s", sequence_number=3,
                          enqueued_time=T0, application_properties={"k": 1},
                          annotations={"user-a": "b"}).to_bytes()
    ours = (ReceivedMessage.from_bytes(raw, lock_token=lock_token) if cls is ReceivedMessage
            else Message.from_bytes(raw))
    theirs = cls.model_construct(set(cls.model_fields), **vars(ours))
    assert type(ours) is type(theirs) and ours == theirs
    assert repr(ours) == repr(theirs) and list(vars(ours)) == list(vars(theirs))
    assert ours.model_fields_set == theirs.model_fields_set == set(cls.model_fields)
    assert ours.model_extra == theirs.model_extra and ours.__pydantic_private__ is None
    assert ours.model_copy(update={"subject": "t"}).subject == "t"


def _sent(decoded: bool) -> Message:
    message = Message(body=b"x" * 64, message_id="m", subject="s", priority=4,
                      application_properties={"k": 1}, annotations={"user-a": "b"})
    return Message.from_bytes(message.to_bytes()) if decoded else message


@pytest.mark.parametrize("decoded", [True, False])
def test_as_received_is_what_model_construct_builds(decoded: bool) -> None:
    """as_received writes pydantic's slots itself (for the fake's store): the instance is
    the one ``model_construct`` makes of the message's fields and the given ones, and it
    encodes as the message did where unchanged."""
    sent = _sent(decoded)
    extra = {"sequence_number": 9, "enqueued_time": T0}
    ours = as_received(sent, **extra)
    theirs = same_encoding(ReceivedMessage.model_construct(**{**dict(sent), **extra}), sent)
    assert type(ours) is ReceivedMessage and ours == theirs
    assert repr(ours) == repr(theirs) and list(vars(ours)) == list(vars(theirs))
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.model_extra is None and ours.__pydantic_private__ is None
    assert ours.to_bytes() == theirs.to_bytes()
    assert ReceivedMessage.from_bytes(ours.to_bytes()) == ours


def test_as_received_keeps_the_bytes_a_message_made_from_fields_was_sent_as() -> None:
    """A message made from fields is encoded once by as_received: a later change of a
    field's contents in place does not change what the stored copy is delivered as (a
    broker keeps the bytes it was sent)."""
    sent = _sent(decoded=False)
    stored = as_received(sent, sequence_number=1)
    before = stored.to_bytes()
    sent.application_properties["k"] = 2
    assert stored.to_bytes() == before
    assert ReceivedMessage.from_bytes(before).application_properties == {"k": 1}
    redelivered = stored.model_copy(update={"delivery_count": 3})
    assert ReceivedMessage.from_bytes(redelivered.to_bytes()).delivery_count == 3


def test_as_received_refuses_a_name_that_is_not_a_field() -> None:
    with pytest.raises(TypeError, match="not a ReceivedMessage field"):
        as_received(_sent(decoded=True), sequence=1)


@pytest.mark.parametrize("update", [None, {}, {"subject": "t", "delivery_count": 2}])
@pytest.mark.parametrize("make", ["message", "decoded", "lazy"])
def test_a_shallow_copy_is_the_one_pydantic_makes(make: str,
                                                  update: dict[str, object] | None) -> None:
    """Message.model_copy writes pydantic's slots itself: fields, fields set, extra and
    private are those of pydantic's own shallow copy."""
    raw = ReceivedMessage(body=b"x" * 8, message_id="m", sequence_number=3,
                          application_properties={"k": 1}).to_bytes()
    original: Message = {
        "message": lambda: Message(body=b"b", subject="s"),
        "decoded": lambda: ReceivedMessage.from_bytes(raw),
        "lazy": lambda: _lazy(raw),
    }[make]()
    ours = original.model_copy(update=update)
    theirs = BaseModel.model_copy(original, update=update)
    assert type(ours) is type(theirs) and ours == theirs
    assert list(vars(ours)) == list(vars(theirs))
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.model_fields_set is not original.model_fields_set
    assert vars(ours) is not vars(original)
    assert ours.model_extra is None and ours.__pydantic_private__ is None
    if update:
        assert ours.subject == "t" and original.subject != "t"


def _lazy(raw: bytes) -> ReceivedMessage:
    """A ReceivedMessage decoded lazily, as a peek reply's are."""
    from sbmgmt._messages.lazy_decoder import lazy_decoder
    return lazy_decoder(ReceivedMessage, ReceivedMessage._construct)(raw, None)


def test_encoded_as_now_writes_the_unchanged_sections_as_they_encoded_then() -> None:
    """A message kept as it encodes now: its sections go out as those bytes while their
    fields stay the same objects; a changed section is encoded anew."""
    sent = Message.from_bytes(_sent(decoded=False).to_bytes())
    changed = sent.model_copy(update={"application_properties": {"k": 2}})
    kept = encoded_as_now(changed)
    assert kept is changed
    before = kept.to_bytes()
    kept.application_properties["k"] = 3  # in place: the same object, so not seen
    assert kept.to_bytes() == before
    assert Message.from_bytes(before).application_properties == {"k": 2}
    again = kept.model_copy(update={"subject": "t"})
    assert Message.from_bytes(again.to_bytes()).subject == "t"
    assert again.to_bytes().endswith(before[-len(b"x" * 64):])


def test_an_unchanged_decoded_message_encodes_as_the_bytes_it_came_as() -> None:
    """Every section kept: in order, the bytes themselves; out of order, put in order (as
    when some are written anew); a repeated section stays (it is kept as it came)."""
    sent = Message(body=b"x" * 64, message_id="m", subject="s", durable=True,
                   application_properties={"k": 1}, annotations={"user-a": 1})
    raw = sent.to_bytes()
    assert Message.from_bytes(raw).to_bytes() == raw
    kept = encoded_as_now(sent.model_copy(update={"subject": "t"}))
    assert kept.to_bytes() == kept.to_bytes() and Message.from_bytes(kept.to_bytes()).subject == "t"
    parts = [raw[start:end] for _, start, end in section_spans(raw)]
    header, annotations, properties, application, body = parts
    swapped = b"".join([header, annotations, application, properties, body])
    assert Message.from_bytes(swapped).to_bytes() == raw
    repeated = b"".join([header, *parts])
    assert Message.from_bytes(repeated).to_bytes() == repeated
