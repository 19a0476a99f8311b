"""``sbmgmt send``: the body from the argument, a file or stdin, typed application
properties, a session, a content type, message ids, ``--count`` copies; checked by the
official SDK receiving them from the fake (the messages as any consumer gets them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient

from fakes import FakeNamespace
from sbmgmt.cli import ExitCode

from .conftest import Cli

WAIT = 5


def _received(fake: FakeNamespace, queue: str, count: int, session: str | None = None,
              ) -> list[Any]:
    """``count`` messages of ``queue`` received and completed by azure-servicebus."""
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as sdk, \
            sdk.get_queue_receiver(queue, session_id=session, max_wait_time=WAIT) as receiver:
        got: list[Any] = []
        while len(got) < count:
            batch = receiver.receive_messages(count - len(got), max_wait_time=WAIT)
            assert batch, f"only {len(got)} of {count} messages came"
            for message in batch:
                receiver.complete_message(message)
            got += batch
        assert receiver.receive_messages(1, max_wait_time=0.5) == []  # no more than asked
        return got


def test_count_copies_with_typed_properties_reach_the_sdk(cli: Cli, fake: FakeNamespace) -> None:
    records = cli.json("send", "q", '{"order": 7}', "--count", "5", "-p", "region=eu",
                       "-p", "amount=12.5", "-p", "n=3", "--set", "urgent=true",
                       "--content-type", "application/json", "--subject", "order",
                       "--message-id", "order-7", "--batch-size", "2")
    assert [r["message_id"] for r in records] == [f"order-7-{n}" for n in range(1, 6)]
    assert {(r["entity"], r["session_id"], r["bytes"]) for r in records} == {("q", None, 12)}
    got = _received(fake, "q", 5)
    assert sorted(str(m.message_id) for m in got) == [f"order-7-{n}" for n in range(1, 6)]
    for message in got:
        assert b"".join(message.body) == b'{"order": 7}'
        assert (message.content_type, message.subject) == ("application/json", "order")
        # (azure-servicebus's pyamqp gives the keys and string values as UTF-8 bytes)
        assert message.application_properties == {
            b"region": b"eu", b"amount": 12.5, b"n": 3, b"urgent": True}


def test_a_session_message_and_a_new_uuid_each(cli: Cli, fake: FakeNamespace) -> None:
    records = cli.json("send", "sq", "turn 1", "--session", "user-42", "--count", "2")
    ids = [r["message_id"] for r in records]
    assert len(set(ids)) == 2 and all(len(i) == 36 for i in ids)
    got = _received(fake, "sq", 2, session="user-42")
    assert sorted(str(m.message_id) for m in got) == sorted(ids)
    assert {m.session_id for m in got} == {"user-42"}


def test_the_body_from_a_file_and_from_stdin(cli: Cli, fake: FakeNamespace,
                                             tmp_path: Path) -> None:
    data = bytes(range(256))
    (tmp_path / "body.bin").write_bytes(data)
    assert cli.run("send", "q", "--file", str(tmp_path / "body.bin"),
                   output="table").stdout.startswith("sent 1 message ")
    cli.json("send", "q", input="from stdin")
    bodies = [b"".join(m.body) for m in _received(fake, "q", 2)]
    assert sorted(bodies) == sorted([data, b"from stdin"])


@pytest.mark.parametrize(("args", "said"), [
    (("q", "x", "--file", "body.bin"), "give the body as BODY or --file, not both"),
    (("q", "--file", "."), "is a folder, not a file"),
    (("q", "--file", "missing.bin"), "missing.bin: no such file or folder"),
    (("q", "x", "-p", "novalue"), "--set takes KEY=VALUE"),
])
def test_bad_input_is_said_and_nothing_is_sent(cli: Cli, fake: FakeNamespace, args: tuple[str, ...],
                                               said: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "body.bin").write_bytes(b"x")
    result = cli.run("send", *args)
    assert result.exit_code == ExitCode.BAD_ARGUMENTS, result.output
    assert said in result.stderr and "Error:" not in result.stderr
    assert fake.accounting("q")["active"] == 0
