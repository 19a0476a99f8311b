"""Help texts and errors a person reads (issue 40): nothing cut at 80 columns, one line per
command in the list, python -m fakes's port errors and options in words, connection-string
errors without a Python exception's name."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

import pytest
import typer.main
from typer.testing import CliRunner

from fakes.__main__ import main as fakes_main
from sbmgmt.cli import ExitCode, app


def _command_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]

    def walk(command: object, path: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            paths.append([*path, name])
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "sbmgmt")
def test_help_at_80_columns_cuts_nothing(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.stdout
    assert max(map(len, result.stdout.splitlines())) <= 80


def test_the_env_vars_are_named_whole() -> None:
    text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    assert "SERVICEBUS_CONNECTION_STRING]" in text and "SERVICEBUS_NAMESPACE]" in text


def test_each_command_is_one_sentence_in_the_list() -> None:
    root = typer.main.get_command(app)
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        first = (command.help or "").strip().split("\n\n")[0]
        assert "\n" not in first, f"{name}: the list would show a line break: {first!r}"


@pytest.mark.parametrize("args", [("-c", "nonsense"),
                                  ("-c", "Endpoint=sb://x;SharedAccessKeyName=a")])
def test_a_connection_string_that_does_not_parse_is_a_usage_error(args: tuple[str, str]) -> None:
    result = CliRunner().invoke(app, [*args, "peek", "q"])
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert result.stderr.startswith("error: the connection string (--connection-string or "
                                    "SERVICEBUS_CONNECTION_STRING) cannot be used: ")
    assert "ValueError" not in result.stderr


def test_the_timeout_says_its_floor_in_words() -> None:
    result = CliRunner().invoke(app, ["--timeout", "0.01", "peek", "q"])
    assert result.exit_code == 2
    assert "0.01 is less than 0.1 seconds" in result.stderr


@pytest.fixture
def fakes_command(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                  ) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``python -m fakes ARGS`` answered in this process, for arguments its parser answers
    (exits) before any server starts: the exit code, stdout and stderr, formatted at the
    80 columns a process writing to a pipe gets."""
    monkeypatch.setenv("COLUMNS", "80")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        with pytest.raises(SystemExit) as exited:
            fakes_main(list(args))
        out, err = capsys.readouterr()
        code = exited.value.code
        return subprocess.CompletedProcess(["python", "-m", "fakes", *args],
                                           code if isinstance(code, int) else 1, out, err)

    return run


@pytest.mark.parametrize("value", ["abc", "70000", "-1"])
def test_python_m_fakes_says_a_port_is_not_one(
        value: str, fakes_command: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    done = fakes_command("--port", value)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        f"python -m fakes: error: argument --port: {value!r} is not a port number "
        "(0 to 65535; 0 picks a free port)")


def test_every_option_of_python_m_fakes_has_help(
        fakes_command: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    lines = fakes_command("--help").stdout.splitlines()
    bare = []
    for at, line in enumerate(lines):
        option = re.match(r"^  (--[\w-]+)(?: [A-Z_]+)?(?P<rest>.*)$", line)
        if option is None:
            continue
        follows = lines[at + 1] if at + 1 < len(lines) else ""
        if not option.group("rest").strip() and not re.match(r"^ {20,}\S", follows):
            bare.append(option.group(1))
    assert len([line for line in lines if line.startswith("  --")]) >= 10
    assert bare == []
