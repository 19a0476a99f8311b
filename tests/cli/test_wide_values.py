"""Tables at 80 columns with long values (issue 40): the demo's tables are the commands' own,
nothing is cut with "…", no word or header is broken across lines, bodies are text, every
time has its date, and `entities` shows the service's "never" as never."""

from __future__ import annotations

import io
import re
import uuid
from datetime import timedelta

from rich.console import Console
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt.cli import app
from sbmgmt.cli._demo import run_demo
from sbmgmt.cli._entities import ENTITY_COLUMNS, SortKey, entity_columns
from sbmgmt.cli._render import (
    DEAD_LETTER_COLUMNS,
    LOCKED_COLUMNS,
    MESSAGE_COLUMNS,
    RULE_COLUMNS,
    Column,
    Record,
    table,
)

TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


def at_80(records: list[Record], columns: tuple[Column, ...]) -> str:
    out = io.StringIO()
    Console(width=80, file=out, color_system=None).print(table(records, columns))
    text = out.getvalue()
    assert "…" not in text
    assert max(map(len, text.splitlines())) <= 80
    return text


def test_the_demo_at_80_columns() -> None:
    out = io.StringIO()
    run_demo(None, Console(width=80, file=out, color_system=None))
    text = out.getvalue()
    assert "…" not in text
    assert max(map(len, text.splitlines())) <= 80
    assert "b'" not in text and "True" not in text and "None" not in text
    assert "│ order #1 " in text  # bodies as text
    held = [line for line in text.splitlines() if " held until " in line]
    assert len(held) == 4 and all(re.search(f"held until {TIME} UTC$", line) for line in held)
    assert re.search(f"session lock renewed until {TIME} UTC", text)
    assert "cancelled 2; 4 messages left to peek, none of them scheduled" in text
    for header in ("message id", "dead-letter", "scheduled", "subscription"):
        assert header in text
    assert "events/Subscriptions/audit" in text  # at 80 columns a name like it is whole


def test_whole_columns_keep_their_headers_and_words() -> None:
    records = [{"kind": "subscription", "name": "events/Subscriptions/audit",
                "active": 1234567, "dead_letter": 7654321, "scheduled": 99999,
                "total": 123456789, "size_in_bytes": 987654321}]
    text = at_80(records, entity_columns(80))
    for word in ("subscription", "dead-letter", "scheduled", "1234567", "7654321", "99999"):
        assert word in text
    assert "events/Subscriptions/audit" in at_80([{**records[0], "active": 1,
                                                   "dead_letter": 0, "scheduled": 0}],
                                                 entity_columns(80))
    assert "total" not in text and "bytes" not in text  # wide terminals only
    assert "987654321" in at_80(records, entity_columns(80, sort=SortKey.SIZE))
    assert entity_columns(120) == ENTITY_COLUMNS




def test_long_values_in_every_message_table() -> None:
    token = str(uuid.uuid4())
    record = {"sequence_number": 9_223_372_036_854_775_807, "lock_token": token,
              "enqueued_time": "2026-11-26T09:30:00.000Z",
              "locked_until": "2026-11-26T09:31:00.000Z", "state": "scheduled",
              "message_id": "m" * 90, "session_id": "s" * 40, "subject": "a-long-subject",
              "dead_letter_reason": "MaxDeliveryCountExceeded",
              "dead_letter_description": "delivered too many times " * 3,
              "body_text": "x" * 59}
    for columns in (MESSAGE_COLUMNS, DEAD_LETTER_COLUMNS, LOCKED_COLUMNS):
        text = at_80([record], columns)
        assert "9223372036854775807" in text and "2026-11-26 09:3" in text
        assert text.count("m") >= 90 or columns is not MESSAGE_COLUMNS
    assert token in at_80([record], LOCKED_COLUMNS)
    rows = [line.split("│") for line in at_80([record], DEAD_LETTER_COLUMNS).splitlines()
            if line.startswith("│")]
    reason = "".join(cells[4].strip() for cells in rows)  # seq, enqueued, message id, reason
    assert reason == "MaxDeliveryCountExceeded"  # folded onto lines, not cut


def test_rules_at_80_columns() -> None:
    rule = {"name": "a-rule-with-a-long-name", "action": "SET priority = 'high'",
            "filter": {"type": "sql", "expression": "amount > 100 AND region = 'eu'" * 2},
            "created_at": "2026-11-26T09:30:00.000Z"}
    text = at_80([rule], RULE_COLUMNS)
    assert "a-rule-with-a-long-name" in text and "2026-11-26 09:30:00" in text


def test_entity_properties_say_never_and_show_times_as_every_table() -> None:
    with FakeNamespace(http_port=0) as fake:
        fake.add_queue("orders", default_ttl=timedelta(minutes=5))
        assert fake.http_port is not None
        result = CliRunner().invoke(app, ["-c", fake.connection_string, "entities",
                                          "--http-port", str(fake.http_port), "orders"],
                                    env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    rows = {cells[1].strip(): cells[2].strip() for cells in
            (line.split("│") for line in result.stdout.splitlines()) if len(cells) == 4}
    assert rows["auto_delete_on_idle"] == "never"
    assert rows["default_message_time_to_live"] == "300 s"
    assert re.fullmatch(f"{TIME} UTC", rows["created_at_utc"])
    assert max(map(len, result.stdout.splitlines())) <= 80
