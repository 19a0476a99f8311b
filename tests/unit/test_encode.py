"""sbmgmt.amqp.encode against proton's encoder: the same bytes, hence the same values and types."""

from __future__ import annotations

import re
import uuid
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proton import (
    UNDESCRIBED,
    AnnotationDict,
    Array,
    Data,
    Described,
    Message,
    int32,
    symbol,
    timestamp,
    uint,
    ulong,
)
from test_decode import (
    amqp_values,
    assert_same,
    proton_decode,
    proton_encode,
    proton_owned,
    symbols,
)

from sbmgmt import ops
from sbmgmt.amqp import envelope
from sbmgmt.amqp.encode import encode_amqp_value, encode_message, encode_value
from sbmgmt.errors import ProtocolError
from tests._operations import REQUESTS, outgoing, received
from tests._wire import build_reply

CHECKS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# What proton's Message takes as a message-id / correlation-id (an int becomes ulong).
message_ids = st.one_of(
    st.none(), st.uuids(), st.text(max_size=300), symbols, st.binary(max_size=300),
    st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1).map(ulong),
)
# Around the 255-byte line between a list8 and a list32 properties section.
reply_tos = st.none() | st.text(max_size=20) | st.text(min_size=200, max_size=260)


def proton_message(**fields: Any) -> Message:
    decoded = Message()
    decoded.decode(Message(**fields).encode())
    return decoded


def assert_same_message(ours: bytes, fields: dict[str, Any]) -> None:
    """proton reads our bytes as the message proton encodes from ``fields``: same values,
    same types, section by section; and the bytes are proton's."""
    expected = bytes(Message(**fields).encode())
    theirs = proton_message(**fields)
    decoded = Message()
    decoded.decode(ours)
    for name in ("id", "reply_to", "correlation_id", "properties", "body"):
        assert_same(proton_owned(getattr(decoded, name)), proton_owned(getattr(theirs, name)))
    assert ours == expected


# --- single values -------------------------------------------------------------


@CHECKS
@given(amqp_values)
def test_values_encode_as_proton_encodes_them(value: Any) -> None:
    expected = proton_encode(value)
    assert encode_value(value) == expected
    assert encode_amqp_value(value) == proton_encode(Described(ulong(0x77), value))


#: A fixed value: a test's id names its parameters, and every run (each pytest-xdist worker
#: among them) must collect the same ids.
_A_UUID = uuid.UUID("0d8f6a4e-31c2-4b7a-9f1e-5a2c7b9d3e10")


def _stable_id(value: Any) -> str:
    """The value's repr without the memory addresses (``<object object at 0x...>``) that
    differ from one process to the next."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


@pytest.mark.parametrize("value", [
    -(2**63), -129, -128, 127, 128, 2**63 - 1, int32(-129), int32(-128), int32(127),
    int32(128), uint(0), uint(1), uint(255), uint(256), ulong(0), ulong(255), ulong(256),
    "x" * 255, "x" * 256, b"x" * 255, b"x" * 256, symbol("s" * 256), [], (), {}, (1, "a"),
    Array(UNDESCRIBED, Data.LONG), Array(UNDESCRIBED, Data.BOOL, True, False),
    Array(UNDESCRIBED, Data.STRING, "a", "é" * 200), Array(UNDESCRIBED, Data.UUID, _A_UUID),
    Array(UNDESCRIBED, Data.TIMESTAMP, timestamp(-1)), Array(UNDESCRIBED, Data.SYMBOL, symbol("a")),
    Array(UNDESCRIBED, Data.BINARY, b"", b"x" * 300),
], ids=_stable_id)
def test_boundaries_of_each_encoding(value: Any) -> None:
    assert encode_value(value) == proton_encode(value)


@pytest.mark.parametrize("value", [
    Array(ulong(7), Data.LONG, 1, 2),                  # described array
    Array(UNDESCRIBED, Data.LIST, [1], []),             # element type without a fast path
    Array(UNDESCRIBED, Data.NULL, None, None),
    Described("not-a-ulong-or-symbol", 1),
    memoryview(b"abc"),
    AnnotationDict({symbol("k"): 1}),
], ids=_stable_id)
def test_what_has_no_fast_path_is_proton_encoded(value: Any) -> None:
    assert encode_value(value) == proton_encode(value)


@pytest.mark.parametrize("value", [
    2**63, -(2**63) - 1, uint(2**32), ulong(2**64), Array(UNDESCRIBED, Data.LONG, 2**63),
    Array(UNDESCRIBED, Data.UINT, uint(2**32)), object(), {1, 2}, "\ud800",
    Array(UNDESCRIBED, Data.SYMBOL, symbol("é")),
    # Elements of another type than the array's: proton-c writes them from the wrong member
    # of its value union (bytes of its heap on the wire), so they are refused.
    Array(UNDESCRIBED, Data.LONG, 1, int32(2)), Array(UNDESCRIBED, Data.LONG, True),
    Array(UNDESCRIBED, Data.UINT, uint(1), 2),
], ids=_stable_id)
def test_what_proton_cannot_encode_is_a_protocol_error(value: Any) -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        encode_value(value)



# --- whole messages --------------------------------------------------------------


@CHECKS
@given(message_id=message_ids, reply_to=reply_tos, correlation_id=message_ids,
       properties=st.none() | st.dictionaries(st.text(max_size=12), amqp_values, max_size=4),
       body=amqp_values)
def test_messages_encode_as_proton_encodes_them(message_id: Any, reply_to: str | None,
                                                correlation_id: Any,
                                                properties: dict[str, Any] | None,
                                                body: Any) -> None:
    fields = {"id": message_id, "reply_to": reply_to, "correlation_id": correlation_id,
              "properties": properties, "body": body}
    ours = encode_message(message_id=message_id, reply_to=reply_to,
                          correlation_id=correlation_id, application_properties=properties,
                          body=body)
    assert_same_message(ours, fields)


def test_ids_proton_drops_are_dropped() -> None:
    for odd in (1.5, bytearray(b"x"), memoryview(b"x")):
        expected = bytes(Message(id=odd, correlation_id=odd).encode())
        assert encode_message(message_id=odd, correlation_id=odd) == expected


@pytest.mark.parametrize("arguments", [
    {"application_properties": {symbol("k"): 1}},  # proton refuses a symbol key
    {"message_id": -1},                            # and a negative ulong id
    {"application_properties": {"k": object()}},
], ids=_stable_id)
def test_messages_proton_refuses_are_protocol_errors(arguments: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        encode_message(**arguments)


# --- every operation's request ---------------------------------------------------


def proton_request_fields(request: Any, message_id: uuid.UUID, timeout: int | None,
                          link: str | None) -> dict[str, Any]:
    """The proton ``Message`` fields of a request, as the envelope is specified."""
    module = ops.MODULE_BY_REQUEST[type(request)]
    extra, body = module.encode(request)
    properties: dict[str, Any] = {"operation": module.OPERATION}
    if timeout is not None:
        properties["com.microsoft:server-timeout"] = uint(timeout)
    if link is not None:
        properties["associated-link-name"] = link
    properties.update(extra)
    return {"id": message_id, "reply_to": "q/$management/reply", "properties": properties,
            "body": body}


@pytest.mark.parametrize("module", list(REQUESTS),
                         ids=lambda m: m.__name__.rsplit(".", 1)[1])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), message_id=st.uuids(), timeout=st.none() | st.integers(0, 2**32 - 1),
       link=st.none() | st.text(max_size=30))
def test_requests_encode_as_proton_encodes_them(module: ModuleType, data: st.DataObject,
                                                message_id: uuid.UUID, timeout: int | None,
                                                link: str | None) -> None:
    request = data.draw(REQUESTS[module])
    encoded = ops.encode_request(request, message_id=message_id,
                                      reply_to="q/$management/reply",
                                      server_timeout_ms=timeout, associated_link_name=link)
    assert_same_message(encoded.payload,
                        proton_request_fields(request, message_id, timeout, link))


@CHECKS
@given(correlation_id=message_ids, status=st.integers(-(2**31), 2**31 - 1), body=amqp_values,
       description=st.none() | st.text(max_size=20),
       condition=st.none() | st.text(max_size=20),
       status_key=st.sampled_from(["statusCode", "status-code"]))
def test_replies_encode_as_build_reply_encodes_them(correlation_id: Any, status: int, body: Any,
                                                    description: str | None,
                                                    condition: str | None,
                                                    status_key: str) -> None:
    options = {"description": description, "error_condition": condition,
               "status_key": status_key}
    expected = bytes(build_reply(correlation_id, status, body, **options).encode())
    assert envelope.encode_reply(correlation_id, status, body, **options) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=outgoing | received)
def test_message_sections_are_proton_encodings(message: Any) -> None:
    """Each section of ``to_bytes()`` is what proton's ``Data`` writes for the value it reads
    there (proton's own encoding, as ``to_bytes`` had before sbmgmt.amqp.encode)."""
    raw = message.to_bytes()
    offset = 0
    while offset < len(raw):
        value, used = proton_decode(raw[offset:])
        assert proton_encode(value) == raw[offset:offset + used]
        offset += used


@settings(max_examples=40, deadline=None)
@given(message_id=st.uuids(), token_type=st.sampled_from(["servicebus.windows.net:sastoken",
                                                         "jwt"]),
       audience=st.text(max_size=40), token=st.text(max_size=200))
def test_put_token_encodes_as_proton_encodes_it(message_id: uuid.UUID, token_type: str,
                                                audience: str, token: str) -> None:
    expected = Message(id=message_id, reply_to="$cbs/reply", body=token, properties={
        "operation": "put-token", "type": token_type, "name": audience})
    assert envelope.encode_put_token(message_id=message_id, reply_to="$cbs/reply",
                                     token_type=token_type, audience=audience,
                                     token=token) == bytes(expected.encode())
