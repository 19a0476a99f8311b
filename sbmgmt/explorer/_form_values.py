"""The values a page's address or a form carries, read and checked.

Each reader takes the query or the form (a mapping of text) and a key, and returns the
value typed, or raises :class:`BadInput` naming the key and the fault (the app answers a
page 400, and a form's request with the fault as its outcome). Nothing here talks to the
namespace.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from ..actions.entities import EntityKind
from ..errors import ServiceBusManagementError
from ..message import Message

__all__ = ["BadInput", "choice_value", "error_text", "kind_value", "message_from",
           "number_value", "selected_numbers", "state_bytes", "text_value", "trail_value",
           "when_value"]


class BadInput(ValueError):
    """A query or form value the explorer cannot take (answered 400)."""


def text_value(values: Mapping[str, Any], key: str, *, allow_empty: bool = False) -> str:
    """The text under ``key``, stripped (kept as it is with ``allow_empty``)."""
    value = values.get(key)
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise BadInput(f"{key} is missing")
    return value if allow_empty else value.strip()


#: What a number of the pages' addresses and forms is, said to a person.
_NUMBERS = {"from": "the sequence number to start from", "size": "the page size",
            "seq": "the sequence number", "skip": "the sessions to skip",
            "max": "the most messages", "after": "the sequence number to look after"}


def number_value(values: Mapping[str, Any], key: str, default: int, *, minimum: int,
                 maximum: int | None = None) -> int:
    """The whole number under ``key`` (``default`` when absent), within its bounds; out of
    them, said in words ("the page size is 1 to 250, not 300")."""
    text = values.get(key)
    if text is None or text == "":
        return default
    what = _NUMBERS.get(key, key)
    try:
        number = int(str(text))
    except ValueError:
        raise BadInput(f"{what} is a whole number, not {str(text)[:40]!r}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"{minimum} or more" if maximum is None else f"{minimum} to {maximum}"
        raise BadInput(f"{what} is {bounds}, not {number}")
    return number


def choice_value(values: Mapping[str, Any], key: str, kind: Any, default: Any) -> Any:
    """The member of the enum ``kind`` named by the value under ``key``."""
    text = values.get(key)
    if text is None or text == "":
        return default
    try:
        return kind(text)
    except ValueError:
        raise BadInput(f"{key} must be one of {', '.join(k.value for k in kind)}") from None


def kind_value(values: Mapping[str, Any], path: str) -> EntityKind:
    """The entity's kind: ``kind`` if given, else a subscription by its path or a queue."""
    default = (EntityKind.SUBSCRIPTION if "/subscriptions/" in path.lower()
               else EntityKind.QUEUE)
    kind: EntityKind = choice_value(values, "kind", EntityKind, default)
    return kind


def selected_numbers(form: Any) -> frozenset[int] | None:
    """The sequence numbers ticked in a message list (``seq``, repeated); None: none ticked
    (the action is for every message)."""
    texts = [str(text) for text in form.getlist("seq")]
    try:
        numbers = frozenset(int(text) for text in texts)
    except ValueError:
        raise BadInput("seq must be sequence numbers") from None
    if any(number < 0 for number in numbers):
        raise BadInput("seq must be sequence numbers")
    return numbers or None


def trail_value(text: str) -> list[int]:
    """The starts of the pages before this one, from ``1,51,101``."""
    try:
        return [int(part) for part in text.split(",") if part]
    except ValueError:
        raise BadInput("trail must be sequence numbers separated by commas") from None


def message_from(form: Mapping[str, Any]) -> Message:
    """A message from the send / schedule form: body text, content type, subject, session,
    and application properties as ``key=value`` lines (values as strings)."""
    properties: dict[str, str] = {}
    for line in str(form.get("properties") or "").splitlines():
        if line.strip():
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                raise BadInput(f"an application property is key=value, not {line[:40]!r}")
            properties[key.strip()] = value.strip()
    def optional(key: str) -> str | None:
        return str(form.get(key) or "").strip() or None

    try:
        return Message(body=str(form.get("body") or "").encode(),
                       message_id=str(uuid.uuid4()), application_properties=properties,
                       content_type=optional("content_type"), subject=optional("subject"),
                       session_id=optional("session_id"))
    except ValueError as error:
        raise BadInput(error_text(error)) from None


def when_value(text: str) -> datetime:
    """A time to schedule for: ``+N`` minutes from now, or an ISO 8601 time (UTC if naive)."""
    if text.startswith("+"):
        try:
            return datetime.now(timezone.utc) + timedelta(minutes=float(text[1:]))
        except ValueError:
            raise BadInput(f"at: +MINUTES, not {text[:40]!r}") from None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise BadInput(f"at: an ISO 8601 time or +MINUTES, not {text[:40]!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def state_bytes(text: str, is_base64: bool) -> bytes:
    """A session state from the form: the text as UTF-8, or decoded from base64."""
    if not is_base64:
        return text.encode()
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadInput("the state is not valid base64") from None


def error_text(error: BaseException) -> str:
    """An error as one line in the user's words (for a page; redact it first): the
    library's message or a bad value's as it is (they say what failed), anything else as
    unexpected; never a Python class name."""
    text = " ".join(str(error).split())
    if isinstance(error, (ServiceBusManagementError, ValueError)) and text:
        return text
    return f"unexpected error: {text}" if text else "unexpected error"
