"""One JSON shape per command, whatever happened (issue 59: ``move -o json`` printed an
object when something moved and ``[]`` when nothing did). Each command's ``-o json`` output
is validated against its schema (docs/cli.md, "JSON output") in each case it has: something
found or done, nothing found or done, a dry run. Every key is required and no other is
allowed: a script's ``jq '.deleted'`` works on every answer.

The commands of sbmgmt/cli/_repair.py, _export.py and _deferred.py are checked by their own
tests (tests/cli/test_repair*, test_export*, test_deferred*).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest

from fakes import FakeNamespace
from sbmgmt.message import Message

from .conftest import Cli

Schema = dict[str, Any]
TIME = {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"}
TEXT, NUMBER, FLAG = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
ANY_TIME_OR_NULL = {"anyOf": [TIME, {"type": "null"}]}


def maybe(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def record(**fields: Schema) -> Schema:
    """An object with exactly these keys."""
    return {"type": "object", "properties": fields, "required": list(fields),
            "additionalProperties": False}


def array(item: Schema) -> Schema:
    return {"type": "array", "items": item}


MESSAGE = record(
    sequence_number=NUMBER, message_id=maybe(TEXT), session_id=maybe(TEXT),
    correlation_id=maybe(TEXT), subject=maybe(TEXT), content_type=maybe(TEXT), to=maybe(TEXT),
    reply_to=maybe(TEXT), partition_key=maybe(TEXT),
    state={"enum": ["active", "deferred", "scheduled"]}, enqueued_time=ANY_TIME_OR_NULL,
    scheduled_enqueue_time=ANY_TIME_OR_NULL, locked_until=ANY_TIME_OR_NULL,
    lock_token=maybe(TEXT), delivery_count=maybe(NUMBER), time_to_live=maybe({"type": "number"}),
    dead_letter_reason=maybe(TEXT), dead_letter_description=maybe(TEXT),
    dead_letter_source=maybe(TEXT), application_properties={"type": "object"},
    annotations={"type": "object"}, body_type={"enum": ["data", "value", "sequence"]},
    body_base64=maybe(TEXT), body_text=maybe(TEXT), body_value={})
RULE = record(name=TEXT, filter={"type": "object", "required": ["type"]}, action=maybe(TEXT),
              created_at=ANY_TIME_OR_NULL)
SCHEMAS: dict[str, Schema] = {
    "peek": array(MESSAGE),
    "deferred receive": array(MESSAGE),
    "schedule": array(record(sequence_number=NUMBER, scheduled_enqueue_time=TIME)),
    "cancel": array(record(sequence_number=NUMBER, dry_run=FLAG)),
    "deferred settle": array(record(lock_token=TEXT, status=TEXT, dry_run=FLAG)),
    "locks renew": array(record(lock_token=TEXT, locked_until=TIME)),
    "sessions list": array(record(session_id=TEXT)),
    "sessions state get": record(session_id=TEXT, state_base64=maybe(TEXT),
                                 state_text=maybe(TEXT)),
    "sessions state set": record(session_id=TEXT, state_bytes=NUMBER),
    "sessions state clear": record(session_id=TEXT, dry_run=FLAG),
    "sessions renew": record(session_id=TEXT, locked_until=TIME),
    "rules list": array(RULE),
    "rules add": RULE,
    "rules remove": record(name=TEXT, dry_run=FLAG),
    "send": array(record(entity=TEXT, message_id=TEXT, session_id=maybe(TEXT), bytes=NUMBER)),
    "purge": record(entity=TEXT, session_id=maybe(TEXT), before=TIME, eligible=NUMBER,
                    dry_run=FLAG, deleted=NUMBER,
                    outcome={"enum": ["finished", "cancelled", "failed", None]},
                    uncertain_requests=NUMBER, error=maybe(TEXT)),
    "entities": array(record(kind={"enum": ["queue", "topic", "subscription"]}, name=TEXT,
                             active=maybe(NUMBER), dead_letter=maybe(NUMBER),
                             scheduled=maybe(NUMBER), transfer=maybe(NUMBER),
                             transfer_dead_letter=maybe(NUMBER), total=maybe(NUMBER),
                             size_in_bytes=maybe(NUMBER))),
}


@pytest.fixture
def served() -> Iterator[tuple[Cli, FakeNamespace]]:
    """q (three messages, the second locked), sq (a session with state), t/s, and an HTTP
    port for ``entities``."""
    with FakeNamespace(http_port=0) as fake:
        fake.add_queue("q")
        fake.add_queue("empty")
        fake.add_queue("sq", requires_session=True)
        fake.add_topic("t")
        fake.add_subscription("t", "s")
        fake.send("q", *(Message(body=f"m{n}".encode(), message_id=f"m{n}") for n in range(3)))
        fake.send("sq", Message(body=b"hi", session_id="user-1"))
        yield Cli(fake.connection_string), fake


Case = Callable[[Cli, FakeNamespace], list[str]]


def _scheduled(cli: Cli) -> str:
    """The sequence number of a message scheduled for an hour from now."""
    return str(cli.json("schedule", "q", "--at", "+1h", "--body", "x")[0]["sequence_number"])


def _deferred(cli: Cli, fake: FakeNamespace) -> str:
    """The sequence number of a message of q deferred (locked, then settled as deferred)."""
    (locked,) = fake.receive_and_lock("q", 1)
    cli.json("deferred", "settle", "q", str(locked.lock_token), "--status", "deferred")
    return str(locked.sequence_number)


def _token(fake: FakeNamespace) -> str:
    return str(fake.receive_and_lock("q", 1)[0].lock_token)


#: Each command's cases: (name, what it runs); every command of SCHEMAS has two or more.
CASES: list[tuple[str, str, Case]] = [
    ("peek", "messages", lambda c, f: ["peek", "q"]),
    ("peek", "none", lambda c, f: ["peek", "empty"]),
    ("peek", "dead letters, none", lambda c, f: ["peek", "q", "--dead-letter"]),
    ("deferred receive", "one", lambda c, f: ["deferred", "receive", "q", _deferred(c, f)]),
    ("schedule", "two", lambda c, f: ["schedule", "q", "--at", "+1h", "--body", "a",
                                      "--body", "b"]),
    ("schedule", "one", lambda c, f: ["schedule", "q", "--at", "+1h", "--body", "a"]),
    ("cancel", "dry run", lambda c, f: ["cancel", "q", "17", "--dry-run"]),
    ("cancel", "done", lambda c, f: ["cancel", "q", _scheduled(c)]),
    ("deferred settle", "dry run", lambda c, f: ["deferred", "settle", "q", str(uuid.uuid4()),
                                                 "--status", "completed", "--dry-run"]),
    ("deferred settle", "done", lambda c, f: ["deferred", "settle", "q", _token(f),
                                              "--status", "abandoned"]),
    ("locks renew", "one", lambda c, f: ["locks", "renew", "q", _token(f)]),
    ("sessions list", "one", lambda c, f: ["sessions", "list", "sq"]),
    ("sessions list", "none", lambda c, f: ["sessions", "list", "sq", "--updated-since",
                                            "+1d"]),
    ("sessions state get", "none", lambda c, f: ["sessions", "state", "get", "sq", "user-1"]),
    ("sessions state set", "set", lambda c, f: ["sessions", "state", "set", "sq", "user-1",
                                                "--value", "x"]),
    ("sessions state clear", "dry run", lambda c, f: ["sessions", "state", "clear", "sq",
                                                      "user-1", "--dry-run"]),
    ("sessions state clear", "done", lambda c, f: ["sessions", "state", "clear", "sq",
                                                   "user-1"]),
    ("sessions renew", "one", lambda c, f: ["sessions", "renew", "sq", "user-1"]),
    ("rules list", "default", lambda c, f: ["rules", "list", "t/Subscriptions/s"]),
    ("rules add", "sql", lambda c, f: ["rules", "add", "t/Subscriptions/s", "big", "--sql",
                                       "n > 1"]),
    ("rules add", "correlation", lambda c, f: ["rules", "add", "t/Subscriptions/s", "eu",
                                               "--correlation", "region=eu"]),
    ("rules remove", "dry run", lambda c, f: ["rules", "remove", "t/Subscriptions/s",
                                              "$Default", "--dry-run"]),
    ("rules remove", "done", lambda c, f: ["rules", "remove", "t/Subscriptions/s",
                                           "$Default"]),
    ("send", "one", lambda c, f: ["send", "q", "hello"]),
    ("send", "three", lambda c, f: ["send", "sq", "hello", "--session", "s", "--count", "3"]),
    ("purge", "dry run", lambda c, f: ["purge", "q", "--dry-run"]),
    ("purge", "nothing to delete", lambda c, f: ["purge", "empty", "--yes"]),
    ("purge", "deleted", lambda c, f: ["purge", "q", "--yes"]),
    ("entities", "all", lambda c, f: ["entities"]),
    ("entities", "none match", lambda c, f: ["entities", "--match", "nothing*"]),
]


@pytest.mark.parametrize(("command", "case", "args"), CASES,
                         ids=[f"{command}: {case}" for command, case, _ in CASES])
def test_each_command_answers_in_its_one_shape(served: tuple[Cli, FakeNamespace], command: str,
                                               case: str, args: Case,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cli, fake = served
    monkeypatch.setenv("EMULATOR_HTTP_PORT", str(fake.http_port))
    answer = cli.json(*args(cli, fake))
    jsonschema.validate(answer, SCHEMAS[command])


def test_every_schema_has_two_cases_or_is_one_list() -> None:
    """A command that can answer in more than one way is run in more than one."""
    counted = {command: sum(c == command for c, _, _ in CASES) for command in SCHEMAS}
    assert all(count >= 1 for count in counted.values()), counted
    assert all(counted[c] >= 2 for c in ("peek", "cancel", "deferred settle", "sessions list",
                                        "rules remove", "send", "purge", "entities"))
