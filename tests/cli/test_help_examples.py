"""Every example of every ``--help`` runs as written, against a fake namespace.

The help of each command is rendered at 80 columns (what a pipe and most terminals get);
each line ``Example: sbmgmt ...`` is one example. ``$TOKEN`` stands for a lock token that
an earlier command printed, as the help says: the test puts one there, as a shell would.
Each example runs on a fresh fake namespace holding the entities the examples name (or,
with ``--emulator``, on the embedded one it starts); ``fake serve`` runs in its own
process, with a ``Config.json`` in its working directory, until its first line.
"""

from __future__ import annotations

import json
import shlex
import string
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.cli import app
from sbmgmt.message import Message

from .test_subprocess import environment, fake_serve_once

PREFIX = "Example: sbmgmt "


def command_paths(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from command_paths(sub, (*path, name))


def help_text(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


HELP = {path: help_text(path) for path in command_paths(typer.main.get_command(app))}
EXAMPLES = [
    (path, line.strip()[len(PREFIX):])
    for path, text in HELP.items() for line in text.splitlines()
    if line.strip().startswith(PREFIX)
]


def test_every_command_has_an_example_that_fits_on_its_line() -> None:
    commands = {path for path, text in HELP.items() if "Commands" not in text}
    assert commands <= {path for path, _ in EXAMPLES}
    for text in HELP.values():
        lines = text.splitlines()
        for index, line in enumerate(lines):
            if line.strip().startswith(PREFIX):
                assert lines[index + 1].strip() == "", f"wrapped at 80 columns: {line!r}"


def namespace() -> tuple[FakeNamespace, str]:
    """The entities the examples name: orders (1..4; 3 and 4 deferred, 1 locked: its
    lock token is returned), events/Subscriptions/audit, the queue archive (a move's
    target, which must exist), and the session queue conversations (session user-42); its
    HTTP port (``entities``) is EMULATOR_HTTP_PORT."""
    fake = FakeNamespace(http_port=0).start()
    fake.add_queue("orders")
    fake.add_queue("archive")
    fake.add_topic("events")
    fake.add_subscription("events", "audit")
    fake.add_queue("conversations", requires_session=True)
    fake.send("orders", *(Message(body=f"order {i}".encode()) for i in range(1, 5)))
    fake.send("conversations", Message(body=b"hi", session_id="user-42"))
    locked = fake.receive_and_lock("orders", 4)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        client.entity("orders").update_disposition(
            [m.lock_token for m in locked[2:]], "defered")
        client.entity("orders").update_disposition([locked[1].lock_token], "abandoned")
    return fake, str(locked[0].lock_token)


def run_fake_serve(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "Config.json").write_text(json.dumps({"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns", "Queues": [{"Name": "orders", "Properties": {}}],
        "Topics": []}], "Logging": {"Type": "Console"}}}))
    assert args[:2] == ["fake", "serve"]
    line, stderr = fake_serve_once(*args[2:], cwd=tmp_path)
    assert line.startswith("Endpoint=sb://127.0.0.1:"), stderr


def run_explore(args: list[str]) -> None:
    """``sbmgmt explore`` serves until Ctrl-C: in its own process (its browser the ``true``
    command), until the address it prints answers with its token."""
    fake, _ = namespace()
    env = {**environment(), "SERVICEBUS_CONNECTION_STRING": fake.connection_string,
           "EMULATOR_HTTP_PORT": str(fake.http_port), "BROWSER": "true"}
    process = subprocess.Popen([sys.executable, "-m", "sbmgmt.cli", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("sbmgmt explorer of "), line
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(line.split(" at ", 1)[1].strip(), timeout=30) as page:
            assert page.status == 200 and b"Entities" in page.read()
    finally:
        process.terminate()
        process.communicate(timeout=30)
        fake.stop()


@pytest.mark.parametrize(("path", "example"), EXAMPLES,
                         ids=[example for _, example in EXAMPLES])
def test_help_example_runs_as_written(path: tuple[str, ...], example: str,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      ) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file (deferred export) writes here
    if example.startswith("fake serve"):
        run_fake_serve(shlex.split(example), tmp_path)
        return
    if path == ("explore",):
        run_explore(shlex.split(example))
        return
    fake, token = namespace()
    try:
        args = shlex.split(string.Template(example).substitute(TOKEN=token))
        env = {"SERVICEBUS_CONNECTION_STRING": fake.connection_string, "COLUMNS": "80",
               "EMULATOR_HTTP_PORT": str(fake.http_port)}
        if path in (("topology", "plan"), ("topology", "apply")):  # the file they read
            CliRunner().invoke(app, ["topology", "export", "Config.json"], env=env)
        result = CliRunner().invoke(app, args, env=env)
    finally:
        fake.stop()
    assert result.exit_code == 0, (example, result.output, result.exception)
    assert result.stderr == ""
