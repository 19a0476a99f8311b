"""SQL filters: every operator, its NULL behaviour, and the property scopes."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.sql import SqlFilterProgram, parse_filter


def evaluate(expression: str, message: Message | None = None, /, **props: Any) -> bool | None:
    """The three-valued result of ``expression`` on a message with ``props``."""
    target = message if message is not None else Message(application_properties=props)
    return parse_filter(expression).evaluate(target)


# --- constant forms -------------------------------------------------------------------


def test_true_and_false_filters() -> None:
    assert evaluate("1=1") is True
    assert evaluate("1=0") is False
    assert parse_filter("1 = 1").matches(Message())
    assert not parse_filter("1=0").matches(Message())


def test_boolean_and_null_constants() -> None:
    assert evaluate("TRUE = TRUE") is True
    assert evaluate("true <> false") is True
    assert evaluate("NULL = NULL") is None
    assert evaluate("n <> NULL", n=1) is None


# --- comparison -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("n = 5", True), ("n = 6", False),
        ("n <> 5", False), ("n != 6", True),
        ("n > 4", True), ("n > 5", False),
        ("n >= 5", True), ("n >= 6", False),
        ("n < 6", True), ("n < 5", False),
        ("n <= 5", True), ("n <= 4", False),
    ],
)
def test_comparison_operators(expression: str, expected: bool) -> None:
    assert evaluate(expression, n=5) is expected


@pytest.mark.parametrize("operator", ["=", "<>", "!=", ">", ">=", "<", "<="])
def test_comparison_with_missing_or_null_is_unknown(operator: str) -> None:
    assert evaluate(f"missing {operator} 1") is None
    assert evaluate(f"1 {operator} missing") is None
    assert evaluate(f"n {operator} NULL", n=1) is None
    assert evaluate(f"n {operator} 1", n=None) is None


def test_numeric_promotion_between_integers_and_floats() -> None:
    assert evaluate("n = 2.0", n=2) is True
    assert evaluate("n > 1.5", n=2) is True
    assert evaluate("n = 2", n=2.0) is True
    assert evaluate("n < 2.5E0", n=2) is True


def test_string_against_number_is_unknown_not_an_error() -> None:
    assert evaluate("s = 1", s="1") is None
    assert evaluate("n = '1'", n=1) is None
    assert evaluate("b = 1", b=True) is None
    assert not parse_filter("s = 1").matches(Message(application_properties={"s": "1"}))


def test_strings_compare_for_equality_only_case_sensitively() -> None:
    assert evaluate("s = 'red'", s="red") is True
    assert evaluate("s = 'Red'", s="red") is False
    assert evaluate("s <> 'blue'", s="red") is True
    assert evaluate("s > 'a'", s="red") is None  # C# has no ordering on strings


def test_other_value_types() -> None:
    moment = datetime(2024, 1, 2, tzinfo=timezone.utc)
    token = uuid.uuid4()
    props = {"when": moment, "later": moment + timedelta(hours=1), "id": token,
             "other": uuid.uuid4()}
    assert evaluate("later > when", **props) is True
    assert evaluate("later - when > when - when", **props) is True
    assert evaluate("id = id", **props) is True
    assert evaluate("id = other", **props) is False
    assert evaluate("id > other", **props) is None
    assert evaluate("id = 'x'", **props) is None


# --- logic ----------------------------------------------------------------------------

_T, _F, _U = "1=1", "1=0", "missing=1"
_TRUTH = {_T: True, _F: False, _U: None}


@pytest.mark.parametrize("left", [_T, _F, _U])
@pytest.mark.parametrize("right", [_T, _F, _U])
def test_and_or_three_valued_tables(left: str, right: str) -> None:
    a, b = _TRUTH[left], _TRUTH[right]
    expected_and = False if False in (a, b) else (None if None in (a, b) else True)
    expected_or = True if True in (a, b) else (None if None in (a, b) else False)
    assert evaluate(f"({left}) AND ({right})") is expected_and
    assert evaluate(f"({left}) OR ({right})") is expected_or


def test_not() -> None:
    assert evaluate("NOT 1=1") is False
    assert evaluate("NOT 1=0") is True
    assert evaluate("NOT missing = 1") is None
    assert evaluate("NOT NOT n = 1", n=1) is True


def test_precedence_and_binds_tighter_than_or() -> None:
    assert evaluate("1=1 OR 1=1 AND 1=0") is True
    assert evaluate("(1=1 OR 1=1) AND 1=0") is False
    assert evaluate("NOT 1=0 AND 1=0") is False


def test_or_short_circuits_but_keeps_unknown() -> None:
    assert evaluate("missing = 1 OR 1 = 1") is True
    assert evaluate("missing = 1 AND 1 = 0") is False


# --- IS NULL, EXISTS ------------------------------------------------------------------


def test_is_null_and_is_not_null() -> None:
    assert evaluate("missing IS NULL") is True
    assert evaluate("n IS NULL", n=None) is True
    assert evaluate("n IS NULL", n=0) is False
    assert evaluate("n IS NOT NULL", n=0) is True
    assert evaluate("missing IS NOT NULL") is False
    assert evaluate("sys.CorrelationId IS NULL", Message()) is True
    assert evaluate("sys.CorrelationId IS NOT NULL", Message(correlation_id="c")) is True


def test_exists_tells_a_null_value_from_a_missing_property() -> None:
    assert evaluate("EXISTS(n)", n=None) is True
    assert evaluate("EXISTS (missing)") is False
    assert evaluate("NOT EXISTS(missing)") is True
    assert evaluate("EXISTS(sys.To)", Message(to="x")) is True
    assert evaluate("EXISTS(sys.To)", Message()) is False


# --- IN -------------------------------------------------------------------------------


def test_in_and_not_in() -> None:
    assert evaluate("s IN ('a', 'b')", s="b") is True
    assert evaluate("s IN ('a', 'b')", s="c") is False
    assert evaluate("s NOT IN ('a', 'b')", s="c") is True
    assert evaluate("s NOT IN ('a', 'b')", s="a") is False
    assert evaluate("n IN (1, 2.0, 3)", n=2) is True
    assert evaluate("n IN (n + 1, n * 1)", n=4) is True


def test_in_with_unknowns() -> None:
    assert evaluate("missing IN ('a')") is None
    assert evaluate("missing NOT IN ('a')") is None
    assert evaluate("s IN ('a', NULL)", s="a") is True
    assert evaluate("s IN ('b', NULL)", s="a") is None
    assert evaluate("s NOT IN ('b', NULL)", s="a") is None


# --- LIKE -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("%bus%", "service bus rocks", True),
        ("%bus%", "train", False),
        ("bus%", "bus stop", True),
        ("bus%", "a bus", False),
        ("%bus", "a bus", True),
        ("b_s", "bus", True),
        ("b_s", "buus", False),
        ("___", "abc", True),
        ("___", "ab", False),
        ("%", "", True),
        ("", "", True),
        ("a.c", "abc", False),
        ("a*c", "a*c", True),
        ("(x)[y]", "(x)[y]", True),
        ("%line%", "first\nline", True),
        ("ABC", "abc", False),
    ],
)
def test_like_patterns(pattern: str, text: str, expected: bool) -> None:
    assert evaluate(f"s LIKE '{pattern}'", s=text) is expected
    assert evaluate(f"s NOT LIKE '{pattern}'", s=text) is (not expected)


def test_like_with_escape() -> None:
    assert evaluate(r"s LIKE 'ABC\%' ESCAPE '\'", s="ABC%") is True
    assert evaluate(r"s LIKE 'ABC\%' ESCAPE '\'", s="ABCD") is False
    assert evaluate("s LIKE 'a!_b' ESCAPE '!'", s="a_b") is True
    assert evaluate("s LIKE 'a!_b' ESCAPE '!'", s="axb") is False
    assert evaluate("s LIKE 'a!!b' ESCAPE '!'", s="a!b") is True
    assert evaluate("s LIKE '100!%%' escape '!'", s="100% sure") is True


def test_like_with_unknowns_and_non_strings() -> None:
    assert evaluate("missing LIKE 'a%'") is None
    assert evaluate("missing NOT LIKE 'a%'") is None
    assert evaluate("n LIKE '1%'", n=10) is None
    assert evaluate("s LIKE p", s="abc") is None
    assert evaluate("s LIKE p", s="abc", p="a%") is True
    assert evaluate("s LIKE p ESCAPE e", s="a%", p="a#%", e="#") is True
    assert evaluate("s LIKE p ESCAPE e", s="a%", p="a#%", e="##") is None
    assert evaluate("s LIKE p ESCAPE e", s="a%", p="a#", e="#") is None


# --- arithmetic -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3 = 7", True),
        ("(1 + 2) * 3 = 9", True),
        ("10 - 4 - 3 = 3", True),
        ("7 / 2 = 3", True),
        ("-7 / 2 = -3", True),
        ("7 / 2.0 = 3.5", True),
        ("7 % 3 = 1", True),
        ("-7 % 3 = -1", True),
        ("-n = -5", True),
        ("- -n = 5", True),
        ("+n = 5", True),
        ("2 * -3 = -6", True),
        ("n * 2 + 1 = 11", True),
        ("1.5E1 = 15", True),
        (".5 = 0.5", True),
        ("'ab' + 'cd' = 'abcd'", True),
    ],
)
def test_arithmetic_and_precedence(expression: str, expected: bool) -> None:
    assert evaluate(expression, n=5) is expected


def test_arithmetic_with_unknowns_and_bad_types() -> None:
    assert evaluate("missing + 1 = 1") is None
    assert evaluate("-missing = 1") is None
    assert evaluate("s + 1 = 1", s="a") is None
    assert evaluate("-s = 1", s="a") is None
    assert evaluate("b + 1 = 2", b=True) is None


def test_division_by_zero() -> None:
    assert evaluate("1 / 0 = 1") is None
    assert evaluate("1 % 0 = 1") is None
    assert evaluate("1 / 0.0 > 1000000") is True
    assert evaluate("-1 / 0.0 < -1000000") is True


def test_integer_overflow_wraps_like_unchecked_int64() -> None:
    assert evaluate("9223372036854775807 + 1 < 0") is True
    assert evaluate("n * n * n = 0", n=2**40) is True
    assert evaluate("-9223372036854775807 - 2 = 9223372036854775807") is True


# --- properties -----------------------------------------------------------------------


def test_user_scope_bare_and_prefixed_names_are_the_same() -> None:
    assert evaluate("user.color = 'red'", color="red") is True
    assert evaluate("color = 'red'", color="red") is True
    assert evaluate("USER.Color = 'red'", color="red") is True


def test_property_names_and_keywords_are_case_insensitive() -> None:
    assert evaluate("COLOR = 'red' and Size In (1, 2)", color="red", size=2) is True
    assert evaluate("s not like 'x%' OR s is null", s="abc") is True
    assert evaluate("exists(Color)", color="red") is True


def test_exact_property_name_wins_over_a_case_insensitive_one() -> None:
    assert evaluate("Color = 'red'", Color="red", color="blue") is True
    assert evaluate("color = 'blue'", Color="red", color="blue") is True


def test_delimited_and_quoted_names() -> None:
    assert evaluate("[Property With Space] = 1", **{"Property With Space": 1}) is True
    assert evaluate("[HR-EmployeeID] = 'e1'", **{"HR-EmployeeID": "e1"}) is True
    assert evaluate("[a]]b] = 1", **{"a]b": 1}) is True
    assert evaluate('"Contoso & Northwind" = 2', **{"Contoso & Northwind": 2}) is True
    assert evaluate('"say ""hi""" = 3', **{'say "hi"': 3}) is True
    assert evaluate("[and] = 1", **{"and": 1}) is True
    assert evaluate("[sys.Label] = 1", **{"sys.Label": 1}) is True


def test_string_literal_with_doubled_quote() -> None:
    assert evaluate("s = 'it''s'", s="it's") is True
    assert evaluate("s = ''''", s="'") is True


def test_unicode_identifiers_and_strings() -> None:
    assert evaluate("größe = 'é'", **{"größe": "é"}) is True


def _full_message() -> ReceivedMessage:
    return ReceivedMessage(
        message_id="m1", correlation_id="c1", to="to1", reply_to="r1", subject="label1",
        session_id="s1", reply_to_session_id="rs1", content_type="application/json",
        partition_key="pk", time_to_live=timedelta(seconds=60), delivery_count=2,
        sequence_number=42, enqueued_time=datetime(2024, 5, 1, tzinfo=timezone.utc),
        application_properties={"Label": "user label"},
    )


@pytest.mark.parametrize(
    "expression",
    [
        "sys.MessageId = 'm1'",
        "sys.CorrelationId = 'c1'",
        "sys.To = 'to1'",
        "sys.ReplyTo = 'r1'",
        "sys.Label = 'label1'",
        "sys.Subject = 'label1'",
        "sys.SessionId = 's1'",
        "sys.ReplyToSessionId = 'rs1'",
        "sys.ContentType = 'application/json'",
        "sys.PartitionKey = 'pk'",
        "sys.DeliveryCount = 2",
        "sys.SequenceNumber = 42",
        "sys.SequenceNumber > 41 AND sys.SequenceNumber < 43",
        "sys.EnqueuedTimeUtc = sys.EnqueuedTimeUtc",
        "sys.ExpiresAtUtc - sys.EnqueuedTimeUtc = sys.TimeToLive",
        "sys.label = 'label1'",
        "SYS.LABEL = 'label1'",
        "Label = 'user label'",
        "user.Label = 'user label'",
        "sys.CorrelationId LIKE 'c%'",
        "sys.To IN ('to0', 'to1')",
    ],
)
def test_system_properties(expression: str) -> None:
    assert evaluate(expression, _full_message()) is True


def test_system_properties_the_message_does_not_carry_are_null() -> None:
    assert evaluate("sys.SequenceNumber IS NULL", Message()) is True
    assert evaluate("sys.ExpiresAtUtc IS NULL", Message(time_to_live=timedelta(1))) is True
    assert evaluate("sys.MessageId = 'x'", Message()) is None


def test_property_function() -> None:
    message = _full_message()
    assert evaluate("property('sys.Label') = 'label1'", message) is True
    assert evaluate("p('Label') = 'user label'", message) is True
    assert evaluate("p('user.label') = 'user label'", message) is True
    assert evaluate("p('sys.Nope') IS NULL", message) is True
    assert evaluate("p(1) IS NULL", message) is True
    assert evaluate("p('x' + 'y') = 1", xy=1) is True


def test_newid_is_fresh_each_time() -> None:
    assert evaluate("newid() = newid()") is False
    assert evaluate("newid() IS NOT NULL") is True


# --- the program object ---------------------------------------------------------------


def test_parse_filter_is_cached() -> None:
    first = parse_filter("cached_prop = 1")
    assert parse_filter("cached_prop = 1") is first
    assert isinstance(first, SqlFilterProgram)
    assert repr(first) == "SqlFilterProgram('cached_prop = 1')"
    assert first.expression == "cached_prop = 1"


def test_matches_only_on_true() -> None:
    program = parse_filter("n = 1")
    assert program.matches(Message(application_properties={"n": 1}))
    assert not program.matches(Message(application_properties={"n": 2}))
    assert not program.matches(Message())
