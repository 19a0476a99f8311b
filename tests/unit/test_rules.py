"""Subscription rules: the models, the three rule operations on the wire, and SDK interop."""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from azure.servicebus._common import constants as sdk_constants
from azure.servicebus._pyamqp._decode import decode_payload
from azure.servicebus._pyamqp._encode import encode_payload
from azure.servicebus._pyamqp.message import Message as SdkMessage
from azure.servicebus._pyamqp.types import TYPE, VALUE, AMQPTypes
from hypothesis import given
from hypothesis import strategies as st
from proton import Described, Message, int32, symbol, timestamp, ulong
from pydantic import ValidationError

from sbmgmt.errors import BadRequestError, ConflictError, NotFoundError, ProtocolError
from sbmgmt.ops import add_rule, encode_request, enumerate_rules, remove_rule
from sbmgmt.rules import (
    CORRELATION_FILTER_CODE,
    EMPTY_RULE_ACTION_CODE,
    FALSE_FILTER_CODE,
    RULE_DESCRIPTION_CODE,
    SQL_FILTER_CODE,
    SQL_RULE_ACTION_CODE,
    TRUE_FILTER_CODE,
    CorrelationFilter,
    FalseFilter,
    RuleDescription,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)
from tests._operations import actions, names, rule_filters, rules

UTC = timezone.utc
RULE_OPS = (add_rule, remove_rule, enumerate_rules)

# --- helpers --------------------------------------------------------------------------


def over_the_wire(body: Any) -> Any:
    """The body as a peer reads it: encoded by proton into AMQP bytes and decoded again."""
    received = Message()
    received.decode(Message(body=body).encode())
    return received.body


def sdk_bytes(value: Any) -> bytes:
    """An amqp-value message encoded by the azure-servicebus SDK's own wire layer."""
    output = bytearray()
    encode_payload(output, SdkMessage(value=value))
    return bytes(output)


def proton_body(data: bytes) -> Any:
    message = Message()
    message.decode(data)
    return message.body


def sdk_described(code: int, items: list[Any]) -> dict[str, Any]:
    return {TYPE: AMQPTypes.described, VALUE: ({TYPE: AMQPTypes.ulong, VALUE: code}, items)}


# --- strategies -----------------------------------------------------------------------

# --- models ---------------------------------------------------------------------------


def test_correlation_filter_needs_one_field() -> None:
    with pytest.raises(ValidationError, match="CorrelationFilter needs at least one"):
        CorrelationFilter()
    with pytest.raises(ValidationError, match="CorrelationFilter"):
        CorrelationFilter(properties={})
    assert CorrelationFilter(properties={"color": "red"}).properties == {"color": "red"}


def test_property_values_keep_their_type() -> None:
    values = CorrelationFilter(properties={"flag": True, "count": 1, "ratio": 1.5, "s": "1"})
    assert [type(v) for v in values.properties.values()] == [bool, int, float, str]
    with pytest.raises(ValidationError, match="properties"):
        CorrelationFilter(properties={"big": 2**63})
    with pytest.raises(ValidationError, match="properties"):
        CorrelationFilter(properties={"blob": b"bytes"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "build",
    [
        lambda: SqlFilter(expression=""),
        lambda: SqlRuleAction(expression=""),
        lambda: add_rule.Request(rule_name="", filter=TrueFilter()),
        lambda: remove_rule.Request(rule_name=""),
        lambda: enumerate_rules.Request(top=0),
        lambda: enumerate_rules.Request(top=2**31),
        lambda: enumerate_rules.Request(top=1, skip=-1),
    ],
)
def test_invalid_arguments_are_refused(build: Any) -> None:
    with pytest.raises(ValidationError):
        build()


def test_filters_are_told_apart_from_plain_values() -> None:
    request = add_rule.Request(rule_name="r", filter={"kind": "false"})  # type: ignore[arg-type]
    assert request.filter == FalseFilter()
    assert RuleDescription(name="r", filter={"kind": "sql", "expression": "a=1"}).filter == (  # type: ignore[arg-type]
        SqlFilter(expression="a=1")
    )


def test_operation_names_and_idempotency_match_the_sdk() -> None:
    assert add_rule.OPERATION.encode() == sdk_constants.REQUEST_RESPONSE_ADD_RULE_OPERATION
    assert remove_rule.OPERATION.encode() == sdk_constants.REQUEST_RESPONSE_REMOVE_RULE_OPERATION
    assert enumerate_rules.OPERATION.encode() == sdk_constants.REQUEST_RESPONSE_GET_RULES_OPERATION
    assert (add_rule.IDEMPOTENT, remove_rule.IDEMPOTENT, enumerate_rules.IDEMPOTENT) == (
        False, True, True,
    )


# --- exact AMQP types on the wire -----------------------------------------------------


def test_add_rule_sends_plain_maps_for_sql_filter_and_action() -> None:
    request = add_rule.Request(
        rule_name="high", filter=SqlFilter(expression="priority > 3"),
        action=SqlRuleAction(expression="SET seen = TRUE"),
    )
    properties, body = add_rule.encode(request)
    wire = over_the_wire(body)
    assert properties == {}
    assert wire == {
        "rule-name": "high",
        "rule-description": {
            "sql-filter": {"expression": "priority > 3"},
            "sql-rule-action": {"expression": "SET seen = TRUE"},
        },
    }
    description = wire["rule-description"]
    assert type(description) is dict
    assert type(description["sql-filter"]) is dict
    assert type(description["sql-rule-action"]) is dict


@pytest.mark.parametrize(
    ("rule_filter", "expression"), [(TrueFilter(), "1=1"), (FalseFilter(), "1=0")]
)
def test_add_rule_sends_true_and_false_as_sql(rule_filter: Any, expression: str) -> None:
    _, body = add_rule.encode(add_rule.Request(rule_name="r", filter=rule_filter))
    assert over_the_wire(body)["rule-description"] == {
        "sql-filter": {"expression": expression}, "sql-rule-action": None}


@pytest.mark.parametrize("rule_filter", [
    TrueFilter(), SqlFilter(expression="a = 1"), CorrelationFilter(correlation_id="c")])
def test_add_rule_always_sends_sql_rule_action_null_without_an_action(rule_filter: Any) -> None:
    # "sql-rule-action | map | Yes": the request bytes the client writes, read by proton.
    request = add_rule.Request(rule_name="r", filter=rule_filter)
    encoded = encode_request(request, message_id=uuid.uuid4(), reply_to="t/$management/r")
    received = Message()
    received.decode(encoded.payload)
    description = received.body["rule-description"]
    assert "sql-rule-action" in description and description["sql-rule-action"] is None


def test_add_rule_sends_correlation_filter_with_label_and_typed_properties() -> None:
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    rule_filter = CorrelationFilter(
        correlation_id="c-1", subject="invoice", content_type="application/json",
        properties={"region": "eu", "count": 7, "urgent": True, "at": when},
    )
    _, body = add_rule.encode(add_rule.Request(rule_name="r", filter=rule_filter))
    description = over_the_wire(body)["rule-description"]
    assert set(description) == {"correlation-filter", "sql-rule-action"}
    assert description["sql-rule-action"] is None
    correlation = description["correlation-filter"]
    assert type(correlation) is dict
    assert {k: v for k, v in correlation.items() if k != "properties"} == {
        "correlation-id": "c-1", "label": "invoice", "content-type": "application/json",
    }
    properties = correlation["properties"]
    assert properties["region"] == "eu"
    assert type(properties["count"]) is int and properties["count"] == 7
    assert properties["urgent"] is True
    assert type(properties["at"]) is timestamp
    assert properties["at"] == int(when.timestamp() * 1000)


def test_remove_rule_body() -> None:
    properties, body = remove_rule.encode(remove_rule.Request(rule_name="old"))
    assert properties == {}
    assert over_the_wire(body) == {"rule-name": "old"}


def test_enumerate_rules_sends_int32_top_and_skip() -> None:
    _, body = enumerate_rules.encode(enumerate_rules.Request(top=100, skip=5))
    wire = over_the_wire(body)
    assert wire == {"top": 100, "skip": 5}
    assert type(wire["top"]) is int32
    assert type(wire["skip"]) is int32


def test_enumerate_rules_reply_uses_described_lists_with_ulong_codes() -> None:
    created = datetime(2023, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
    response = enumerate_rules.Response(rules=(
        RuleDescription(name="sql", filter=SqlFilter(expression="a = 1"),
                        action=SqlRuleAction(expression="SET b = 2"), created_at=created),
        RuleDescription(name="all", filter=TrueFilter()),
        RuleDescription(name="none", filter=FalseFilter()),
        RuleDescription(name="corr", filter=CorrelationFilter(subject="s", properties={"k": 1})),
    ))
    status, body = enumerate_rules.encode_response(response)
    assert status == 200
    wire = over_the_wire(body)
    assert type(wire["rules"]) is list
    descriptions = [item["rule-description"] for item in wire["rules"]]
    for description in descriptions:
        assert type(description) is Described
        assert type(description.descriptor) is ulong
        assert description.descriptor == RULE_DESCRIPTION_CODE
    filters = [d.value[0] for d in descriptions]
    actions = [d.value[1] for d in descriptions]
    assert all(type(f.descriptor) is ulong for f in filters + actions)
    assert [f.descriptor for f in filters] == [
        SQL_FILTER_CODE, TRUE_FILTER_CODE, FALSE_FILTER_CODE, CORRELATION_FILTER_CODE,
    ]
    assert [a.descriptor for a in actions] == [SQL_RULE_ACTION_CODE] + [EMPTY_RULE_ACTION_CODE] * 3
    assert filters[0].value == ["a = 1", 20] and type(filters[0].value[1]) is int32
    assert actions[0].value == ["SET b = 2", 20] and type(actions[0].value[1]) is int32
    assert filters[1].value == [] and filters[2].value == [] and actions[1].value == []
    assert filters[3].value == [None, None, None, None, "s", None, None, None, {"k": 1}]
    assert [d.value[2] for d in descriptions] == ["sql", "all", "none", "corr"]
    assert type(descriptions[0].value[3]) is timestamp
    assert descriptions[0].value[3] == int(created.timestamp() * 1000)
    assert descriptions[1].value[3] is None


def test_rule_codes_are_the_pages() -> None:
    # The page writes the filter codes with 13 hex digits and the others with 14.
    assert RULE_DESCRIPTION_CODE == 0x0000013700000004
    assert (SQL_FILTER_CODE, TRUE_FILTER_CODE, FALSE_FILTER_CODE, CORRELATION_FILTER_CODE) == (
        0x1370000006, 0x1370000007, 0x1370000008, 0x1370000009,
    )
    assert (EMPTY_RULE_ACTION_CODE, SQL_RULE_ACTION_CODE) == (0x13700000005, 0x13700000006)


# --- round trips ----------------------------------------------------------------------


def expected_from_map(rule_filter: Any) -> Any:
    """The map format has no true/false filter: they come back as their SQL."""
    if isinstance(rule_filter, TrueFilter):
        return SqlFilter(expression="1=1")
    if isinstance(rule_filter, FalseFilter):
        return SqlFilter(expression="1=0")
    return rule_filter


@given(name=names, rule_filter=rule_filters, action=actions)
def test_add_rule_request_round_trip(name: str, rule_filter: Any, action: Any) -> None:
    request = add_rule.Request(rule_name=name, filter=rule_filter, action=action)
    properties, body = add_rule.encode(request)
    decoded = add_rule.decode_request(properties, over_the_wire(body))
    assert decoded == add_rule.Request(
        rule_name=name, filter=expected_from_map(rule_filter), action=action
    )


@given(name=names)
def test_remove_rule_request_round_trip(name: str) -> None:
    request = remove_rule.Request(rule_name=name)
    properties, body = remove_rule.encode(request)
    assert remove_rule.decode_request(properties, over_the_wire(body)) == request


@given(top=st.integers(1, 2**31 - 1), skip=st.integers(0, 2**31 - 1))
def test_enumerate_rules_request_round_trip(top: int, skip: int) -> None:
    request = enumerate_rules.Request(top=top, skip=skip)
    properties, body = enumerate_rules.encode(request)
    assert enumerate_rules.decode_request(properties, over_the_wire(body)) == request


@given(page=st.lists(rules, max_size=4).map(tuple))
def test_enumerate_rules_response_round_trip(page: tuple[RuleDescription, ...]) -> None:
    response = enumerate_rules.Response(rules=page)
    status, body = enumerate_rules.encode_response(response)
    assert status == (200 if page else 204)
    wire = None if body is None else over_the_wire(body)
    assert enumerate_rules.decode(status, {}, wire) == response


@pytest.mark.parametrize("module", [add_rule, remove_rule])
def test_empty_responses_round_trip(module: ModuleType) -> None:
    status, body = module.encode_response(module.Response())
    assert (status, body) == (200, None)
    assert module.decode(status, {}, body) == module.Response()


# --- error replies --------------------------------------------------------------------


@pytest.mark.parametrize("module", RULE_OPS)
@pytest.mark.parametrize(
    ("status", "condition", "error"),
    [
        (409, "com.microsoft:entity-already-exists", ConflictError),
        (409, None, ConflictError),
        (404, None, NotFoundError),
        (404, "amqp:not-found", NotFoundError),
        (400, None, BadRequestError),
        (400, "com.microsoft:argument-error", BadRequestError),
    ],
)
def test_error_replies_raise_typed_errors(
    module: ModuleType, status: int, condition: str | None, error: type[Exception]
) -> None:
    properties: dict[str, Any] = {"statusCode": int32(status), "statusDescription": "nope"}
    if condition is not None:
        properties["errorCondition"] = symbol(condition)
    with pytest.raises(error) as caught:
        module.decode(status, properties, None)
    assert caught.value.status_code == status  # type: ignore[attr-defined]
    assert caught.value.error_condition == condition  # type: ignore[attr-defined]
    assert caught.value.operation == module.OPERATION  # type: ignore[attr-defined]
    assert "nope" in str(caught.value)


# --- malformed input ------------------------------------------------------------------

VALID_FILTER = Described(ulong(SQL_FILTER_CODE), ["a=1", int32(20)])
VALID_ACTION = Described(ulong(EMPTY_RULE_ACTION_CODE), [])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "expected a map"),
        ({"rules": 5}, "rules"),
        ({"rules": [{"rule-description": ["not", "described"]}]}, "described list"),
        ({"rules": [{"rule-description": Described(ulong(1), [])}]}, "unknown rule-description"),
        ({"rules": [{"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            Described(ulong(SQL_FILTER_CODE), []), Described(ulong(EMPTY_RULE_ACTION_CODE), []),
            "r", None])}]}, "must be a string"),
        ({"rules": [{"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            Described(ulong(SQL_RULE_ACTION_CODE + 99), []), VALID_ACTION, "r", None])}]},
         "unknown filter descriptor"),
        ({"rules": [{"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            VALID_FILTER, VALID_ACTION, None, None])}]}, "got nothing"),
        ({"rules": [{"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            VALID_FILTER, VALID_ACTION, "", None])}]}, "name"),
        ({"rules": [{"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            Described(ulong(CORRELATION_FILTER_CODE), [None] * 8 + [{"k": b"x"}]),
            VALID_ACTION, "r", None])}]}, "simple value"),
        ({"rules": [{"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            Described(ulong(CORRELATION_FILTER_CODE), [None] * 9),
            VALID_ACTION, "r", None])}]}, "at least one"),
    ],
)
def test_malformed_enumerate_replies_are_protocol_errors(body: Any, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        enumerate_rules.decode(200, {}, body)


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ({}, "exactly one"),
        ({"sql-filter": {"expression": "a=1"}, "correlation-filter": {"to": "x"}}, "exactly one"),
        ({"sql-filter": "a=1"}, "expected a map"),
        ({"sql-filter": {"expression": 1}}, "expression"),
        ({"correlation-filter": {"properties": {1: "x"}}}, "property names"),
        ({"correlation-filter": {"label": 5}}, "label"),
        ({"sql-filter": {"expression": "a=1"}, "sql-rule-action": {}}, "expression"),
    ],
)
def test_malformed_add_rule_requests_are_protocol_errors(description: Any, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        add_rule.decode_request({}, {"rule-name": "r", "rule-description": description})


def test_symbolic_and_alternate_descriptors_are_accepted() -> None:
    body = {"rules": [
        {"rule-description": Described(symbol("com.microsoft:rule-description:list"), [
            Described(symbol("com.microsoft:correlation-filter:list"), ["c"]),
            Described(symbol("com.microsoft:sql-rule-action:list"), ["SET x = 1", int32(20)]),
            "symbolic", timestamp(1000)])},
        {"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            Described(ulong(0x0000013700000007), []),
            Described(ulong(0x000001370000005), []),
            "fourteen-digit filter code", None])},
        {"rule-description": Described(ulong(RULE_DESCRIPTION_CODE), [
            Described(ulong(0x0000013700000006), ["b = 2"]),
            Described(symbol("com.microsoft:empty-rule-action:list"), []),
            "sql without level", None])},
    ]}
    assert enumerate_rules.decode(200, {}, over_the_wire(body)).rules == (
        RuleDescription(name="symbolic", filter=CorrelationFilter(correlation_id="c"),
                        action=SqlRuleAction(expression="SET x = 1"),
                        created_at=datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
        RuleDescription(name="fourteen-digit filter code", filter=TrueFilter()),
        RuleDescription(name="sql without level", filter=SqlFilter(expression="b = 2")),
    )


WIRE_KEYS = st.sampled_from([
    "rule-name", "rule-description", "sql-filter", "correlation-filter", "sql-rule-action",
    "expression", "properties", "label", "correlation-id", "rules", "top", "skip",
])
DESCRIPTORS = st.one_of(
    st.sampled_from([
        RULE_DESCRIPTION_CODE, SQL_FILTER_CODE, TRUE_FILTER_CODE, FALSE_FILTER_CODE,
        CORRELATION_FILTER_CODE, EMPTY_RULE_ACTION_CODE, SQL_RULE_ACTION_CODE,
    ]).map(ulong),
    st.sampled_from(["com.microsoft:sql-filter:list", "com.microsoft:rule-description:list"])
    .map(symbol),
    st.integers(0, 2**64 - 1).map(ulong),
    st.floats(),
    st.booleans(),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1).map(int32),
    st.integers(-(2**63), 2**63 - 1).map(timestamp),
    st.floats(),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.uuids(),
)
FUZZ_VALUES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=10),
        st.dictionaries(WIRE_KEYS | st.text(max_size=4), children, max_size=5),
        st.dictionaries(st.integers() | st.binary(max_size=3), children, max_size=2),
        st.builds(Described, DESCRIPTORS, st.lists(children, max_size=10) | children),
    ),
    max_leaves=40,
)


@pytest.mark.parametrize("module", RULE_OPS)
@given(body=FUZZ_VALUES)
def test_decoding_garbage_returns_or_raises_protocol_error(module: ModuleType, body: Any) -> None:
    with contextlib.suppress(ProtocolError):
        assert isinstance(module.decode(200, {}, body), module.Response)
    with contextlib.suppress(ProtocolError):
        assert isinstance(module.decode_request({}, body), module.Request)


_DESCRIBED_VALUE = object()  # path step from a Described to its value


def node_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every node of a decoded AMQP value, the root first."""
    paths = [path]
    if isinstance(value, Described):
        paths += node_paths(value.value, (*path, _DESCRIBED_VALUE))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += node_paths(item, (*path, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            paths += node_paths(item, (*path, key))
    return paths


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with the node at ``path`` replaced by ``new``."""
    if not path:
        return new
    step, rest = path[0], path[1:]
    if step is _DESCRIBED_VALUE:
        return Described(value.descriptor, replaced(value.value, rest, new))
    if isinstance(value, list):
        return [replaced(item, rest, new) if i == step else item for i, item in enumerate(value)]
    return {key: replaced(item, rest, new) if key == step else item for key, item in value.items()}


def node_at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value.value if step is _DESCRIBED_VALUE else value[step]
    return value


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one node broken: replaced by garbage, truncated, a key dropped, or
    (for a described value) another descriptor."""
    path = draw(st.sampled_from(node_paths(value)))
    node = node_at(value, path)
    if isinstance(node, list) and node and draw(st.booleans()):
        broken: Any = node[: draw(st.integers(0, len(node) - 1))]
    elif isinstance(node, dict) and node and draw(st.booleans()):
        dropped = draw(st.sampled_from(list(node)))
        broken = {key: item for key, item in node.items() if key != dropped}
    elif isinstance(node, Described) and draw(st.booleans()):
        broken = Described(draw(DESCRIPTORS), node.value)
    else:
        broken = draw(FUZZ_VALUES)
    return replaced(value, path, broken)


KNOWN_CODES = (
    RULE_DESCRIPTION_CODE, SQL_FILTER_CODE, TRUE_FILTER_CODE, FALSE_FILTER_CODE,
    CORRELATION_FILTER_CODE, EMPTY_RULE_ACTION_CODE, SQL_RULE_ACTION_CODE,
)
GARBAGE: tuple[Any, ...] = (
    None, 0, True, 1.5, "x", b"x", [], {}, Described(ulong(0), []),
    timestamp(2**62), timestamp(-(2**62)),
)


def every_single_breakage(value: Any) -> list[Any]:
    """``value`` broken in one place, every way: each node replaced by each garbage value,
    each list truncated at each length, each map key dropped, each descriptor swapped."""
    broken: list[Any] = []
    for path in node_paths(value):
        node = node_at(value, path)
        changes: list[Any] = list(GARBAGE)
        if isinstance(node, list):
            changes += [node[:length] for length in range(len(node))]
        if isinstance(node, dict):
            changes += [{k: v for k, v in node.items() if k != key} for key in node]
        if isinstance(node, Described):
            changes += [Described(ulong(code), node.value) for code in KNOWN_CODES]
        broken += [replaced(value, path, change) for change in changes]
    return broken


SAMPLE_RULES = (
    RuleDescription(name="sql", filter=SqlFilter(expression="a = 1"),
                    action=SqlRuleAction(expression="SET b = 1"),
                    created_at=datetime(2020, 1, 1, tzinfo=UTC)),
    RuleDescription(name="true", filter=TrueFilter()),
    RuleDescription(name="false", filter=FalseFilter()),
    RuleDescription(name="corr", filter=CorrelationFilter(
        correlation_id="c", subject="s",
        properties={"n": 1, "at": datetime(2020, 1, 1, tzinfo=UTC)},
    )),
)


def test_every_single_breakage_of_valid_bodies_is_handled() -> None:
    checked = 0
    for rule in SAMPLE_RULES:
        reply = over_the_wire(valid_enumerate_body((rule,)))
        for body in every_single_breakage(reply):
            with contextlib.suppress(ProtocolError):
                assert isinstance(enumerate_rules.decode(200, {}, body), enumerate_rules.Response)
            checked += 1
        _, request = add_rule.encode(
            add_rule.Request(rule_name="r", filter=rule.filter, action=rule.action)
        )
        for body in every_single_breakage(over_the_wire(request)):
            with contextlib.suppress(ProtocolError):
                assert isinstance(add_rule.decode_request({}, body), add_rule.Request)
            checked += 1
    assert checked > 500


def valid_enumerate_body(page: tuple[RuleDescription, ...]) -> Any:
    return enumerate_rules.encode_response(enumerate_rules.Response(rules=page))[1]


@given(data=st.data(), page=st.lists(rules, min_size=1, max_size=3).map(tuple))
def test_decoding_mutated_enumerate_replies(data: st.DataObject, page: Any) -> None:
    body = data.draw(mutated(valid_enumerate_body(page)))
    with contextlib.suppress(ProtocolError):
        assert isinstance(enumerate_rules.decode(200, {}, body), enumerate_rules.Response)


@given(data=st.data(), name=names, rule_filter=rule_filters, action=actions)
def test_decoding_mutated_add_rule_requests(
    data: st.DataObject, name: str, rule_filter: Any, action: Any
) -> None:
    _, body = add_rule.encode(add_rule.Request(rule_name=name, filter=rule_filter, action=action))
    with contextlib.suppress(ProtocolError):
        assert isinstance(add_rule.decode_request({}, data.draw(mutated(body))), add_rule.Request)


@given(rule=FUZZ_VALUES, description=FUZZ_VALUES)
def test_decoding_garbage_inside_valid_envelopes(rule: Any, description: Any) -> None:
    with contextlib.suppress(ProtocolError):
        response = enumerate_rules.decode(200, {}, {"rules": [{"rule-description": rule}]})
        assert len(response.rules) == 1
    with contextlib.suppress(ProtocolError):
        request = add_rule.decode_request({}, {"rule-name": "r", "rule-description": description})
        assert request.rule_name == "r"


# --- interop with the azure-servicebus SDK's wire layer -------------------------------
#
# The Python SDK (7.x) declares the three rule operations but has no helper that builds
# an add-rule body or parses an enumerate-rules reply (rules are managed over ATOM in
# Python). So interop is checked at the wire: bodies shaped as the .NET SDK and the
# service send them, encoded by the SDK's own AMQP encoder, decode with ours; and our
# reply decodes with the SDK's AMQP decoder into the structure the page describes.


def test_sdk_encoded_add_rule_body_decodes() -> None:
    correlation = {
        "correlation-id": None, "message-id": None, "to": "billing", "reply-to": None,
        "label": "invoice", "session-id": None, "reply-to-session-id": None,
        "content-type": None, "properties": {"region": "eu", "count": 3, "urgent": False},
    }
    body = {
        "rule-name": "billing",
        # .NET also puts rule-name inside the description and sends a null action.
        "rule-description": {
            "correlation-filter": correlation, "sql-rule-action": None, "rule-name": "billing",
        },
    }
    decoded = add_rule.decode_request({}, proton_body(sdk_bytes(body)))
    assert decoded == add_rule.Request(
        rule_name="billing",
        filter=CorrelationFilter(
            to="billing", subject="invoice",
            properties={"region": "eu", "count": 3, "urgent": False},
        ),
    )


def test_sdk_encoded_sql_rule_with_action_decodes() -> None:
    body = {
        "rule-name": "r",
        "rule-description": {
            "sql-filter": {"expression": "sys.Label = 'x'"},
            "sql-rule-action": {"expression": "SET seen = 1"},
        },
    }
    assert add_rule.decode_request({}, proton_body(sdk_bytes(body))) == add_rule.Request(
        rule_name="r", filter=SqlFilter(expression="sys.Label = 'x'"),
        action=SqlRuleAction(expression="SET seen = 1"),
    )


def test_service_shaped_enumerate_reply_encoded_by_sdk_decodes() -> None:
    created_ms = 1_700_000_000_123
    body = {"rules": [
        {"rule-description": sdk_described(RULE_DESCRIPTION_CODE, [
            sdk_described(0x000001370000006, ["1=1", 20]),
            sdk_described(0x0000013700000005, []),
            "$Default",
            {TYPE: AMQPTypes.timestamp, VALUE: created_ms},
        ])},
        {"rule-description": sdk_described(RULE_DESCRIPTION_CODE, [
            sdk_described(0x000001370000009, ["c", None, None, None, None, None, None, None, {}]),
            sdk_described(0x0000013700000006, ["SET a = 1", 20]),
            "corr",
            {TYPE: AMQPTypes.timestamp, VALUE: created_ms},
        ])},
    ]}
    created = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=created_ms)
    assert enumerate_rules.decode(200, {}, proton_body(sdk_bytes(body))).rules == (
        RuleDescription(name="$Default", filter=SqlFilter(expression="1=1"), created_at=created),
        RuleDescription(name="corr", filter=CorrelationFilter(correlation_id="c"),
                        action=SqlRuleAction(expression="SET a = 1"), created_at=created),
    )


def test_our_enumerate_reply_decodes_with_the_sdk_decoder() -> None:
    created = datetime(2022, 6, 1, tzinfo=UTC)
    response = enumerate_rules.Response(rules=(
        RuleDescription(name="sql", filter=SqlFilter(expression="a = 1"),
                        action=SqlRuleAction(expression="SET b = 1"), created_at=created),
        RuleDescription(name="corr", filter=CorrelationFilter(subject="s", properties={"n": 2})),
    ))
    _, body = enumerate_rules.encode_response(response)
    sdk_view = decode_payload(memoryview(Message(body=body).encode())).value
    assert sdk_view is not None
    first, second = (rule[b"rule-description"] for rule in sdk_view[b"rules"])
    assert first == [[b"a = 1", 20], [b"SET b = 1", 20], b"sql", int(created.timestamp() * 1000)]
    assert second == [
        [None, None, None, None, b"s", None, None, None, {b"n": 2}], [], b"corr", None,
    ]
