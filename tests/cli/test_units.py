"""The CLI's pure parts: times, exit codes, scrubbing, records, NDJSON and pair parsing."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from proton import UNDESCRIBED, Array, Data, Described, symbol, timestamp, ulong

from sbmgmt import errors
from sbmgmt.cli import ExitCode
from sbmgmt.cli._exit import Scrubber, UsageProblem, describe_error, exit_code_for
from sbmgmt.cli._input import correlation_filter, messages_from_ndjson, parse_pair
from sbmgmt.cli._render import filter_summary, iso_time, json_value, message_record, rule_record
from sbmgmt.cli._rules import subscription_path
from sbmgmt.cli._times import parse_time
from sbmgmt.message import MessageState, ReceivedMessage
from sbmgmt.rules import (
    CorrelationFilter,
    FalseFilter,
    RuleDescription,
    RuleFilter,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def fixed_now() -> datetime:
    return NOW


# ---- times ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("+10m", NOW + timedelta(minutes=10)),
        ("-1h", NOW - timedelta(hours=1)),
        ("+1d2h30m15s", NOW + timedelta(days=1, hours=2, minutes=30, seconds=15)),
        ("+2w", NOW + timedelta(weeks=2)),
        ("2025-01-31T12:00:00Z", datetime(2025, 1, 31, 12, tzinfo=timezone.utc)),
        ("2025-01-31T12:00:00z", datetime(2025, 1, 31, 12, tzinfo=timezone.utc)),
        ("2025-01-31T14:00:00+02:00", datetime(2025, 1, 31, 12, tzinfo=timezone.utc)),
        ("2025-01-31T12:00:00", datetime(2025, 1, 31, 12, tzinfo=timezone.utc)),
        ("2025-01-31", datetime(2025, 1, 31, tzinfo=timezone.utc)),
    ],
)
def test_parse_time_accepts_iso_and_relative_forms(text: str, expected: datetime) -> None:
    parsed = parse_time(text, now=fixed_now)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize("text", ["yesterday", "+10", "10m", "+10x", "+1m1m", "", "+"])
def test_parse_time_rejects_other_forms_with_usage_problem(text: str) -> None:
    with pytest.raises(UsageProblem, match="invalid time"):
        parse_time(text, now=fixed_now)


@given(st.integers(0, 10_000), st.sampled_from(["s", "m", "h", "d", "w"]))
def test_relative_times_move_by_exactly_the_amount(amount: int, unit: str) -> None:
    names = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    delta = timedelta(**{names[unit]: amount})
    assert parse_time(f"+{amount}{unit}", now=fixed_now) == NOW + delta
    assert parse_time(f"-{amount}{unit}", now=fixed_now) == NOW - delta


# ---- exit codes ----------------------------------------------------------------------


def _connect_failed(cause: errors.ConnectCause) -> errors.ConnectFailedError:
    return errors.ConnectFailedError("x", host="h", port=1, cause=cause)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.UnauthorizedError("x"), ExitCode.AUTH),
        (errors.NotFoundError("x"), ExitCode.NOT_FOUND),
        (errors.MessageLockLostError("x"), ExitCode.LOCK_LOST),
        (errors.SessionLockLostError("x"), ExitCode.LOCK_LOST),
        (errors.ConflictError("x"), ExitCode.CONFLICT),
        (errors.QuotaExceededError("x"), ExitCode.QUOTA),
        (errors.BadRequestError("x"), ExitCode.BAD_ARGUMENTS),
        (errors.ServerBusyError("x"), ExitCode.TRANSIENT),
        (errors.ServerTimeoutError("x"), ExitCode.TRANSIENT),
        (errors.InternalServerError("x"), ExitCode.TRANSIENT),
        (errors.OperationTimeoutError("x"), ExitCode.TRANSIENT),
        (errors.ConnectionLostError("x"), ExitCode.TRANSIENT),
        (errors.LinkDetachedError("x"), ExitCode.TRANSIENT),
        (errors.ClientClosedError("x"), ExitCode.TRANSIENT),
        (errors.ProtocolError("x"), ExitCode.PROTOCOL),
        (_connect_failed(errors.ConnectCause.REFUSED), ExitCode.TRANSIENT),
        (_connect_failed(errors.ConnectCause.OTHER), ExitCode.TRANSIENT),
        (_connect_failed(errors.ConnectCause.NAME_NOT_FOUND), ExitCode.ENDPOINT),
        (_connect_failed(errors.ConnectCause.TLS), ExitCode.ENDPOINT),
        (errors.SessionLockedElsewhereError("x"), ExitCode.SESSION_LOCKED),
        (errors.OperationError("x"), ExitCode.ERROR),
        (UsageProblem("x"), ExitCode.BAD_ARGUMENTS),
        (ValueError("x"), ExitCode.BAD_ARGUMENTS),
        (FileNotFoundError("x"), ExitCode.BAD_ARGUMENTS),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED),
        (RuntimeError("x"), ExitCode.ERROR),
    ],
)
def test_exit_code_table(error: BaseException, code: ExitCode) -> None:
    assert exit_code_for(error) is code


def test_status_codes_from_the_error_table_reach_distinct_exit_codes() -> None:
    codes = {
        status: exit_code_for(errors.error_for_status("op", status))
        for status in (400, 401, 403, 404, 409, 410, 408, 500, 503)
    }
    assert codes == {
        400: ExitCode.BAD_ARGUMENTS, 401: ExitCode.AUTH, 403: ExitCode.AUTH,
        404: ExitCode.NOT_FOUND, 409: ExitCode.CONFLICT, 410: ExitCode.LOCK_LOST,
        408: ExitCode.TRANSIENT, 500: ExitCode.TRANSIENT, 503: ExitCode.TRANSIENT,
    }


def test_exit_codes_are_distinct() -> None:
    values = [code.value for code in ExitCode]
    assert len(values) == len(set(values))


def test_describe_error_is_one_line() -> None:
    assert describe_error(errors.NotFoundError("no\nsuch  rule")) == "no such rule"
    assert describe_error(KeyError("k")) == "unexpected error: 'k' (--debug shows where)"
    assert describe_error(RuntimeError()) == "unexpected error (--debug shows where)"
    assert describe_error(KeyboardInterrupt()) == "interrupted"


@pytest.mark.parametrize(("error", "said"), [
    (ValueError("cannot send to orders/$DeadLetterQueue"),
     "cannot send to orders/$DeadLetterQueue"),
    (FileNotFoundError(2, "No such file or directory", "out/x.jsonl"),
     "out/x.jsonl: no such file or folder"),
    (IsADirectoryError(21, "Is a directory", "/tmp"), "/tmp is a folder, not a file"),
    (NotADirectoryError(20, "Not a directory", "a.txt/b"),
     "a.txt/b: a part of the path is not a folder"),
    (PermissionError(13, "Permission denied", "/root/x"),
     "/root/x: not allowed (permission denied)"),
    (FileExistsError(17, "File exists", "x"), "x already exists"),
    (OSError(28, "No space left on device", "big"), "big: No space left on device"),
    (OSError(28, "No space left on device"), "No space left on device"),
])
def test_errors_are_said_in_the_users_words(error: Exception, said: str) -> None:
    """Never a Python class name (issue 59: "error: ValueError: cannot send to ...",
    "error: FileNotFoundError: [Errno 2] ...", "error: IsADirectoryError")."""
    assert describe_error(error) == said


# ---- scrubbing -----------------------------------------------------------------------

CONN = ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=c2VjcmV0a2V5PQ==;EntityPath=q")


def test_scrubber_hides_the_connection_string_and_its_key() -> None:
    scrub = Scrubber([CONN])
    assert scrub(f"bad {CONN} here") == "bad *** here"
    assert "c2VjcmV0a2V5PQ==" not in scrub("key was c2VjcmV0a2V5PQ== really")


def test_scrubber_hides_key_and_signature_shapes_it_was_not_told_about() -> None:
    scrub = Scrubber()
    text = scrub("SharedAccessKey=abc123;x SharedAccessSignature sr=a&sig=ZZZ%3D&se=1")
    assert "abc123" not in text
    assert "ZZZ" not in text
    assert "SharedAccessKey=***" in text


def test_scrubber_replaces_a_short_key_only_as_a_whole_token() -> None:
    scrub = Scrubber(["Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=a;SharedAccessKey=b"])
    text = "last connection problem: b, key=b; connection lost (disconnected) by abba"
    assert scrub(text) == (
        "last connection problem: ***, key=***; connection lost (disconnected) by abba")
    assert scrub("sb://host/;SharedAccessKey=b;EntityPath=q") == (
        "sb://host/;SharedAccessKey=***;EntityPath=q")


def test_scrubber_does_not_hide_a_key_inside_a_longer_token() -> None:
    scrub = Scrubber(["SharedAccessKey=abc"])
    assert scrub("abc abcd xabc abc/x (abc).") == "*** abcd xabc abc/x (***)."


def test_scrubber_traceback_has_no_secret() -> None:
    scrub = Scrubber([CONN])
    try:
        raise ValueError(f"cannot parse {CONN}")
    except ValueError as exc:
        text = scrub.traceback(exc)
    assert "Traceback" in text
    assert "c2VjcmV0a2V5PQ==" not in text


# ---- records -------------------------------------------------------------------------


def test_iso_time_is_utc_with_milliseconds_and_z() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert iso_time(datetime(2025, 1, 2, 5, 4, 3, 120000, tzinfo=plus_two)) == (
        "2025-01-02T03:04:03.120Z")
    assert iso_time(datetime(2025, 1, 2)) == "2025-01-02T00:00:00.000Z"
    assert iso_time(None) is None


def test_json_value_converts_amqp_and_python_values() -> None:
    token = uuid.uuid4()
    array = Array(UNDESCRIBED, Data.LONG, 1, 2)  # type: ignore[arg-type]  # proton's stub
    value = {
        symbol("sym"): b"\x00\xff",
        "ts": timestamp(1_700_000_000_123),
        "when": datetime(2025, 1, 1, tzinfo=timezone.utc),
        "id": token,
        "n": ulong(7),
        "list": [1, (2.5, None)],
        "arr": array,
        "desc": Described(symbol("d"), "v"),
        "state": MessageState.DEFERRED,
        "ttl": timedelta(seconds=90),
    }
    out = json_value(value)
    assert out == {
        "sym": base64.b64encode(b"\x00\xff").decode(),
        "ts": "2023-11-14T22:13:20.123Z",
        "when": "2025-01-01T00:00:00.000Z",
        "id": str(token),
        "n": 7,
        "list": [1, [2.5, None]],
        "arr": [1, 2],
        "desc": {"descriptor": "d", "value": "v"},
        "state": 1,
        "ttl": 90.0,
    }
    json.dumps(out)


def test_message_record_fields() -> None:
    token = uuid.uuid4()
    message = ReceivedMessage(
        body=b"hello", message_id="m1", session_id="s", subject="sub",
        sequence_number=5, enqueued_time=datetime(2025, 1, 1, tzinfo=timezone.utc),
        lock_token=token, state=MessageState.SCHEDULED,
        application_properties={"k": 1},
    )
    record = message_record(message)
    assert record["sequence_number"] == 5
    assert record["message_id"] == "m1"
    assert record["state"] == "scheduled"
    assert record["enqueued_time"] == "2025-01-01T00:00:00.000Z"
    assert record["lock_token"] == str(token)
    assert record["body_type"] == "data"
    assert base64.b64decode(record["body_base64"]) == b"hello"
    assert record["body_text"] == "hello"
    assert record["body_value"] is None
    assert record["application_properties"] == {"k": 1}
    json.dumps(record)


def test_message_record_binary_and_value_bodies() -> None:
    binary = message_record(ReceivedMessage(body=b"\xff\xfe", sequence_number=1))
    assert binary["body_text"] is None
    assert base64.b64decode(binary["body_base64"]) == b"\xff\xfe"
    value = message_record(ReceivedMessage(body={"a": [1]}, body_type="value",
                                           sequence_number=2))
    assert value["body_base64"] is None
    assert value["body_value"] == {"a": [1]}


@pytest.mark.parametrize(
    ("rule_filter", "filter_json", "summary"),
    [
        (SqlFilter(expression="a > 1"), {"type": "sql", "expression": "a > 1"}, "a > 1"),
        (TrueFilter(), {"type": "true"}, "TRUE"),
        (FalseFilter(), {"type": "false"}, "FALSE"),
        (CorrelationFilter(subject="x", properties={"n": 5}),
         {"type": "correlation", "subject": "x", "properties": {"n": 5}},
         "correlation: subject=x, n=5"),
    ],
)
def test_rule_record(rule_filter: RuleFilter, filter_json: dict[str, object], summary: str) -> None:
    rule = RuleDescription(name="r", filter=rule_filter, action=SqlRuleAction(expression="SET a=1"),
                           created_at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    record = rule_record(rule)
    assert record == {"name": "r", "filter": filter_json, "action": "SET a=1",
                      "created_at": "2025-01-01T00:00:00.000Z"}
    assert filter_summary(record) == summary


# ---- input ---------------------------------------------------------------------------


def test_messages_from_ndjson() -> None:
    lines = [
        json.dumps({"body": "text", "session_id": "s1", "subject": "greet",
                    "application_properties": {"n": 1, "ok": True}}),
        "",
        json.dumps({"body_base64": base64.b64encode(b"\x00\x01").decode(),
                    "message_id": "m2", "time_to_live": 1.5}),
        json.dumps({"body_value": {"a": 1}}),
        json.dumps({}),
    ]
    messages = list(messages_from_ndjson(lines))
    assert len(messages) == 4
    assert messages[0].body == b"text"
    assert messages[0].session_id == "s1"
    assert messages[0].subject == "greet"
    assert messages[0].application_properties == {"n": 1, "ok": True}
    assert messages[1].body == b"\x00\x01"
    assert messages[1].message_id == "m2"
    assert messages[1].time_to_live == timedelta(seconds=1.5)
    assert (messages[2].body, messages[2].body_type) == ({"a": 1}, "value")
    assert messages[3].body == b""


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "line 2: not JSON"),
        ('{"bodyy": "x"}', "line 2: bodyy"),
        ('{"body": "x", "body_base64": "eA=="}', "line 2: "),
        ('{"body_base64": "***"}', "line 2: body_base64 is not valid base64"),
        ('{"time_to_live": -1}', "line 2: time_to_live"),
        ('["x"]', "line 2: "),
    ],
)
def test_ndjson_errors_name_the_line(line: str, problem: str) -> None:
    with pytest.raises(UsageProblem, match="stdin " + problem.replace("*", r"\*")):
        list(messages_from_ndjson(['{"body": "ok"}', line]))


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("a=b", ("a", "b")),
        ("a=", ("a", "")),
        ("a=b=c", ("a", "b=c")),
        ("n:=5", ("n", 5)),
        ("f:=1.5", ("f", 1.5)),
        ("t:=true", ("t", True)),
        ('s:="x"', ("s", "x")),
        ("url=http://x:=y", ("url", "http://x:=y")),
    ],
)
def test_parse_pair(text: str, pair: tuple[str, object]) -> None:
    assert parse_pair(text) == pair


@pytest.mark.parametrize("text", ["novalue", "=x", "n:=nope"])
def test_parse_pair_rejects(text: str) -> None:
    with pytest.raises(UsageProblem):
        parse_pair(text)


def test_correlation_filter_from_pairs() -> None:
    rule_filter = correlation_filter(
        ["correlation-id=c1", "label=news", "color=red", "n:=5", "property.to=x"])
    assert rule_filter == CorrelationFilter(
        correlation_id="c1", subject="news", properties={"color": "red", "n": 5, "to": "x"})


def test_correlation_filter_system_values_are_strings() -> None:
    with pytest.raises(UsageProblem, match="string"):
        correlation_filter(["message_id:=5"])


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("t/s", "t/Subscriptions/s"),
        ("t/Subscriptions/s", "t/Subscriptions/s"),
        ("/t/subscriptions/s/", "t/subscriptions/s"),
    ],
)
def test_subscription_path(text: str, path: str) -> None:
    assert subscription_path(text) == path


@pytest.mark.parametrize("text", ["q", "a/b/c", "t/Subscriptions/s/x"])
def test_subscription_path_rejects(text: str) -> None:
    with pytest.raises(UsageProblem):
        subscription_path(text)
