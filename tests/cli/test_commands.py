"""Every subcommand through typer's CliRunner against the fake namespace, JSON parsed."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt import ops
from sbmgmt.cli import ExitCode, app
from sbmgmt.errors import MessageLockLostError
from sbmgmt.message import Message
from sbmgmt.testing import MockManagementNode

from .conftest import Cli, sequence_numbers

COMMANDS = [
    ["peek"], ["schedule"], ["cancel"], ["deferred", "receive"], ["deferred", "settle"],
    ["locks", "renew"], ["sessions", "list"], ["sessions", "state", "get"],
    ["sessions", "state", "set"], ["sessions", "state", "clear"], ["sessions", "renew"],
    ["rules", "list"], ["rules", "add"], ["rules", "remove"], ["demo"], ["fake", "serve"],
]


def send(fake: FakeNamespace, entity: str, count: int, session_id: str | None = None) -> None:
    fake.send(entity, *(Message(body=f"m{i}".encode(), message_id=f"id{i}",
                                session_id=session_id) for i in range(count)))


# ---- peek ----------------------------------------------------------------------------


def test_peek_count_and_from(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 5)
    first = cli.json("peek", "q", "--count", "2")
    assert sequence_numbers(first) == [1, 2]
    assert [r["body_text"] for r in first] == ["m0", "m1"]
    assert first[0]["message_id"] == "id0"
    assert first[0]["state"] == "active"
    assert first[0]["enqueued_time"].endswith("Z")
    assert base64.b64decode(first[0]["body_base64"]) == b"m0"
    assert sequence_numbers(cli.json("peek", "q", "--from", "4")) == [4, 5]


def test_peek_defaults_to_ten(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 12)
    assert len(cli.json("peek", "q")) == 10


def test_peek_all_pages_to_the_end(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 230)
    records = cli.ndjson("peek", "q", "--all")
    assert sequence_numbers(records) == list(range(1, 231))


def test_peek_count_larger_than_a_page(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 230)
    assert sequence_numbers(cli.json("peek", "q", "--count", "150")) == list(range(1, 151))


def test_peek_session(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "sq", 2, session_id="a")
    send(fake, "sq", 1, session_id="b")
    records = cli.json("peek", "sq", "--session", "b")
    assert [r["session_id"] for r in records] == ["b"]


def test_peek_count_and_all_together_is_bad_arguments(cli: Cli) -> None:
    result = cli.run("peek", "q", "--count", "2", "--all")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "--count or --all" in result.stderr


def test_peek_table_output(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 1)
    result = cli.run("peek", "q", output="table")
    assert result.exit_code == 0
    assert "seq" in result.stdout
    assert "m0" in result.stdout


# ---- schedule and cancel ---------------------------------------------------------------


def test_schedule_bodies_then_cancel(cli: Cli, fake: FakeNamespace) -> None:
    scheduled = cli.json("schedule", "q", "--at", "+1h", "--body", "a", "--body", "b")
    seqs = sequence_numbers(scheduled)
    assert len(seqs) == 2
    when = datetime.fromisoformat(scheduled[0]["scheduled_enqueue_time"].replace("Z", "+00:00"))
    assert when > datetime.now(timezone.utc) + timedelta(minutes=59)
    peeked = cli.json("peek", "q")
    assert [r["state"] for r in peeked] == ["scheduled", "scheduled"]
    assert [r["body_text"] for r in peeked] == ["a", "b"]

    dry = cli.json("cancel", "q", *map(str, seqs), "--dry-run")
    assert dry == [{"sequence_number": n, "dry_run": True} for n in seqs]
    assert len(cli.json("peek", "q")) == 2

    done = cli.json("cancel", "q", *map(str, seqs))
    assert done == [{"sequence_number": n, "dry_run": False} for n in seqs]
    assert cli.json("peek", "q") == []


def test_schedule_from_stdin_ndjson(cli: Cli) -> None:
    lines = "\n".join(json.dumps(line) for line in [
        {"body": "one", "session_id": "s1", "application_properties": {"n": 1}},
        {"body_base64": base64.b64encode(b"\xff").decode(), "session_id": "s1",
         "subject": "bin"},
    ]) + "\n"
    scheduled = cli.json("schedule", "sq", "--at", "2099-01-01T00:00:00Z", input=lines)
    assert len(scheduled) == 2
    assert {r["scheduled_enqueue_time"] for r in scheduled} == {"2099-01-01T00:00:00.000Z"}
    peeked = cli.json("peek", "sq", "--session", "s1")
    assert peeked[0]["body_text"] == "one"
    assert peeked[0]["application_properties"] == {"n": 1}
    assert peeked[1]["body_base64"] == base64.b64encode(b"\xff").decode()
    assert peeked[1]["subject"] == "bin"
    assert peeked[0]["scheduled_enqueue_time"] == "2099-01-01T00:00:00.000Z"


def test_schedule_in_batches_streams_ndjson(cli: Cli) -> None:
    lines = "".join(json.dumps({"body": str(i)}) + "\n" for i in range(25))
    result = cli.run("schedule", "q", "--at", "+1d", "--batch-size", "10", input=lines,
                     output="ndjson")
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert sequence_numbers(records) == list(range(1, 26))


def test_schedule_file_body(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "body.bin"
    path.write_bytes(b"\x00\x01\x02")
    cli.json("schedule", "q", "--at", "+5m", "--file", str(path), "--subject", "f")
    peeked = cli.json("peek", "q")
    assert base64.b64decode(peeked[0]["body_base64"]) == b"\x00\x01\x02"
    assert peeked[0]["subject"] == "f"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--at", "later", "--body", "x"], None, "invalid time"),
        (["--at", "+1m"], '{"body": 1}\n', "stdin line 1"),
        (["--at", "+1m"], '{"body": "x"}\nnope\n', "stdin line 2: not JSON"),
        (["--at", "+1m"], "\n\n", "no messages"),
    ],
)
def test_schedule_bad_input_is_bad_arguments(
    cli: Cli, args: list[str], stdin: str | None, message: str
) -> None:
    result = cli.run("schedule", "q", *args, input=stdin)
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert message in result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1


# ---- deferred, settle, locks --------------------------------------------------------------


def test_defer_receive_and_complete(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 2)
    locked = fake.receive_and_lock("q", 2)
    tokens = [str(m.lock_token) for m in locked]
    settled = cli.json("deferred", "settle", "q", *tokens, "--status", "defered")
    assert settled == [{"lock_token": t, "status": "defered", "dry_run": False} for t in tokens]
    assert [r["state"] for r in cli.json("peek", "q")] == ["deferred", "deferred"]

    received = cli.json("deferred", "receive", "q", "1", "2")
    assert sequence_numbers(received) == [1, 2]
    new_tokens = [r["lock_token"] for r in received]
    assert all(uuid.UUID(t) for t in new_tokens)
    assert all(r["locked_until"] for r in received)

    dry = cli.json("deferred", "settle", "q", *new_tokens, "--status", "completed", "--dry-run")
    assert [r["dry_run"] for r in dry] == [True, True]
    assert len(cli.json("peek", "q")) == 2
    cli.json("deferred", "settle", "q", *new_tokens, "--status", "completed")
    assert cli.json("peek", "q") == []


def test_dead_letter_and_peek_the_dead_letter_queue(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 1)
    (locked,) = fake.receive_and_lock("q", 1)
    cli.json("deferred", "settle", "q", str(locked.lock_token), "--status", "suspended",
             "--reason", "bad", "--description", "very bad")
    (dead,) = cli.json("peek", "q", "--dead-letter")
    assert dead["dead_letter_reason"] == "bad"
    assert dead["dead_letter_description"] == "very bad"
    assert cli.json("peek", "q") == []


def test_receive_deferred_and_delete(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 1)
    (locked,) = fake.receive_and_lock("q", 1)
    cli.json("deferred", "settle", "q", str(locked.lock_token), "--status", "defered")
    (received,) = cli.json("deferred", "receive", "q", "1", "--receive-and-delete")
    assert received["body_text"] == "m0"
    assert cli.json("peek", "q") == []


def test_locks_renew(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 2)
    tokens = [str(m.lock_token) for m in fake.receive_and_lock("q", 2)]
    renewed = cli.json("locks", "renew", "q", *tokens)
    assert [r["lock_token"] for r in renewed] == tokens
    for record in renewed:
        until = datetime.fromisoformat(record["locked_until"].replace("Z", "+00:00"))
        assert until > datetime.now(timezone.utc)


def test_lock_lost_exit_code(sbmgmt_mock: MockManagementNode) -> None:
    sbmgmt_mock.add(ops.renew_lock, entity="q", error=MessageLockLostError)
    token = uuid.uuid4()
    result = Cli(sbmgmt_mock.connection_string).run("locks", "renew", "q", str(token))
    assert result.exit_code == ExitCode.LOCK_LOST
    assert result.stderr.startswith("error: ")
    assert "lock" in result.stderr
    assert [call.request for call in sbmgmt_mock.calls] == [
        ops.renew_lock.Request(lock_tokens=(token,))]


def test_bad_lock_token_is_bad_arguments(cli: Cli) -> None:
    result = cli.run("deferred", "settle", "q", "not-a-uuid", "--status", "completed")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "not a lock token" in result.stderr


# ---- sessions ----------------------------------------------------------------------------


def test_sessions_list(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "sq", 1, session_id="a")
    send(fake, "sq", 1, session_id="b")
    assert cli.json("sessions", "list", "sq") == [{"session_id": "a"}, {"session_id": "b"}]
    assert cli.json("sessions", "list", "sq", "--updated-since", "+1h") == []


def test_session_state_set_get_clear_renew(cli: Cli, fake: FakeNamespace,
                                           tmp_path: Path) -> None:
    # Nobody holds the session: each command locks it for itself, as the service needs.
    send(fake, "sq", 1, session_id="a")
    assert cli.json("sessions", "state", "get", "sq", "a") == {
        "session_id": "a", "state_base64": None, "state_text": None}
    assert cli.json("sessions", "state", "set", "sq", "a", "--value", "step 3") == {
        "session_id": "a", "state_bytes": 6}
    got = cli.json("sessions", "state", "get", "sq", "a")
    assert got["state_text"] == "step 3"
    assert base64.b64decode(got["state_base64"]) == b"step 3"

    path = tmp_path / "state.bin"
    path.write_bytes(b"\xff\x00")
    cli.json("sessions", "state", "set", "sq", "a", "--file", str(path))
    got = cli.json("sessions", "state", "get", "sq", "a")
    assert (got["state_text"], base64.b64decode(got["state_base64"])) == (None, b"\xff\x00")

    assert cli.json("sessions", "state", "clear", "sq", "a", "--dry-run") == {
        "session_id": "a", "dry_run": True}
    assert cli.json("sessions", "state", "get", "sq", "a")["state_base64"] is not None
    cli.json("sessions", "state", "clear", "sq", "a")
    assert cli.json("sessions", "state", "get", "sq", "a")["state_base64"] is None

    renewed = cli.json("sessions", "renew", "sq", "a")
    assert renewed["session_id"] == "a"
    assert renewed["locked_until"].endswith("Z")


def test_session_state_set_needs_one_source(cli: Cli) -> None:
    result = cli.run("sessions", "state", "set", "sq", "a")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "exactly one" in result.stderr


def test_a_session_held_elsewhere_has_its_own_exit_code(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "sq", 1, session_id="held")
    with ServiceBusClient.from_connection_string(fake.connection_string) as sdk, \
            sdk.get_queue_receiver("sq", session_id="held"):
        for command in (("sessions", "renew"), ("sessions", "state", "get"),
                        ("sessions", "state", "clear")):
            result = cli.run(*command, "sq", "held")
            assert result.exit_code == ExitCode.SESSION_LOCKED == 9, command
            assert "locked by another receiver" in result.stderr


# ---- rules -------------------------------------------------------------------------------


def test_rules_add_list_remove(cli: Cli) -> None:
    [default] = cli.json("rules", "list", "t/s")
    assert default["created_at"].endswith("Z")  # every rule has its creation time
    assert default == {"name": "$Default", "filter": {"type": "true"}, "action": None,
                       "created_at": default["created_at"]}
    added = cli.json("rules", "add", "t/Subscriptions/s", "big", "--sql", "amount > 100",
                     "--action", "SET tier = 'gold'")
    assert added["filter"] == {"type": "sql", "expression": "amount > 100"}
    assert added["action"] == "SET tier = 'gold'"
    cli.json("rules", "add", "t/s", "red", "--correlation", "color=red",
             "--correlation", "subject=paint", "--correlation", "n:=5")
    listed = {r["name"]: r for r in cli.json("rules", "list", "t/s")}
    assert set(listed) == {"$Default", "big", "red"}
    assert listed["big"]["filter"] == {"type": "sql", "expression": "amount > 100"}
    assert listed["big"]["action"] == "SET tier = 'gold'"
    assert listed["red"]["filter"] == {
        "type": "correlation", "subject": "paint", "properties": {"color": "red", "n": 5}}
    assert listed["red"]["created_at"].endswith("Z")

    assert cli.json("rules", "remove", "t/s", "big", "--dry-run") == {
        "name": "big", "dry_run": True}
    assert len(cli.json("rules", "list", "t/s")) == 3
    assert cli.json("rules", "remove", "t/s", "big") == {"name": "big", "dry_run": False}
    assert {r["name"] for r in cli.json("rules", "list", "t/s")} == {"$Default", "red"}


def test_rules_list_table(cli: Cli) -> None:
    result = cli.run("rules", "list", "t/s", output="table")
    assert result.exit_code == 0
    assert "$Default" in result.stdout
    assert "TRUE" in result.stdout


def test_rule_exists_is_conflict(cli: Cli) -> None:
    cli.json("rules", "add", "t/s", "r", "--sql", "1=1")
    result = cli.run("rules", "add", "t/s", "r", "--sql", "1=1")
    assert result.exit_code == ExitCode.CONFLICT


def test_missing_rule_is_not_found(cli: Cli) -> None:
    result = cli.run("rules", "remove", "t/s", "nope")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert "nope" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["rules", "add", "t/s", "r"],
        ["rules", "add", "t/s", "r", "--sql", "1=1", "--correlation", "a=b"],
        ["rules", "add", "t/s", "r", "--correlation", "novalue"],
        ["rules", "list", "q"],
    ],
)
def test_rules_bad_arguments(cli: Cli, args: list[str]) -> None:
    result = cli.run(*args)
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert result.stderr.startswith("error: ")


# ---- connection, errors, secrets -----------------------------------------------------------


def test_connection_string_from_the_environment(fake: FakeNamespace) -> None:
    send(fake, "q", 1)
    result = CliRunner().invoke(app, ["-o", "json", "peek", "q"],
                                env={"SERVICEBUS_CONNECTION_STRING": fake.connection_string})
    assert result.exit_code == 0, result.stderr
    assert sequence_numbers(json.loads(result.stdout)) == [1]


def test_no_connection_is_bad_arguments() -> None:
    result = CliRunner().invoke(app, ["peek", "q"], env={"SERVICEBUS_CONNECTION_STRING": None,
                                                         "SERVICEBUS_NAMESPACE": None})
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "--connection-string" in result.stderr


def test_wrong_key_is_auth_and_never_printed(fake: FakeNamespace) -> None:
    secret = "V3JvbmdLZXlWYWx1ZQ=="
    conn = fake.connection_string.replace("SharedAccessKey=SAS_KEY_VALUE",
                                          f"SharedAccessKey={secret}")
    for extra in ([], ["--debug"]):
        result = CliRunner().invoke(app, ["-c", conn, "--timeout", "10", *extra, "peek", "q"])
        assert result.exit_code == ExitCode.AUTH, result.stderr
        assert secret not in result.stderr
        assert secret not in result.stdout
    assert "Traceback" in result.stderr


def test_unknown_entity_exit_code(cli: Cli) -> None:
    result = cli.run("peek", "nosuchqueue")
    assert result.exit_code == ExitCode.NOT_FOUND, result.stderr


def test_debug_shows_the_traceback(cli: Cli) -> None:
    plain = cli.run("rules", "remove", "t/s", "nope")
    assert "Traceback" not in plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1
    debug = cli.run("--debug", "rules", "remove", "t/s", "nope")
    assert debug.exit_code == ExitCode.NOT_FOUND
    assert "Traceback" in debug.stderr


def test_namespace_uses_default_azure_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    import sbmgmt.cli._state as state_module

    credential = object()
    identity = types.ModuleType("azure.identity")
    identity.DefaultAzureCredential = lambda: credential  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "azure.identity", identity)
    opened: list[tuple[str, object]] = []

    class Client:
        def __init__(self, namespace: str, cred: object, *, timeout: float) -> None:
            opened.append((namespace, cred))

        def __enter__(self) -> Client:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def entity(self, path: str) -> object:
            return types.SimpleNamespace(list_rules=lambda skip, top: [])

    monkeypatch.setattr(state_module, "ManagementClient", Client)
    result = CliRunner().invoke(app, ["-n", "ns.servicebus.windows.net", "-o", "json",
                                      "rules", "list", "t/s"],
                                env={"SERVICEBUS_CONNECTION_STRING": None})
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == []
    assert opened == [("ns.servicebus.windows.net", credential)]


def test_namespace_without_azure_identity_is_bad_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "azure.identity", None)
    result = CliRunner().invoke(app, ["-n", "ns.servicebus.windows.net", "peek", "q"],
                                env={"SERVICEBUS_CONNECTION_STRING": None})
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "sbmgmt[identity]" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["schedule", "q", "--at", "+1m", "--body", "x"],
         [{"sequence_number": 1, "scheduled_enqueue_time": None}]),
        (["peek", "q", "--dead-letter"], []),
        (["peek", "t/Subscriptions/s"], []),
        (["sessions", "list", "sq"], []),
        (["rules", "list", "t/s"],
         [{"name": "$Default", "filter": {"type": "true"}, "action": None,
           "created_at": "set"}]),
    ],
)
def test_emulator_creates_the_named_entity(args: list[str], expected: list[object]) -> None:
    result = CliRunner().invoke(app, ["--emulator", "-o", "json", *args])
    assert result.exit_code == 0, result.stderr
    records = json.loads(result.stdout)
    for record in records:
        if "scheduled_enqueue_time" in record:
            record["scheduled_enqueue_time"] = None
        if "created_at" in record:  # every rule has its creation time
            record["created_at"] = "set" if record["created_at"].endswith("Z") else None
    assert records == expected


def test_emulator_rejects_paths_that_name_no_entity() -> None:
    result = CliRunner().invoke(app, ["--emulator", "peek", "a/b/c"])  # a/b: TOPIC/SUB
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "not an entity path" in result.stderr


def test_demo_gets_the_connection_string(monkeypatch: pytest.MonkeyPatch) -> None:
    import sbmgmt.cli._demo

    calls: list[tuple[str | None, str | None]] = []
    monkeypatch.setattr(sbmgmt.cli._demo, "run_demo",
                        lambda conn, console, *, entity: calls.append((conn, entity)))
    runner = CliRunner()
    assert runner.invoke(app, ["-c", "Endpoint=sb://x/", "demo", "--entity", "q"]).exit_code == 0
    assert runner.invoke(app, ["--emulator", "demo"],
                         env={"SERVICEBUS_CONNECTION_STRING": "Endpoint=sb://x/"}).exit_code == 0
    assert calls == [("Endpoint=sb://x/", "q"), (None, None)]


# ---- help and completion ---------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Example: sbmgmt " in result.stdout


def test_help_never_shows_the_connection_string() -> None:
    secret = "SharedAccessKey=c2VjcmV0"
    result = CliRunner().invoke(app, ["--help"], env={
        "SERVICEBUS_CONNECTION_STRING": f"Endpoint=sb://x/;SharedAccessKeyName=k;{secret}",
        "COLUMNS": "200"})
    assert result.exit_code == 0
    assert "SERVICEBUS_CONNECTION_STRING" in result.stdout
    assert "c2VjcmV0" not in result.stdout


def test_shell_completion_is_available(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--show-completion`` is a flag: the shell is the one typer detects among the
    process's parents (shellingham), bash here, whatever runs pytest (a run started in the
    background, with no shell above it, had none: "Shell  not supported", exit 1)."""
    import shellingham

    monkeypatch.setattr(shellingham, "detect_shell", lambda *_: ("bash", "/bin/bash"))
    result = CliRunner().invoke(app, ["--show-completion"])
    assert result.exit_code == 0
    assert "complete" in result.stdout


@pytest.mark.parametrize(
    ("raised", "code", "line"),
    [
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "error: interrupted"),
        (RuntimeError("boom"), ExitCode.ERROR,
         "error: unexpected error: boom (--debug shows where)"),
        (IsADirectoryError(21, "Is a directory", "/tmp"), ExitCode.BAD_ARGUMENTS,
         "error: /tmp is a folder, not a file"),
    ],
)
def test_interrupts_and_unexpected_errors_exit_in_one_line(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, raised: BaseException, code: ExitCode, line: str
) -> None:
    from sbmgmt.client import EntityClient

    def fail(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(EntityClient, "peek_messages", fail)
    result = cli.run("peek", "q")
    assert result.exit_code == code
    assert result.stderr.strip() == line
