"""Input from the shell: NDJSON messages, and ``key=value`` / ``key:=json`` pairs."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..message import Message
from ..rules import CorrelationFilter
from ._exit import UsageProblem

__all__ = ["MessageLine", "correlation_filter", "entity_path", "messages_from_ndjson",
           "parse_pair"]

_DEAD_LETTER = "$deadletterqueue"
_SUBSCRIPTIONS = "subscriptions"


def entity_path(text: str) -> str:
    """An entity's path as the service names it, from what a user typed: the short form
    ``TOPIC/SUB`` is ``TOPIC/Subscriptions/SUB`` (with or without ``/$DeadLetterQueue``);
    ``QUEUE`` and ``TOPIC/Subscriptions/SUB`` are themselves. The one parser of every
    command that takes an entity."""
    parts = [part for part in text.split("/") if part]
    if not parts:
        raise UsageProblem(f"{text!r} is not an entity path: use QUEUE or "
                           "TOPIC/Subscriptions/SUB (or TOPIC/SUB)")
    dead_letter = parts[-1].lower() == _DEAD_LETTER
    core = parts[:-1] if dead_letter else parts
    if len(core) == 2 and core[1].lower() != _SUBSCRIPTIONS:
        core = [core[0], "Subscriptions", core[1]]
    return "/".join(core) + (f"/{parts[-1]}" if dead_letter else "")


class MessageLine(BaseModel):
    """One NDJSON line of ``sbmgmt schedule``: a message and its properties.

    At most one of ``body`` (UTF-8 text), ``body_base64`` (bytes) and ``body_value``
    (any JSON value, sent as an AMQP value) may be given; none means an empty body.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    body: str | None = None
    body_base64: str | None = None
    body_value: Any = None
    message_id: str | None = None
    session_id: str | None = None
    correlation_id: str | None = None
    subject: str | None = None
    content_type: str | None = None
    to: str | None = None
    reply_to: str | None = None
    reply_to_session_id: str | None = None
    partition_key: str | None = None
    time_to_live: float | None = Field(default=None, gt=0, description="seconds")
    application_properties: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _one_body(self) -> MessageLine:
        given = [self.body is not None, self.body_base64 is not None,
                 "body_value" in self.model_fields_set]
        if sum(given) > 1:
            raise ValueError("give at most one of body, body_base64, body_value")
        return self

    def to_message(self) -> Message:
        """The message to schedule."""
        fields = self.model_dump(
            exclude={"body", "body_base64", "body_value", "time_to_live"}, exclude_none=True
        )
        if self.time_to_live is not None:
            fields["time_to_live"] = timedelta(seconds=self.time_to_live)
        if self.body_base64 is not None:
            try:
                fields["body"] = base64.b64decode(self.body_base64, validate=True)
            except binascii.Error:
                raise ValueError("body_base64 is not valid base64") from None
        elif "body_value" in self.model_fields_set:
            fields.update(body=self.body_value, body_type="value")
        elif self.body is not None:
            fields["body"] = self.body.encode()
        return Message(**fields)


def messages_from_ndjson(lines: Iterable[str]) -> Iterator[Message]:
    """Messages from NDJSON lines (blank lines are skipped); errors name the line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield MessageLine.model_validate(json.loads(line)).to_message()
        except json.JSONDecodeError as exc:
            raise UsageProblem(f"stdin line {number}: not JSON ({exc.msg})") from None
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'line'}: {error['msg']}"
                for error in exc.errors()
            )
            raise UsageProblem(f"stdin line {number}: {problems}") from None
        except ValueError as exc:
            raise UsageProblem(f"stdin line {number}: {exc}") from None


def parse_pair(text: str) -> tuple[str, Any]:
    """``key=value`` (a string) or ``key:=json`` (a typed value: 5, 1.5, true, "x")."""
    typed_key, typed, typed_value = text.partition(":=")
    key, plain, value = text.partition("=")
    if typed and len(typed_key) < len(key):
        try:
            return typed_key.strip(), json.loads(typed_value)
        except json.JSONDecodeError:
            raise UsageProblem(f"{text!r}: the value after ':=' is not JSON") from None
    if not plain or not key.strip():
        raise UsageProblem(f"{text!r}: expected key=value or key:=json")
    return key.strip(), value


_CORRELATION_FIELDS = {
    "correlation_id": "correlation_id",
    "correlation-id": "correlation_id",
    "message_id": "message_id",
    "message-id": "message_id",
    "to": "to",
    "reply_to": "reply_to",
    "reply-to": "reply_to",
    "subject": "subject",
    "label": "subject",
    "session_id": "session_id",
    "session-id": "session_id",
    "reply_to_session_id": "reply_to_session_id",
    "reply-to-session-id": "reply_to_session_id",
    "content_type": "content_type",
    "content-type": "content_type",
}
_PROPERTY_PREFIX = "property."


def correlation_filter(pairs: Iterable[str]) -> CorrelationFilter:
    """A correlation filter from ``key=value`` pairs.

    System property names (correlation_id, message_id, to, reply_to, subject or label,
    session_id, reply_to_session_id, content_type) set those fields; any other key, or
    a key written ``property.NAME``, is an application property.
    """
    fields: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for text in pairs:
        key, value = parse_pair(text)
        system = _CORRELATION_FIELDS.get(key.lower())
        if key.startswith(_PROPERTY_PREFIX):
            properties[key[len(_PROPERTY_PREFIX):]] = value
        elif system is not None:
            if not isinstance(value, str):
                raise UsageProblem(f"{key!r} is a system property: its value is a string")
            fields[system] = value
        else:
            properties[key] = value
    return CorrelationFilter(**fields, properties=properties)
