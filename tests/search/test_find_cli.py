"""``sbmgmt find``: without a terminal (in process, typer's runner) and with one (a child
process on pseudo-terminals): what is printed, where the count and the progress go, the
export lines it writes, what ``import`` makes of them, and its refusals."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from fakes import FakeNamespace
from sbmgmt.cli import ExitCode, app
from sbmgmt.message import Message
from tests.cli.test_subprocess import LIMIT, ROOT, environment, interrupted_once_under_way
from tests.cli.test_terminal import Terminal

ORDERS = 600  # more than two peek pages
PEEK = "com.microsoft:peek-message"


def _order(n: int) -> Message:
    status = "failed" if n % 100 == 7 else "ok"
    return Message(body=json.dumps({"order": {"id": n, "status": status}}).encode(),
                   message_id=f"order-{n}", subject="order",
                   application_properties={"region": "eu" if n % 2 else "us", "n": n})


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders")
        namespace.add_queue("other")
        namespace.add_topic("t")
        namespace.add_subscription("t", "s")
        namespace.send("orders", *(_order(n) for n in range(ORDERS)))
        namespace.send("other", Message(body=b"a failed thing", message_id="other-1"))
        namespace.send("t", Message(body=b"<order><status>failed</status></order>",
                                    message_id="sub-1"))
        yield namespace


def _run(fake: FakeNamespace, *args: str, output: str = "ndjson",
         input: str | None = None) -> Result:
    return CliRunner().invoke(app, ["-c", fake.connection_string, "--timeout", "10",
                                    "-o", output, *args], input=input)


def _lines(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return [json.loads(line) for line in result.stdout.splitlines()]


FAILED_IDS = [f"order-{n}" for n in range(ORDERS) if n % 100 == 7]


def test_ndjson_is_the_export_format_and_the_count_goes_to_stderr(fake: FakeNamespace) -> None:
    result = _run(fake, "find", "orders", "--path", "$.order.status == 'failed'")
    lines = _lines(result)
    assert [line["properties"]["message_id"] for line in lines] == FAILED_IDS
    assert [line["broker"]["sequence_number"] for line in lines] == \
        [n + 1 for n in range(ORDERS) if n % 100 == 7]
    assert all(line["version"] == 1 and line["broker"]["state"] == "active" for line in lines)
    assert result.stderr.strip() == f"found 6 messages in orders ({ORDERS} read)"


def test_import_reads_what_find_wrote(fake: FakeNamespace) -> None:
    found = _run(fake, "find", "orders", "--body", '"status": "failed"', "--max", "2")
    assert len(_lines(found)) == 2
    with FakeNamespace() as elsewhere:
        elsewhere.add_queue("copies")
        imported = _run(elsewhere, "import", "-", "copies", "--yes", input=found.stdout,
                        output="json")
        assert imported.exit_code == 0, imported.stderr
        copies = _lines(_run(elsewhere, "find", "copies", "--body", "failed"))
    assert [line["properties"]["message_id"] for line in copies] == FAILED_IDS[:2]


def test_a_table_with_its_count_at_the_end(fake: FakeNamespace) -> None:
    result = _run(fake, "find", "orders", "--where", "region = 'eu' AND n < 6",
                  output="table")
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.splitlines()
    assert rows[-1] == f"found 3 messages in orders ({ORDERS} read)"
    assert all(f"order-{n}" in result.stdout for n in (1, 3, 5))
    assert "order-2" not in result.stdout


def test_json_lists_the_records(fake: FakeNamespace) -> None:
    result = _run(fake, "find", "orders", "--from", "10", "--to", "12", output="json")
    assert result.exit_code == 0, result.stderr
    assert [r["sequence_number"] for r in json.loads(result.stdout)] == [10, 11, 12]
    assert result.stderr.strip() == "found 3 messages in orders (3 read)"


def test_nothing_found(fake: FakeNamespace) -> None:
    result = _run(fake, "find", "orders", "--body", "no such text", output="table")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["no messages found",
                                          f"found 0 messages in orders ({ORDERS} read)"]


def test_every_entity_of_the_namespace(fake: FakeNamespace) -> None:
    assert fake.http_port is not None
    result = _run(fake, "find", "--all", "--body", "failed", "--http-port",
                  str(fake.http_port), output="json")
    assert result.exit_code == 0, result.stderr
    found = sorted((r["entity"], r["message_id"]) for r in json.loads(result.stdout))
    assert found == sorted([("orders", i) for i in FAILED_IDS] + [("other", "other-1"),
                                                                   ("t/Subscriptions/s", "sub-1")])
    assert result.stderr.strip() == f"found 8 messages in 3 entities of the namespace " \
        f"({ORDERS + 2} read)"


@pytest.mark.parametrize(("args", "said"), [
    (["orders", "--where", "region == 'eu'"], "--where: SQL syntax error at line 1, column 9"),
    (["orders", "--body-regex", "(x"], "--body-regex: not a regular expression"),
    (["orders", "--path", "$.order[?"], "--path: not a JSONPath query"),
    (["orders", "--from", "yesterday"], "--from: a sequence number, or invalid time"),
    (["orders", "--from", "9", "--to", "3"], "--from/--to: the range 9..3 is empty"),
    (["orders", "--state", "locked"], "Invalid value for '--state'"),
    ([], "give an ENTITY, or --all"),
    (["orders", "--all"], "give an ENTITY, or --all"),
])
def test_bad_conditions_are_refused_in_the_users_words(fake: FakeNamespace, args: list[str],
                                                       said: str) -> None:
    result = _run(fake, "find", *args)
    assert result.exit_code == 2, result.stdout
    assert said in result.stderr
    assert "Error:" not in result.stderr.replace("Error: Invalid value", "")
    assert "Traceback" not in result.stderr


def _child(args: list[str], conn: str, stdout: int | Any, stderr: int | Any) -> int:
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": conn, "TERM": "xterm",
                           "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    return subprocess.run([sys.executable, "-m", "sbmgmt.cli", *args],
                          stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                          cwd=ROOT, timeout=LIMIT, check=False).returncode


def test_on_a_terminal_the_progress_goes_to_stderr(fake: FakeNamespace,
                                                   tmp_path: Path) -> None:
    stderr = Terminal.open()
    with (tmp_path / "found.ndjson").open("wb") as out:
        code = _child(["-o", "ndjson", "find", "orders", "--body", '"failed"'],
                      fake.connection_string, out, stderr.slave)
    shown = stderr.text()
    assert code == 0, shown
    lines = (tmp_path / "found.ndjson").read_text().splitlines()
    assert [json.loads(line)["properties"]["message_id"] for line in lines] == FAILED_IDS
    assert "searching" in shown and f"found 6 messages in orders ({ORDERS} read)" in shown


def test_a_table_on_a_terminal(fake: FakeNamespace) -> None:
    stdout, stderr = Terminal.open(), Terminal.open()
    code = _child(["find", "orders", "--where", "n = 107"], fake.connection_string,
                  stdout.slave, stderr.slave)
    shown, progress = stdout.text(), stderr.text()
    assert code == 0, progress
    assert "order-107" in shown and f"found 1 message in orders ({ORDERS} read)" in shown
    assert "order-107" not in progress


def test_ctrl_c_prints_what_was_found_and_exits_130(fake: FakeNamespace,
                                                    tmp_path: Path) -> None:
    """SIGINT while the first page is on its way: the search stops at its next message,
    the lines found so far are whole export lines, the count says so, exit code 130."""
    env = environment() | {"SERVICEBUS_CONNECTION_STRING": fake.connection_string}
    slowed = fake.faults.latency(1.0, entity="orders", operation=PEEK)
    peeks = fake.applied("orders", PEEK)
    try:
        with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "sbmgmt.cli", "-o", "ndjson", "find", "orders",
                 "--body", "order"], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env=env, cwd=ROOT)
            code = interrupted_once_under_way(
                process, lambda: fake.applied("orders", PEEK) > peeks)
    finally:
        slowed.remove()
    said = (tmp_path / "err").read_text()
    lines = (tmp_path / "out").read_text().splitlines()
    assert code == int(ExitCode.INTERRUPTED), said
    numbers = [json.loads(line)["broker"]["sequence_number"] for line in lines]
    assert numbers == sorted(numbers) and len(numbers) < ORDERS
    counted = re.search(r"found (\d+) messages? in orders \((\d+) read\) \(cancelled", said)
    assert counted is not None, said
    assert int(counted[1]) == len(lines) and "Traceback" not in said
