"""Rows from peeked messages: every column of the documented schema."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from proton import timestamp

from sbmgmt.message import MessageState, ReceivedMessage
from sbmgmt.spark import READ_SCHEMA, render_property
from sbmgmt.spark._schema import row_from_message

COLUMNS = [
    "sequence_number", "message_id", "enqueued_time", "scheduled_enqueue_time", "state",
    "session_id", "partition_key", "subject", "content_type", "correlation_id", "to",
    "reply_to", "delivery_count", "time_to_live", "dead_letter_reason",
    "dead_letter_description", "dead_letter_source", "application_properties", "body",
]


def test_schema_columns_are_stable() -> None:
    assert READ_SCHEMA.fieldNames() == COLUMNS
    assert READ_SCHEMA["application_properties"].dataType.simpleString() == "map<string,string>"
    assert READ_SCHEMA["body"].dataType.simpleString() == "binary"


def test_row_from_a_dead_lettered_message_survives_the_wire() -> None:
    enqueued = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    message = ReceivedMessage(
        body=b"\x00payload", message_id="m-1", session_id="s", partition_key="s",
        subject="order", content_type="application/json", correlation_id="c", to="dest",
        reply_to="back", time_to_live=timedelta(seconds=90), delivery_count=3,
        application_properties={"n": 5, "ok": True, "when": timestamp(0), "blob": b"\x01",
                                "id": uuid.UUID(int=1), "none": None},
        sequence_number=42, enqueued_time=enqueued, state=MessageState.DEFERRED,
        dead_letter_reason="MaxDeliveryCountExceeded", dead_letter_description="too many",
        dead_letter_source="q",
    )
    row = dict(zip(COLUMNS, row_from_message(ReceivedMessage.from_bytes(message.to_bytes())),
                   strict=True))
    assert row == {
        "sequence_number": 42, "message_id": "m-1", "enqueued_time": enqueued,
        "scheduled_enqueue_time": None, "state": "deferred", "session_id": "s",
        "partition_key": "s", "subject": "order", "content_type": "application/json",
        "correlation_id": "c", "to": "dest", "reply_to": "back", "delivery_count": 3,
        "time_to_live": 90_000, "dead_letter_reason": "MaxDeliveryCountExceeded",
        "dead_letter_description": "too many", "dead_letter_source": "q",
        "application_properties": {
            "n": "5", "ok": "true", "when": "1970-01-01T00:00:00+00:00", "blob": "AQ==",
            "id": "00000000-0000-0000-0000-000000000001", "none": None,
            "DeadLetterReason": "MaxDeliveryCountExceeded",
            "DeadLetterErrorDescription": "too many"},
        "body": b"\x00payload",
    }


def test_render_property_other_values() -> None:
    assert render_property("x") == "x"
    assert render_property(False) == "false"
    assert render_property(1.5) == "1.5"
    assert render_property(timedelta(seconds=2)) == "2000"
    assert render_property([1, "a"]) == "[1, 'a']"
