"""The reader's schema, one row per peeked message, and how a message becomes a row.

The schema is part of the API: columns are only ever added at the end.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from proton import timestamp
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .._messages.number_text import number_text
from ..amqp.values import datetime_from_ms
from ..message import ReceivedMessage, id_text

__all__ = ["READ_SCHEMA", "render_property", "row_from_message"]

#: The columns of ``spark.read.format("servicebus")``, in order.
READ_SCHEMA = StructType([
    StructField("sequence_number", LongType(), nullable=False),
    StructField("message_id", StringType()),
    StructField("enqueued_time", TimestampType()),
    StructField("scheduled_enqueue_time", TimestampType()),
    StructField("state", StringType(), nullable=False),
    StructField("session_id", StringType()),
    StructField("partition_key", StringType()),
    StructField("subject", StringType()),
    StructField("content_type", StringType()),
    StructField("correlation_id", StringType()),
    StructField("to", StringType()),
    StructField("reply_to", StringType()),
    StructField("delivery_count", IntegerType()),
    StructField("time_to_live", LongType()),
    StructField("dead_letter_reason", StringType()),
    StructField("dead_letter_description", StringType()),
    StructField("dead_letter_source", StringType()),
    StructField("application_properties", MapType(StringType(), StringType())),
    StructField("body", BinaryType()),
])


def render_property(value: Any) -> str | None:
    """An application property value as the read schema's text (``application_properties``).

    Strings as they are; booleans ``true``/``false``; numbers of every AMQP type in decimal,
    never as their wire type; timestamps in ISO 8601 (UTC); durations in milliseconds; uuids in
    canonical form; binary in base64; lists and maps as their Python repr.

    Args:
        value: A decoded application property value.

    Returns:
        The text, or None for a null value.

    Raises nothing: any value has a text.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timestamp):
        return datetime_from_ms(int(value)).isoformat()
    number = number_text(value)
    if number is not None:
        return number
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value // timedelta(milliseconds=1))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return repr(value)


def _properties(properties: Mapping[str, Any]) -> dict[str, str | None]:
    return {str(key): render_property(value) for key, value in properties.items()}


def row_from_message(message: ReceivedMessage) -> tuple[Any, ...]:
    """The row of :data:`READ_SCHEMA` for one peeked message."""
    ttl = message.time_to_live
    return (
        message.sequence_number,
        None if message.message_id is None else id_text(message.message_id),
        message.enqueued_time,
        message.scheduled_enqueue_time,
        message.state.name.lower(),
        message.session_id,
        message.partition_key,
        message.subject,
        message.content_type,
        None if message.correlation_id is None else id_text(message.correlation_id),
        message.to,
        message.reply_to,
        message.delivery_count,
        None if ttl is None else ttl // timedelta(milliseconds=1),
        message.dead_letter_reason,
        message.dead_letter_description,
        message.dead_letter_source,
        _properties(message.application_properties),
        message.body_bytes(),
    )
