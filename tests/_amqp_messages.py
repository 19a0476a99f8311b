"""Messages generated from AMQP 1.0's grammar (part 3 §3.2) for property tests, and the
comparisons the tests make of them.

:func:`amqp_messages`: any message sbmgmt's model holds, every value with its exact AMQP
type (proton's typed values): every section, message-id and correlation-id of their four
types, several data or amqp-sequence sections or one amqp-value, nested lists, maps,
arrays and described values in the application properties, the annotations and the body.
:func:`sdk_messages`: the same sections with the plain Python values the official SDK's
``AmqpAnnotatedMessage`` takes (it picks their AMQP types itself).

:func:`same` compares two values type for type (a ``ubyte`` is not an ``int32``);
:func:`plain` makes a value what the SDK's own decoder gives for it (text as bytes, a
described value as its value), so that a peek by the SDK can be held to one by sbmgmt.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st
from proton import (
    UNDESCRIBED,
    Array,
    Data,
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
from proton import Message as ProtonMessage
from proton.utils import BlockingConnection

from fakes import FakeNamespace
from sbmgmt.message import Message

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_texts = st.text(max_size=12)
_ascii = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
_binaries = st.binary(max_size=24)
_longs = st.integers(-2**63, 2**63 - 1)
_times = st.integers(0, 4102444800000).map(  # to 2100, in whole milliseconds
    lambda ms: _EPOCH + timedelta(milliseconds=ms))

#: The scalars the SDK's decoder reads back (it cannot decode char or the decimals).
_SDK_READABLE_SCALARS = st.one_of(
    st.none(), st.booleans(), _texts, _binaries, st.uuids(),
    st.integers(0, 255).map(ubyte), st.integers(0, 2**16 - 1).map(ushort),
    st.integers(0, 2**32 - 1).map(uint), st.integers(0, 2**64 - 1).map(ulong),
    st.integers(-128, 127).map(byte), st.integers(-2**15, 2**15 - 1).map(short),
    st.integers(-2**31, 2**31 - 1).map(int32), _longs,
    st.floats(width=32, allow_nan=False).map(float32), st.floats(allow_nan=False),
    st.integers(-2**62, 2**62).map(timestamp), _ascii.map(symbol),
)
#: ... and the rest of AMQP's scalars.
_OTHER_SCALARS = st.one_of(
    st.characters(exclude_categories=("Cs",)).map(char),
    st.integers(0, 2**32 - 1).map(decimal32), st.integers(0, 2**64 - 1).map(decimal64),
    st.binary(min_size=16, max_size=16).map(decimal128),
)

#: Arrays of the element types sbmgmt's encoder writes itself: (proton's code, elements).
_ARRAYS = st.one_of(
    st.lists(st.integers(-2**31, 2**31 - 1).map(int32), max_size=4).map(
        lambda v: Array(UNDESCRIBED, Data.INT, *v)),
    st.lists(_longs, max_size=4).map(lambda v: Array(UNDESCRIBED, Data.LONG, *v)),
    st.lists(st.uuids(), max_size=4).map(lambda v: Array(UNDESCRIBED, Data.UUID, *v)),
    st.lists(_texts, max_size=4).map(lambda v: Array(UNDESCRIBED, Data.STRING, *v)),
    st.lists(_ascii.map(symbol), max_size=4).map(lambda v: Array(UNDESCRIBED, Data.SYMBOL, *v)),
    st.lists(_binaries, max_size=4).map(lambda v: Array(UNDESCRIBED, Data.BINARY, *v)),
)
_DESCRIPTORS = st.one_of(_ascii.map(symbol), st.integers(0, 2**64 - 1).map(ulong))


def amqp_values(sdk_readable: bool = False) -> st.SearchStrategy[Any]:
    """Any AMQP value: scalars, and lists, maps, arrays and described values of them."""
    scalars = (_SDK_READABLE_SCALARS if sdk_readable
               else st.one_of(_SDK_READABLE_SCALARS, _OTHER_SCALARS))
    keys = st.one_of(_texts, _ascii.map(symbol), st.integers(0, 2**64 - 1).map(ulong))
    return st.recursive(
        st.one_of(scalars, _ARRAYS),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(keys, inner, max_size=3),
            st.builds(Described, _DESCRIPTORS, inner),
        ),
        max_leaves=6,
    )


def message_ids(plain: bool = False) -> st.SearchStrategy[Any]:
    """A message-id or correlation-id of each of its four types (ulong as a plain int if
    ``plain``: what the model and the SDK take)."""
    ulongs = st.integers(0, 2**64 - 1)
    return st.one_of(_texts.filter(bool), ulongs if plain else ulongs.map(ulong),
                     st.uuids(), st.binary(min_size=1, max_size=16))


def _bodies(values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    data = st.lists(_binaries, min_size=1, max_size=3).map(
        lambda parts: {"body": parts[0] if len(parts) == 1 else parts, "body_type": "data"})
    sequences = st.lists(st.lists(values, max_size=3), min_size=1, max_size=3).map(
        lambda lists: {"body": lists[0] if len(lists) == 1 else tuple(lists),
                       "body_type": "sequence"})
    value = values.map(lambda v: {"body": v, "body_type": "value"})
    return st.one_of(data, sequences, value)


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def amqp_messages(draw: st.DrawFn, sdk_readable: bool = False,
                  message_id: bool = False) -> Message:
    """A message with any of its sections and any of their fields (no delivery count: the
    broker's; a time to live of a day or more, so that it is still there to peek; the
    message-id always there if ``message_id``)."""
    values = amqp_values(sdk_readable)
    # Annotation keys that are not the service's (x-opt-) nor typed fields of the model.
    annotation_keys = _ascii.map(lambda text: "x-test-" + text)
    fields: dict[str, Any] = draw(st.fixed_dictionaries({}, optional={
        "durable": st.booleans(),
        "priority": st.integers(0, 255),
        "time_to_live": st.integers(86_400_000, 2**32 - 1).map(
            lambda ms: timedelta(milliseconds=ms)),
        "first_acquirer": st.booleans(),
        "delivery_annotations": st.dictionaries(annotation_keys, values, max_size=3),
        "annotations": st.dictionaries(annotation_keys, values, max_size=3),
        "message_id": message_ids(),
        "user_id": _binaries,
        "to": _texts, "subject": _texts, "reply_to": _texts,
        "correlation_id": message_ids(),
        "content_type": _ascii, "content_encoding": _ascii,
        "absolute_expiry_time": _times, "creation_time": _times,
        "session_id": _texts, "group_sequence": st.integers(0, 2**32 - 1),
        "reply_to_session_id": _texts,
        "application_properties": st.dictionaries(_texts, values, max_size=4),
        "footer": st.dictionaries(annotation_keys, values, max_size=3),
    }))
    if message_id and "message_id" not in fields:
        fields["message_id"] = draw(message_ids())
    fields.update(draw(_bodies(values)))
    return Message(**fields)


def _sdk_values(binary: bool = True) -> st.SearchStrategy[Any]:
    # (the SDK's encoder writes an int inside a list as an AMQP int, and fails beyond it;
    # its sender makes binary application properties text, and fails on what is not UTF-8)
    scalars = st.one_of(st.none(), st.booleans(), _texts, st.uuids(),
                        st.integers(-2**31, 2**31 - 1), st.floats(allow_nan=False),
                        *([_binaries] if binary else []))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_texts, inner, max_size=3)), max_leaves=6)


@st.composite
def sdk_messages(draw: st.DrawFn) -> dict[str, Any]:
    """The keyword arguments of an SDK ``AmqpAnnotatedMessage``: every section, plain
    Python values (the SDK types them), message-id and correlation-id of the four types."""
    values = _sdk_values()
    keys = _ascii.map(lambda text: "x-test-" + text)
    body = draw(st.one_of(
        st.lists(_binaries, min_size=1, max_size=3).map(lambda v: {"data_body": v}),
        st.lists(st.lists(values, max_size=3), min_size=1, max_size=3).map(
            lambda v: {"sequence_body": v}),
        values.map(lambda v: {"value_body": v}),
    ))
    header = draw(st.fixed_dictionaries({}, optional={
        "durable": st.booleans(), "priority": st.integers(0, 255),
        "first_acquirer": st.booleans()}))
    properties = draw(st.fixed_dictionaries({"message_id": message_ids(plain=True)}, optional={
        "user_id": st.binary(min_size=1, max_size=16), "to": _texts.filter(bool),
        "subject": _texts.filter(bool), "reply_to": _texts.filter(bool),
        "correlation_id": message_ids(plain=True), "content_type": _ascii.filter(bool),
        "content_encoding": _ascii.filter(bool), "group_id": _texts.filter(bool),
        "group_sequence": st.integers(1, 2**32 - 1), "reply_to_group_id": _texts.filter(bool),
    }))
    sections = draw(st.fixed_dictionaries({}, optional={
        "application_properties": st.dictionaries(_texts.filter(bool), _sdk_values(False),
                                                  min_size=1, max_size=4),
        "annotations": st.dictionaries(keys, values, min_size=1, max_size=3),
        "delivery_annotations": st.dictionaries(keys, values, min_size=1, max_size=3),
        "footer": st.dictionaries(keys, values, min_size=1, max_size=3),
    }))
    return {**body, "header": header or None, "properties": properties, **sections}


def raw_connection(namespace: FakeNamespace, entity: str, timeout: float) -> BlockingConnection:
    """A proton connection to the namespace (``accept_any_token``) with a token put for
    ``entity``: a sender of raw message bytes, as any AMQP 1.0 client is."""
    connection = BlockingConnection(f"amqp://127.0.0.1:{namespace.port}",
                                    allowed_mechs="ANONYMOUS", timeout=timeout)
    try:
        replies = connection.create_receiver("$cbs", name="cbs-replies")
        connection.create_sender("$cbs", name="cbs-requests").send(ProtonMessage(
            body="any token", reply_to="cbs-reply",
            properties={"operation": "put-token", "name": entity}))
        replies.receive()
    except BaseException:
        connection.close()
        raise
    return connection


# --- comparisons ----------------------------------------------------------------------------

def same(a: Any, b: Any) -> bool:
    """Whether two AMQP values are equal, type for type, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return (len(a) == len(b) and all(
            any(same(k, k2) and same(v, b[k2]) for k2 in b if k2 == k) for k, v in a.items()))
    if isinstance(a, Array):
        return (a.type == b.type and same(a.descriptor, b.descriptor)
                and same(list(a.elements), list(b.elements)))
    if isinstance(a, Described):
        return same(a.descriptor, b.descriptor) and same(a.value, b.value)
    return bool(a == b)


def plain(value: Any) -> Any:
    """A value as the SDK's decoder gives it: text (strings and symbols) as UTF-8 bytes,
    every number a plain int or float, a timestamp or datetime its milliseconds, an array a
    list, a described value its value."""
    if value is None or isinstance(value, (bool, uuid.UUID)):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, datetime):
        return (value - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(value, timedelta):
        return value // timedelta(milliseconds=1)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, Array):
        return [plain(item) for item in value.elements]
    if isinstance(value, Described):
        return plain(value.value)
    if isinstance(value, dict):
        return {_key(plain(k)): plain(v) for k, v in value.items()}
    raise TypeError(f"no plain form for {type(value).__name__}")


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
