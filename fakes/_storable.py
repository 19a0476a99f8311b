"""What the fake checks of a message before it keeps it.

A message the fake stores is encoded again each time it is delivered or peeked,
with the header and properties types AMQP 1.0 part 3 §3.2 gives them: a value
outside its type's range would fail every later encoding, and so every receiver
and peek of the entity. :func:`check_storable` refuses such a message when it
arrives (``com.microsoft:argument-error``), with the field named.
"""

from __future__ import annotations

from datetime import timedelta

from sbmgmt.message import Message

from ._errors import ArgumentError

__all__ = ["check_storable"]

_UINT_MAX = 2**32 - 1
_UBYTE_MAX = 2**8 - 1
_MILLISECOND = timedelta(milliseconds=1)


def check_storable(message: Message) -> None:
    """Raise ArgumentError unless every typed field is within its AMQP type's range."""
    ttl = message.time_to_live
    if ttl is not None:
        # "ttl | milliseconds" (uint)
        _within("ttl", ttl // _MILLISECOND, _UINT_MAX)
    _within("priority", message.priority, _UBYTE_MAX)  # "priority | ubyte"
    _within("delivery-count", message.delivery_count, _UINT_MAX)  # "delivery-count | uint"
    # "group-sequence | sequence-no" (a uint serial number)
    _within("group-sequence", message.group_sequence, _UINT_MAX)


def _within(name: str, value: int | None, largest: int) -> None:
    if value is not None and not 0 <= value <= largest:
        raise ArgumentError(f"The message's {name} {value} is out of range (0 to {largest}).")
