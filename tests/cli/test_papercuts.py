"""What a new user meets first: empty results in words, one line per failure, the version,
and a clear exit when the ``cli`` extra is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import sbmgmt
from fakes import FakeNamespace
from sbmgmt.cli import ExitCode
from sbmgmt.cli._console import CLI_EXTRA_HINT

from .conftest import Cli
from .test_commands import send
from .test_subprocess import LIMIT, ROOT, environment
from .test_subprocess import sbmgmt as run_sbmgmt


def test_peek_of_an_empty_queue_says_so_on_a_table(cli: Cli) -> None:
    result = cli.run("peek", "q", output="table")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "no messages from sequence number 1\n"


def test_peek_of_an_empty_range_names_its_start_and_the_dead_letter_queue(cli: Cli) -> None:
    cli.json("schedule", "q", "--at", "+10m", "--body", "a")
    result = cli.run("peek", "q", "--from", "2", output="table")
    assert result.stdout == "no messages from sequence number 2\n"
    dead = cli.run("peek", "q", "--dead-letter", output="table")
    assert dead.stdout == "no messages from sequence number 1 in the dead-letter queue\n"
    table = cli.run("peek", "q", output="table").stdout
    assert "scheduled" in table
    assert "no messages" not in table


def test_empty_results_stay_empty_lists_in_json_and_nothing_in_ndjson(cli: Cli) -> None:
    assert cli.json("peek", "q") == []
    assert cli.json("sessions", "list", "sq") == []
    assert cli.ndjson("peek", "q") == []
    assert cli.ndjson("sessions", "list", "sq") == []


def test_sessions_list_without_sessions_says_so_on_a_table(cli: Cli) -> None:
    result = cli.run("sessions", "list", "sq", output="table")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "no sessions\n"
    since = cli.run("sessions", "list", "sq", "--updated-since", "2030-01-02T03:04:05Z",
                    output="table")
    assert since.stdout == "no sessions updated since 2030-01-02T03:04:05.000Z\n"


def test_sessions_list_with_sessions_is_still_a_table(cli: Cli, fake: FakeNamespace) -> None:
    send(fake, "sq", 1, session_id="s1")
    result = cli.run("sessions", "list", "sq", output="table")
    assert "session id" in result.stdout
    assert "s1" in result.stdout


def test_unknown_entity_prints_one_line_and_logs_only_with_debug() -> None:
    with FakeNamespace() as fake:
        quiet = run_sbmgmt("peek", "nosuch", conn=fake.connection_string)
        loud = run_sbmgmt("--debug", "peek", "nosuch", conn=fake.connection_string)
    assert quiet.returncode == loud.returncode == ExitCode.NOT_FOUND
    assert quiet.stderr.startswith("error: ")
    assert len(quiet.stderr.splitlines()) == 1, quiet.stderr
    assert "could not be found" in quiet.stderr
    assert "sbmgmt-io" not in quiet.stderr
    assert "WARNING sbmgmt.io: sbmgmt-io-1: put-token for nosuch was refused with status 404" \
        in loud.stderr  # the service refuses the token for an entity that does not exist
    assert loud.stderr.splitlines()[-1] == quiet.stderr.rstrip("\n")


def test_library_without_logging_setup_prints_nothing_of_its_io_thread() -> None:
    """An application that configured no logging sees the error, not the I/O thread's log."""
    script = textwrap.dedent("""
        import sys
        from fakes import FakeNamespace
        from sbmgmt import ManagementClient
        from sbmgmt.errors import NotFoundError

        with FakeNamespace() as fake:
            with ManagementClient.from_connection_string(fake.connection_string) as client:
                try:
                    client.entity("nosuch").peek_messages(1, 1)
                except NotFoundError:
                    print("not found")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=environment(), cwd=ROOT, timeout=LIMIT, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "not found\n"
    assert result.stderr == ""


def test_version_is_the_package_version() -> None:
    result = run_sbmgmt("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"sbmgmt {sbmgmt.__version__}\n"


@pytest.mark.parametrize("missing", ["typer", "rich"])
def test_console_script_without_the_cli_extra_names_it_and_exits_2(missing: str) -> None:
    script = (f"import sys; sys.modules[{missing!r}] = None\n"
              "from sbmgmt.cli._console import main; main()")
    result = subprocess.run([sys.executable, "-c", script, "peek", "q"], capture_output=True,
                            text=True, env=environment(), cwd=ROOT, timeout=LIMIT, check=False)
    assert result.returncode == 2
    assert result.stderr == CLI_EXTRA_HINT + "\n"
    assert "pip install 'sbmgmt[cli]'" in result.stderr
    assert result.stdout == ""


def test_console_script_runs_the_cli_when_the_extra_is_there() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from sbmgmt.cli._console import main; main()", "-o", "json",
         "--emulator", "peek", "orders"],
        capture_output=True, text=True, env=environment(), cwd=ROOT, timeout=LIMIT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
