"""`sbmgmt entities` against `python -m fakes --port 0 --http-port 0` (issue 40): the error
says which HTTP port was tried and how to give another, and the fake says which to give."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sbmgmt.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _without_emulator_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("CONFIG_PATH", "EMULATOR_AMQP_PORT", "EMULATOR_HTTP_PORT")}


@pytest.fixture
def served() -> Iterator[tuple[str, str, str]]:
    """A ``python -m fakes --port 0 --http-port 0`` process: its connection string, its HTTP
    base URL and the line it wrote on stderr."""
    process = subprocess.Popen([sys.executable, "-m", "fakes", "--port", "0", "--http-port", "0"],
                               cwd=ROOT, env=_without_emulator_settings(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    try:
        connection_string = process.stdout.readline().strip()
        http = process.stdout.readline().strip()
        said = process.stderr.readline().strip()
        yield connection_string, http, said
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def _entities(connection_string: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["-c", connection_string, "--timeout", "5", "entities",
                                      *args], env={"EMULATOR_HTTP_PORT": ""})
    return result.exit_code, result.stdout, result.stderr


def test_the_fake_on_a_free_port_says_how_to_give_its_http_port(
        served: tuple[str, str, str]) -> None:
    _, http, said = served
    port = http.rsplit(":", 1)[1]
    assert said == (f"the HTTP port is {port}, not the emulator's 5300: give it to sbmgmt as "
                    f"`sbmgmt entities --http-port {port}` or EMULATOR_HTTP_PORT={port}")


@pytest.mark.parametrize("args", [(), ("--dead-lettered", "--sort", "dead-letter")])
def test_the_refused_default_port_is_named_with_the_way_to_give_another(
        served: tuple[str, str, str], args: tuple[str, ...]) -> None:
    connection_string, http, _ = served
    if http.endswith(":5300"):
        pytest.skip("the system gave the fake the emulator's own port")
    code, out, err = _entities(connection_string, *args)
    assert (code, out) == (7, "")
    assert err.startswith("error: the administration API did not answer")
    assert err.rstrip().endswith(
        "(the HTTP port tried was the default 5300, the emulator's: give the administration "
        "API's port with --http-port N or EMULATOR_HTTP_PORT=N; `python -m fakes` prints it "
        "in its second line, http://localhost:N)")


def test_the_printed_port_works(served: tuple[str, str, str]) -> None:
    connection_string, http, _ = served
    code, out, err = _entities(connection_string, "--http-port", http.rsplit(":", 1)[1],
                               "--dead-lettered", "--sort", "dead-letter")
    assert code == 0, err
    assert out == "no entities\n"
