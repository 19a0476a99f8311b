"""Checks of the caller's arguments that the operation models cannot make.

Each raises a ``TypeError`` or ``ValueError`` naming the argument, on the caller's
thread, before anything is sent; the client stays usable. (The models check their
own fields; these cover what reaches the client before a model exists, or what a
model would silently coerce: pydantic turns the string ``"2030-01-01"`` into a
datetime, and a single ``Message`` is itself an iterable of fields.)

Naive datetimes are taken as UTC, everywhere (:func:`sbmgmt.amqp.values.ms_from_datetime`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .amqp.encode import encode_value
from .errors import ProtocolError, UnauthorizedError
from .message import Message

__all__ = [
    "access_token",
    "connection_string",
    "datetime_argument",
    "encodable_properties",
    "entity_path_text",
    "message_list",
    "timeout_seconds",
    "window_size",
]

#: "com.microsoft:server-timeout | uint": milliseconds that fit in 32 bits.
_MAX_TIMEOUT = (2**32 - 1) / 1000
#: The receiver's credit (a uint) is the window.
_MAX_WINDOW = 2**32 - 1


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def timeout_seconds(value: object, name: str = "timeout") -> float:
    """A finite, positive number of seconds that fits the server-timeout (a uint of ms)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {_type_name(value)}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    if value > _MAX_TIMEOUT:
        raise ValueError(f"{name} must be at most {_MAX_TIMEOUT:g} s (the server-timeout is "
                         f"a 32-bit count of milliseconds), got {value!r}")
    return float(value)


def window_size(value: object) -> int:
    """The most requests in flight per entity: an int from 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"window must be an int, got {_type_name(value)}")
    if not 1 <= value <= _MAX_WINDOW:
        raise ValueError(f"window must be between 1 and {_MAX_WINDOW}, got {value}")
    return value


def entity_path_text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"path must be a str (an entity path), got {_type_name(value)}")
    return value


def connection_string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"conn_str must be a str, got {_type_name(value)}")
    return value


def datetime_argument(value: object, name: str) -> datetime:
    """A ``datetime`` (naive ones are taken as UTC), not a string or a number."""
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, got {_type_name(value)}")
    return value


def message_list(messages: object) -> tuple[Message, ...]:
    """An iterable of ``Message`` (a single one is refused: pass ``[message]``)."""
    if isinstance(messages, Message):
        raise TypeError("messages must be an iterable of Message, got one Message "
                        "(pass [message])")
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise TypeError(f"messages must be an iterable of Message, got "
                        f"{_type_name(messages)}")
    found = tuple(messages)
    for index, message in enumerate(found):
        if not isinstance(message, Message):
            raise TypeError(f"messages[{index}] must be a Message, got {_type_name(message)}")
        encodable_properties(message.application_properties,
                             f"messages[{index}].application_properties")
    return found


def encodable_properties(values: Mapping[str, Any] | None, name: str) -> None:
    """Every value of ``values`` can be encoded as an AMQP value (else a TypeError
    naming the property)."""
    for key, value in (values or {}).items():
        try:
            encode_value(value)
        except ProtocolError:
            raise TypeError(f"{name}[{key!r}]: a {_type_name(value)} value cannot be "
                            "encoded as an AMQP value") from None


def access_token(token: Any) -> Any:
    """What a token source returned, if it is a usable token (else UnauthorizedError:
    the I/O thread reads these fields later and must not fail on them)."""
    what = "the credential's token"
    text = getattr(token, "token", None)
    if not isinstance(text, str) or not text:
        raise UnauthorizedError(f"{what} has no token string (got {_type_name(text)})")
    expires_on = getattr(token, "expires_on", None)
    if (isinstance(expires_on, bool) or not isinstance(expires_on, int | float)
            or not math.isfinite(expires_on)):
        raise UnauthorizedError(f"{what} has no expiry in epoch seconds (expires_on is "
                                f"{_type_name(expires_on)})")
    if not isinstance(getattr(token, "token_type", None), str):
        raise UnauthorizedError(f"{what} has no token_type string")
    return token
