"""Purge by number (sbmgmt/actions/purge_found.py): what a search found is removed, exactly
those messages (counted by MessageId and body), whatever their state; the others stay,
their delivery counts unchanged. The service's part is tested with the official SDK as a
peer: messages sent, deferred and scheduled by it, and its own refusal to receive an
active message by number (why active messages are received instead)."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.contract import CancelToken, Outcome, Progress
from sbmgmt.actions.purge_found import plan_purge_found, purge_found
from sbmgmt.actions.search import Conditions, search
from sbmgmt.cli import ExitCode, app
from sbmgmt.message import ReceivedMessage
from tests._peers import missing_peer

LATER = datetime.now(timezone.utc) + timedelta(days=30)
COUNT = 40  # active messages; every fourth one "failed"


def _sdk() -> Any:
    try:
        import azure.servicebus as servicebus
    except ImportError:
        missing_peer("azure-servicebus is not installed: pip install -e '.[test]'")
    return servicebus


def _body(n: int) -> str:
    return f'{{"order": {n}, "status": "{"failed" if n % 4 == 1 else "ok"}"}}'


def _seed(sdk: Any, fake: FakeNamespace) -> None:
    message = sdk.ServiceBusMessage
    with sdk.ServiceBusClient.from_connection_string(fake.connection_string,
                                                     retry_total=0) as client:
        with client.get_queue_sender("orders") as sender:
            sender.send_messages([message(_body(n), message_id=f"m{n}") for n in range(COUNT)])
            sender.schedule_messages([message(_body(101), message_id="scheduled-failed"),
                                      message(_body(102), message_id="scheduled-ok")], LATER)
            sender.send_messages([message(_body(201), message_id="deferred-failed")])
        with client.get_queue_receiver("orders") as receiver:
            deferred: list[Any] = []
            while not deferred:
                deferred = [m for m in receiver.receive_messages(COUNT + 1, max_wait_time=5)
                            if m.message_id == "deferred-failed" or receiver.abandon_message(m)]
            receiver.defer_message(deferred[0])


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    sdk = _sdk()
    with FakeNamespace() as namespace:
        namespace.add_queue("orders")
        _seed(sdk, namespace)
        yield namespace


def _contents(client: ManagementClient) -> dict[str, tuple[bytes, int]]:
    """Every message of the queue, any state: MessageId -> (body, delivery count)."""
    kept: dict[str, tuple[bytes, int]] = {}
    for message in client.entity("orders").peek_all():
        assert str(message.message_id) not in kept, "a message twice"
        kept[str(message.message_id)] = (message.body_bytes(), message.delivery_count or 0)
    return kept


def test_the_service_receives_no_active_message_by_number(fake: FakeNamespace) -> None:
    sdk = _sdk()
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        number = next(m.sequence_number for m in client.entity("orders").peek_all()
                      if m.message_id == "m1")
    with sdk.ServiceBusClient.from_connection_string(fake.connection_string,
                                                     retry_total=0) as peer, \
            peer.get_queue_receiver("orders") as receiver, \
            pytest.raises(sdk.exceptions.ServiceBusError):
        receiver.receive_deferred_messages([number])


def test_what_find_found_is_removed_exactly(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        before = _contents(client)
        found = list(search(client, "orders", Conditions(body='"status": "failed"')))
        named = {str(f.message.message_id) for f in found}
        assert named == {f"m{n}" for n in range(COUNT) if n % 4 == 1} | {
            "scheduled-failed", "deferred-failed"}
        plan = plan_purge_found(client, "orders", found)
        assert (len(plan.active), len(plan.deferred), len(plan.scheduled)) == (10, 1, 1)
        assert plan.describe().startswith("remove 12 messages from orders (10 active, "
                                          "1 deferred, 1 scheduled)")
        told: list[Progress] = []
        report = purge_found(client, plan, on_progress=told.append)
        after = _contents(client)
    assert report.outcome is Outcome.FINISHED
    assert sorted(report.removed) == sorted(f.message.sequence_number or 0 for f in found)
    assert report.counts()["removed"] == 12 and not report.failed and not report.not_found
    assert told[-1].done == told[-1].total == 12
    # exactly those gone, by MessageId and body; the others as they were
    assert after == {key: kept for key, kept in before.items() if key not in named}


def test_a_number_now_holding_another_message_is_not_taken(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        messages: list[ReceivedMessage] = [m for m in client.entity("orders").peek_all()
                                           if m.message_id in ("m1", "m5")]
        wrong = {messages[0].sequence_number or 0: "someone-else",
                 messages[1].sequence_number or 0: messages[1].message_id}
        plan = plan_purge_found(client, "orders", wrong)
        report = purge_found(client, plan)
        left = collections.Counter(str(m.message_id) for m in client.entity("orders").peek_all())
    assert report.not_found == [messages[0].sequence_number]
    assert report.removed == [messages[1].sequence_number]
    assert left["m1"] == 1 and left["m5"] == 0


def test_cancelled_before_it_starts_nothing_is_removed(fake: FakeNamespace) -> None:
    cancel = CancelToken()
    cancel.cancel()
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        before = _contents(client)
        plan = plan_purge_found(client, "orders", search(client, "orders",
                                                         Conditions(body="failed")))
        report = purge_found(client, plan, cancel=cancel)
        assert _contents(client) == before
    assert report.outcome is Outcome.CANCELLED and not report.removed
    assert len(report.not_attempted) == plan.count == 12


def _cli(fake: FakeNamespace, *args: str, input: str | None = None,
         output: str = "table") -> Result:
    return CliRunner().invoke(app, ["-c", fake.connection_string, "--timeout", "10", "-o",
                                    output, *args], input=input)


def test_the_cli_checks_says_asks_and_removes_what_find_wrote(fake: FakeNamespace) -> None:
    found = _cli(fake, "find", "orders", "--body", '"status": "failed"', output="ndjson")
    assert found.exit_code == 0, found.stderr
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        before = _contents(client)
    dry = _cli(fake, "purge-found", "orders", "-", "--dry-run", input=found.stdout)
    assert dry.exit_code == 0, dry.stderr
    assert dry.stdout.startswith("would remove 12 messages from orders (10 active, 1 deferred, "
                                 "1 scheduled)")
    refused = _cli(fake, "purge-found", "orders", "-", input=found.stdout)
    assert refused.exit_code == int(ExitCode.NOT_CONFIRMED), refused.stdout
    assert "pass --yes" in refused.stderr
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        assert _contents(client) == before  # refused: nothing changed
    done = _cli(fake, "purge-found", "orders", "-", "--yes", input=found.stdout,
                output="json")
    assert done.exit_code == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["outcome"] == "finished" and record["counts"]["removed"] == 12
    gone = {json.loads(line)["properties"]["message_id"] for line in found.stdout.splitlines()}
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        assert _contents(client) == {k: v for k, v in before.items() if k not in gone}


def test_the_cli_refuses_lines_that_name_no_message(fake: FakeNamespace) -> None:
    bad = _cli(fake, "purge-found", "orders", "-", "--yes", input='{"body": 1}\n')
    assert bad.exit_code == int(ExitCode.BAD_ARGUMENTS)
    assert "line 1" in bad.stderr and "Traceback" not in bad.stderr
