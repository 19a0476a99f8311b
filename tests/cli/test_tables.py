"""Tables as people read them: at 80 columns (every pipe, most terminals) a value to copy
into the next command is whole, times are readable, and each table has the columns its
command is for."""

from __future__ import annotations

import io
import re
import uuid

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from fakes import FakeNamespace
from sbmgmt.cli import app
from sbmgmt.cli._render import LOCKED_COLUMNS, MESSAGE_COLUMNS, table
from sbmgmt.message import Message

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
LONG_BODY = "an order body long enough to wrap in a narrow column"  # < the preview


def table_at_80(fake: FakeNamespace, *args: str, width: int = 80) -> Result:
    """``sbmgmt ARGS`` with table output, as printed to a pipe (80 columns, or ``width``)."""
    result = CliRunner().invoke(app, ["-c", fake.connection_string, *args],
                                env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert max(map(len, result.stdout.splitlines())) <= width
    return result


@pytest.fixture
def orders(fake: FakeNamespace) -> FakeNamespace:
    fake.add_queue("orders")
    fake.send("orders", *(Message(body=f"{i} {LONG_BODY}".encode(), subject="new-order",
                                  message_id=str(uuid.uuid4())) for i in range(3)))
    return fake


def test_deferred_receive_shows_whole_lock_tokens_that_settle(orders: FakeNamespace) -> None:
    tokens = [str(m.lock_token) for m in orders.receive_and_lock("orders", 2)]
    table_at_80(orders, "deferred", "settle", "orders", *tokens, "--status", "deferred")
    shown = table_at_80(orders, "deferred", "receive", "orders", "1", "2").stdout
    assert "lock token" in shown and "locked until (UTC)" in shown
    new_tokens = UUID.findall(shown)
    assert len(new_tokens) == 2 and set(new_tokens).isdisjoint(tokens)
    assert len(TIME.findall(shown)) == 2  # each lock's expiry, readable
    assert "…" not in shown
    # what the table showed is what the next command needs
    settled = table_at_80(orders, "deferred", "settle", "orders", *new_tokens,
                          "--status", "completed").stdout
    assert settled == "completed 2 messages of orders\n"


def test_peek_has_whole_ids_whole_times_and_no_lock_token_column(
        orders: FakeNamespace) -> None:
    shown = table_at_80(orders, "peek", "orders").stdout
    assert "lock token" not in shown  # a peeked message holds no lock
    assert "session" not in shown  # no message has one
    assert len(UUID.findall(shown)) == 3  # each id on one line, to copy (issue 59)
    assert "…" not in shown
    assert "new-order" in shown
    assert all(re.search(rf"\b{word}\b", shown) for word in LONG_BODY.split())  # whole words
    wider = table_at_80(orders, "peek", "orders", width=100).stdout
    assert len(TIME.findall(wider)) == 3 and len(UUID.findall(wider)) == 3


def test_peek_dead_letter_has_the_message_id_from_100_columns(orders: FakeNamespace) -> None:
    """docs/cli.md: the reason and description replace state, session and subject; the
    message id stays (issue 59: it was missing even at 130 columns)."""
    locked = orders.receive_and_lock("orders", 3)
    ids, tokens = [str(m.message_id) for m in locked], [str(m.lock_token) for m in locked]
    table_at_80(orders, "deferred", "settle", "orders", *tokens, "--status", "dead-letter",
                "--reason", "MaxDeliveryCountExceeded", "--description", "too many tries")
    for width in (100, 130):
        shown = table_at_80(orders, "peek", "orders", "--dead-letter", width=width).stdout
        assert sorted(UUID.findall(shown)) == sorted(ids), shown
        assert shown.count("MaxDeliveryCountExceeded") == 3
    assert len(TIME.findall(shown)) == 3  # at 130, the time too
    narrow = table_at_80(orders, "peek", "orders", "--dead-letter").stdout
    assert narrow.count("MaxDeliveryCountExceeded") == 3 and "too many tries" in narrow


def test_peek_dead_letter_shows_reason_and_description(orders: FakeNamespace) -> None:
    (locked,) = orders.receive_and_lock("orders", 1)
    table_at_80(orders, "deferred", "settle", "orders", str(locked.lock_token),
                "--status", "dead-letter", "--reason", "expired", "--description", "too old")
    shown = table_at_80(orders, "peek", "orders", "--dead-letter").stdout
    header = shown.splitlines()[1]
    assert "reason" in header and "description" in header
    assert "lock token" not in shown
    row = next(line for line in shown.splitlines() if line.startswith("│ 1 "))
    assert "expired" in row and "too old" in row


def test_whole_columns_give_way_to_nothing_at_80_columns() -> None:
    token = str(uuid.uuid4())
    records = [{"sequence_number": 123456789, "lock_token": token,
                "locked_until": "2026-11-26T09:30:00.123Z", "body_text": LONG_BODY}]
    out = io.StringIO()
    Console(width=80, file=out, color_system=None).print(table(records, LOCKED_COLUMNS))
    text = out.getvalue()
    assert token in text and "123456789" in text and "2026-11-26 09:30:00" in text
    assert "…" not in text


def test_long_values_fold_instead_of_being_cut() -> None:
    message_id = "m" * 70
    records = [{"sequence_number": 1, "enqueued_time": "2026-11-26T09:30:00.000Z",
                "state": "scheduled", "message_id": message_id, "body_text": "x"}]
    out = io.StringIO()
    Console(width=80, file=out, color_system=None).print(table(records, MESSAGE_COLUMNS))
    text = out.getvalue()
    assert "…" not in text
    assert text.count("m") >= len(message_id)  # every character, over several lines
    assert "scheduled" in text
