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
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..amqp.encode import encode_value
from ..errors import ProtocolError
from ..message import Message

__all__ = [
    "callable_argument",
    "connection_string",
    "count",
    "datetime_argument",
    "encodable_properties",
    "entity_path_text",
    "iterable_argument",
    "message_list",
    "model_request",
    "positive_seconds",
    "timeout_seconds",
    "window_size",
]

_M = TypeVar("_M", bound=BaseModel)

#: pydantic's error types that mean "a value of the wrong type" (the others: a value of
#: the right type that is out of range or not one of the allowed ones).
_TYPE_ERRORS = frozenset({"is_instance_of", "int_from_float", "int_parsing", "float_parsing",
                          "bool_parsing"})
#: Inputs short enough to show in a message (a str or number, not a secret-bearing object).
_SHOWN = 40

#: "com.microsoft:server-timeout | uint": milliseconds that fit in 32 bits.
_MAX_TIMEOUT = (2**32 - 1) / 1000
#: The receiver's credit (a uint) is the window.
_MAX_WINDOW = 2**32 - 1


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def timeout_seconds(value: object, name: str = "timeout") -> float:
    """A finite, positive number of seconds that fits the server-timeout (a uint of ms)."""
    value = positive_seconds(value, name)
    if value > _MAX_TIMEOUT:
        raise ValueError(f"{name} must be at most {_MAX_TIMEOUT:g} s (the server-timeout is "
                         f"a 32-bit count of milliseconds), got {value!r}")
    return value


def positive_seconds(value: object, name: str) -> float:
    """A finite, positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {_type_name(value)}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)


def count(value: object, name: str, minimum: int = 1) -> int:
    """An int from ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {_type_name(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def callable_argument(value: object, name: str) -> None:
    """None or something callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {_type_name(value)}")


def iterable_argument(value: object, name: str, of: str) -> tuple[Any, ...]:
    """The items of an iterable argument (a list, a tuple, a generator...); None, a
    non-iterable, a str, bytes or a mapping is a TypeError naming it (a str would
    otherwise be taken for its characters)."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be an iterable of {of}, got {_type_name(value)}")
    return tuple(value)


def model_request(model: type[_M], arguments: Mapping[str, str], fields: Mapping[str, Any]
                  ) -> _M:
    """``model`` validated from ``fields``; a field pydantic refuses is a TypeError (a
    value of the wrong type) or ValueError naming the caller's argument it came from
    (``arguments`` maps field names to argument names where they differ), with the
    item's index (``lock_tokens[3]``)."""
    try:
        return model.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        location = [str(part) for part in first["loc"]]
        where = arguments.get(location[0], location[0]) if location else "argument"
        where += "".join(f"[{part}]" for part in location[1:])
        given = first.get("input")
        shown = (repr(given) if isinstance(given, int | float | str) and not isinstance(given, bool)
                 and len(repr(given)) <= _SHOWN else _type_name(given))
        kind = first["type"]
        raised = TypeError if kind.endswith("_type") or kind in _TYPE_ERRORS else ValueError
        message = str(first["msg"])
        raise raised(f"{where}: {message[:1].lower()}{message[1:]}, got {shown}") from None


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
    """``values`` is None or a mapping of str keys whose every value can be encoded as an
    AMQP value (else a TypeError naming it, or the property)."""
    if values is None:
        return
    if not isinstance(values, Mapping):
        raise TypeError(f"{name} must be a mapping of str keys, got {_type_name(values)}")
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"{name}: its keys must be str, got {_type_name(key)}")
        try:
            encode_value(value)
        except ProtocolError:
            raise TypeError(f"{name}[{key!r}]: a {_type_name(value)} value cannot be "
                            "encoded as an AMQP value") from None
