"""The examples run against the fake: dead-letter triage and replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient

from .conftest import fill, load_example

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

REASONS = {"MaxDeliveryCountExceeded": 6, "BadPayload": 3, "Expired": 1}


@pytest.fixture
def dead_lettered(namespace: FakeNamespace) -> FakeNamespace:
    """``q`` with 10 dead-lettered messages (reasons as in REASONS) and 5 active ones."""
    fill(namespace, "q", 15)
    locked = namespace.receive_and_lock("q", 10)
    with ManagementClient.from_connection_string(namespace.connection_string) as client:
        offset = 0
        for reason, count in REASONS.items():
            tokens = [m.lock_token for m in locked[offset:offset + count]]
            client.entity("q").update_disposition(tokens, "suspended", dead_letter_reason=reason)
            offset += count
    return namespace


def test_dead_letter_triage(spark: Any, dead_lettered: FakeNamespace, tmp_path: Path) -> None:
    counts = load_example("dead_letter_triage").triage(
        spark, dead_lettered.connection_string, "q", tmp_path)
    assert [(r.dead_letter_reason, r.messages) for r in counts] == list(REASONS.items())
    assert spark.read.parquet(str(tmp_path / "messages.parquet")).count() == 10
    assert sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "by_reason.parquet"))
                  .collect()) == sorted(REASONS.items())
    assert (tmp_path / "by_reason.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_schedules_selected_dead_letters_on_the_source(
    spark: Any, dead_lettered: FakeNamespace
) -> None:
    replayed = load_example("replay_dead_letters").replay(
        spark, dead_lettered.connection_string, "q",
        "dead_letter_reason = 'MaxDeliveryCountExceeded'")
    assert replayed == 6
    with ManagementClient.from_connection_string(dead_lettered.connection_string) as client:
        queue = client.entity("q").peek_messages(0, 100)
        dead = client.entity("q/$DeadLetterQueue").peek_messages(0, 100)
    copies = [m for m in queue if "replayed-from-message-id" in m.application_properties]
    originals = {m.message_id: m for m in dead
                 if m.dead_letter_reason == "MaxDeliveryCountExceeded"}
    assert sorted(m.application_properties["replayed-from-message-id"] for m in copies) == \
        sorted(originals)
    for copy in copies:
        original = originals[copy.application_properties["replayed-from-message-id"]]
        assert copy.body_bytes() == original.body_bytes()
        assert copy.subject == original.subject
        assert copy.message_id != original.message_id
    assert len(queue) == 5 + 6
