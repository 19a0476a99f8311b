"""What a new user of the CLI met (issue 32): options where users type them, settle
statuses in words, errors that name the option to use, help without noise, and a line
that says what a destructive command did."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt.cli import ExitCode, app
from sbmgmt.cli._console import CLI_EXTRA_HINT
from sbmgmt.cli._state import CliState
from sbmgmt.errors import ConnectCause, ConnectFailedError

from .conftest import Cli
from .test_commands import COMMANDS, send
from .test_subprocess import LIMIT, ROOT, environment, fake_serve_once

TOKEN = "6f1c0000-0000-0000-0000-0000000000e2"


def test_global_options_after_the_subcommand(fake: FakeNamespace) -> None:
    send(fake, "q", 2)
    runner = CliRunner(env={"SERVICEBUS_CONNECTION_STRING": ""})
    after = runner.invoke(app, ["peek", "q", "-o", "json", "-c", fake.connection_string,
                                "--timeout", "5"])
    assert after.exit_code == 0, after.output
    assert [r["body_text"] for r in json.loads(after.stdout)] == ["m0", "m1"]
    nested = runner.invoke(app, ["rules", "list", "t/s", "--output", "ndjson",
                                 "--connection-string", fake.connection_string])
    assert nested.exit_code == 0, nested.output
    assert [json.loads(line)["name"] for line in nested.stdout.splitlines()] == ["$Default"]


def test_a_global_option_after_the_subcommand_wins_over_the_one_before(
        fake: FakeNamespace) -> None:
    result = CliRunner().invoke(app, ["-o", "table", "-c", fake.connection_string,
                                      "peek", "q", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []


def test_debug_after_the_subcommand_shows_the_logs() -> None:
    with FakeNamespace() as fake:
        result = subprocess.run(
            [sys.executable, "-m", "sbmgmt.cli", "peek", "nosuch", "--debug"],
            capture_output=True, text=True, cwd=ROOT, timeout=LIMIT, check=False,
            env=environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string})
    assert result.returncode == ExitCode.NOT_FOUND
    assert "Traceback" in result.stderr
    # the service refuses the token for an entity that does not exist (404)
    assert "put-token for nosuch was refused with status 404" in result.stderr


@pytest.mark.parametrize(("word", "wire"), [
    ("completed", "completed"), ("abandoned", "abandoned"), ("dead-letter", "suspended"),
    ("deferred", "defered"), ("Dead-Letter", "suspended"), ("suspended", "suspended"),
    ("defered", "defered"),
])
def test_settle_statuses_in_words_and_on_the_wire(cli: Cli, word: str, wire: str) -> None:
    records = cli.json("deferred", "settle", "q", TOKEN, "--status", word, "--dry-run")
    assert records == [{"lock_token": TOKEN, "status": wire, "dry_run": True}]


def test_settle_reason_without_dead_letter_is_a_clear_usage_error(cli: Cli) -> None:
    result = cli.run("deferred", "settle", "q", TOKEN, "--status", "completed",
                     "--reason", "x")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert result.stderr == ("error: --reason and --description say why a message is "
                             "dead-lettered: they go with --status dead-letter\n")


def test_settle_unknown_status_lists_the_words(cli: Cli) -> None:
    result = cli.run("deferred", "settle", "q", TOKEN, "--status", "done")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    words = " ".join(re.sub("[│╭╮╰╯─]", " ", result.stderr).split())  # rich's error box
    assert "completed, abandoned, dead-letter or deferred" in words


def test_settle_dead_letter_with_reason_reaches_the_dead_letter_queue(
        cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "q", 1)
    (locked,) = fake.receive_and_lock("q", 1)
    result = cli.run("deferred", "settle", "q", str(locked.lock_token), "--status",
                     "dead-letter", "--reason", "expired", "--description", "too old",
                     output="table")
    assert result.stdout == "dead-lettered 1 message of q\n"
    (dead,) = cli.json("peek", "q", "--dead-letter")
    assert (dead["dead_letter_reason"], dead["dead_letter_description"]) == (
        "expired", "too old")


def test_cancel_says_what_it_cancelled(cli: Cli) -> None:
    scheduled = cli.json("schedule", "q", "--at", "+1h", "--body", "a", "--body", "b")
    numbers = [str(r["sequence_number"]) for r in scheduled]
    dry = cli.run("cancel", "q", *numbers, "--dry-run", output="table")
    assert dry.stdout == (f"dry run: would cancel the scheduled messages {', '.join(numbers)}"
                          " of q (nothing was sent)\n")
    assert len(cli.json("peek", "q")) == 2
    done = cli.run("cancel", "q", *numbers, output="table")
    assert done.stdout == f"cancelled the scheduled messages {', '.join(numbers)} of q\n"
    assert cli.json("peek", "q") == []


def test_demo_without_an_entity_names_the_option() -> None:
    with FakeNamespace() as fake:
        result = CliRunner().invoke(app, ["-c", fake.connection_string, "demo"])
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "--entity" in result.stderr
    assert "ValueError" not in result.stderr


@pytest.mark.parametrize("command", [[], *COMMANDS], ids=lambda c: " ".join(c) or "sbmgmt")
def test_help_shows_no_type_after_a_flag(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout
    assert "--help" in result.stdout


def test_python_m_sbmgmt_cli_without_the_extra_names_it(tmp_path: Path) -> None:
    # A sitecustomize that hides typer, as an environment without the extra would.
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoTyper:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer' or name.startswith('typer.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _NoTyper())\n")
    env = environment()
    env["PYTHONPATH"] = str(tmp_path) + ":" + env["PYTHONPATH"]
    result = subprocess.run([sys.executable, "-m", "sbmgmt.cli", "peek", "q"],
                            capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=LIMIT, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr == CLI_EXTRA_HINT + "\n"
    assert result.stdout == ""


def test_fake_serve_without_config_says_the_namespace_is_empty() -> None:
    line, stderr = fake_serve_once()
    assert line.startswith("Endpoint=sb://127.0.0.1:")
    assert "without --config the namespace has no entities" in stderr


def test_a_refused_connection_names_the_port_the_endpoint_gave_in_vain() -> None:
    refused = ConnectFailedError("peek: cannot connect to 127.0.0.1:5671: connection refused",
                                 host="127.0.0.1", port=5671, cause=ConnectCause.REFUSED)
    given = CliState(connection_string=(
        "Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=a;SharedAccessKey=b"))
    assert given.hint(refused) == ("the Endpoint's port 1 was not used: without "
                                   "UseDevelopmentEmulator=true every connection goes to "
                                   "port 5671")
    emulator = CliState(connection_string=(
        "Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=a;SharedAccessKey=b;"
        "UseDevelopmentEmulator=true"))
    assert emulator.hint(refused) is None
    assert CliState(connection_string="Endpoint=sb://ns/;SharedAccessKeyName=a;"
                    "SharedAccessKey=b").hint(refused) is None
    assert given.hint(ValueError("x")) is None
