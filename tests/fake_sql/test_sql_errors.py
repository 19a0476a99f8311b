"""Invalid SQL: a SqlSyntaxError (a ValueError) that says where and what."""

from __future__ import annotations

import pytest

from sbmgmt.sql import SqlSyntaxError, parse_action, parse_filter


def syntax_error(expression: str, *, action: bool = False) -> SqlSyntaxError:
    with pytest.raises(SqlSyntaxError) as caught:
        (parse_action if action else parse_filter)(expression)
    return caught.value


def test_is_a_value_error_with_position_and_token_in_the_message() -> None:
    error = syntax_error("color = = 'red'")
    assert isinstance(error, ValueError)
    assert (error.line, error.column, error.token) == (1, 9, "=")
    assert error.expression == "color = = 'red'"
    assert "line 1, column 9" in str(error)
    assert "'='" in str(error)


def test_position_on_a_later_line() -> None:
    error = syntax_error("a = 1\nAND b = 2\n  OR c c")
    assert (error.line, error.column, error.token) == (3, 8, "c")


def test_unexpected_character() -> None:
    error = syntax_error("a = #1")
    assert (error.line, error.column, error.token) == (1, 5, "#")
    assert "unexpected character" in error.reason


def test_unexpected_end_points_after_the_text() -> None:
    error = syntax_error("a = 1 AND")
    assert (error.line, error.column, error.token) == (1, 10, None)
    assert "end of expression" in error.reason


def test_unclosed_parenthesis_and_string() -> None:
    assert "end of expression" in syntax_error("(a = 1").reason
    error = syntax_error("a = 'open")
    assert (error.line, error.column) == (1, 5)


@pytest.mark.parametrize("expression", ["", "   ", "\n"])
def test_empty_expression(expression: str) -> None:
    assert "empty" in syntax_error(expression).reason
    assert "empty" in syntax_error(expression, action=True).reason


@pytest.mark.parametrize(
    ("expression", "column", "reason"),
    [
        ("a", 1, "expected a condition"),
        ("TRUE", 1, "expected a condition"),
        ("a + 1", 1, "expected a condition"),
        ("(a = 1) + 1 = 2", 2, "expected a value"),
        ("NOT a", 5, "expected a condition"),
        ("a = 1 AND b", 11, "expected a condition"),
        ("sys.Nope = 1", 5, "unknown system property sys.Nope"),
        ("other.x = 1", 1, "unknown scope"),
        ("and = 1", 1, "reserved word"),
        ("x = 1 OR like = 1", 10, "reserved word"),
        ("1 IS NULL", 1, "applies to a property"),
        ("a LIKE 1", 8, "pattern must be a string"),
        ("a LIKE 'x' ESCAPE 'ab'", 19, "one character"),
        ("a LIKE 'x!' ESCAPE '!'", 8, "ends with its escape"),
        ("foo(1) = 1", 1, "unknown function"),
        ("newid(1) = 1", 1, "takes no argument"),
        ("p() = 1", 1, "needs a property name"),
        ("9223372036854775808 = 1", 1, "Int64 range"),
    ],
)
def test_semantic_errors_point_at_the_construct(
    expression: str, column: int, reason: str
) -> None:
    error = syntax_error(expression)
    assert error.line == 1
    assert error.column == column
    assert reason in error.reason


@pytest.mark.parametrize(
    "expression",
    ["a == 1", "a = 1 = 1", "a IN ()", "a IN 1", "a LIKE", "EXISTS(1)", "EXISTS a",
     "a IS NOT", "a NOT = 1", "a = 1 b = 2", ") a = 1", "sys. = 1"],
)
def test_malformed_filters(expression: str) -> None:
    error = syntax_error(expression)
    assert error.line >= 1
    assert error.column >= 1
    assert str(error).startswith("SQL syntax error at line")


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("SET sys.SequenceNumber = 1", "cannot be changed"),
        ("REMOVE sys.EnqueuedTimeUtc", "cannot be changed"),
        ("SET a > 1", "SET needs '='"),
        ("SET a = b = 1", "expected a value"),
        ("SET sys.Nope = 1", "unknown system property"),
        ("REMOVE", "end of expression"),
        ("a = 1", "unexpected 'a'"),
        ("SET a = 1 SET b = 2", "unexpected"),
        ("SET a = 1,", "end of expression"),
    ],
)
def test_malformed_actions(expression: str, reason: str) -> None:
    assert reason in syntax_error(expression, action=True).reason


def test_errors_are_not_cached_as_programs() -> None:
    for _ in range(2):
        assert syntax_error("a = ").column == 5
