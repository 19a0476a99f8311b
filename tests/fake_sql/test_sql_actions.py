"""SQL rule actions: SET and REMOVE on user and system properties."""

from __future__ import annotations

import pytest

from sbmgmt.message import Message
from sbmgmt.sql import SqlActionProgram, parse_action


def test_set_remove_and_system_property_in_one_action() -> None:
    message = Message(
        correlation_id="high",
        application_properties={"color": "red", "quantity": 10, "priority": "high"},
    )
    action = parse_action(
        "SET quantity = quantity / 2; REMOVE priority;SET sys.CorrelationId = 'low';"
    )
    result = action.apply(message)
    assert result.application_properties == {"color": "red", "quantity": 5}
    assert result.correlation_id == "low"


def test_apply_returns_a_copy_and_leaves_the_original_alone() -> None:
    message = Message(application_properties={"a": 1})
    result = parse_action("SET a = 2, SET b = 'x'").apply(message)
    assert message.application_properties == {"a": 1}
    assert result.application_properties == {"a": 2, "b": "x"}
    assert result is not message


def test_statements_see_earlier_statements() -> None:
    result = parse_action("SET a = 1; SET b = a + 1; SET a = b * 10").apply(Message())
    assert result.application_properties == {"a": 20, "b": 2}


@pytest.mark.parametrize("separator", [",", ";", ", ", " ;\n"])
def test_statement_separators(separator: str) -> None:
    result = parse_action(f"SET a = 1{separator}SET b = 2").apply(Message())
    assert result.application_properties == {"a": 1, "b": 2}


def test_keywords_are_case_insensitive() -> None:
    result = parse_action("set a = 1; remove b").apply(
        Message(application_properties={"b": 0})
    )
    assert result.application_properties == {"a": 1}


def test_set_replaces_a_property_named_in_another_case() -> None:
    result = parse_action("SET COLOR = 'blue'").apply(
        Message(application_properties={"Color": "red"})
    )
    assert result.application_properties == {"Color": "blue"}


def test_remove_matches_case_insensitively_and_ignores_missing() -> None:
    message = Message(application_properties={"Priority": 1})
    assert parse_action("REMOVE priority").apply(message).application_properties == {}
    assert parse_action("REMOVE user.nothing").apply(message) is message


def test_set_to_an_unknown_value_stores_null() -> None:
    result = parse_action("SET a = missing + 1").apply(Message())
    assert result.application_properties == {"a": None}


def test_set_keeps_a_float_property_a_float() -> None:
    result = parse_action("SET price = 3").apply(Message(application_properties={"price": 1.5}))
    assert result.application_properties["price"] == 3.0
    assert isinstance(result.application_properties["price"], float)


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ("sys.MessageId", "message_id"),
        ("sys.CorrelationId", "correlation_id"),
        ("sys.To", "to"),
        ("sys.ReplyTo", "reply_to"),
        ("sys.Label", "subject"),
        ("sys.Subject", "subject"),
        ("sys.SessionId", "session_id"),
        ("sys.ReplyToSessionId", "reply_to_session_id"),
        ("sys.ContentType", "content_type"),
    ],
)
def test_settable_system_properties(target: str, field: str) -> None:
    result = parse_action(f"SET {target} = 'v' + 'alue'").apply(Message())
    assert getattr(result, field) == "value"
    removed = parse_action(f"REMOVE {target}").apply(result)
    assert getattr(removed, field) is None


def test_non_string_values_set_on_string_system_properties_are_text() -> None:
    result = parse_action("SET sys.Label = 5, SET sys.To = TRUE, SET sys.ReplyTo = NULL").apply(
        Message(reply_to="r")
    )
    assert (result.subject, result.to, result.reply_to) == ("5", "True", None)


def test_action_reads_system_properties() -> None:
    result = parse_action("SET original = sys.Label, SET sys.Label = 'routed'").apply(
        Message(subject="orders")
    )
    assert result.application_properties == {"original": "orders"}
    assert result.subject == "routed"


def test_delimited_target_names() -> None:
    result = parse_action("SET [my prop] = 1, SET user.[x-y] = 2").apply(Message())
    assert result.application_properties == {"my prop": 1, "x-y": 2}


def test_parse_action_is_cached_and_described() -> None:
    program = parse_action("SET cached = 1")
    assert parse_action("SET cached = 1") is program
    assert isinstance(program, SqlActionProgram)
    assert repr(program) == "SqlActionProgram('SET cached = 1')"
