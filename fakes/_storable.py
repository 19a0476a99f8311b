"""What the fake checks of a message before it keeps it.

A message the fake stores is encoded again each time it is delivered or peeked
(its header and annotations with what the fake adds; the sections it does not change
are written as the bytes they came as: ``sbmgmt.message.same_encoding``). A message whose own
fields do not encode — a negative TTL where the header's ttl is a uint, a priority
over 255, a symbol that is not ASCII — would fail every later delivery and peek of
the entity. :func:`check_storable` encodes those sections once on arrival and refuses
the message (``com.microsoft:argument-error``) if that fails.

It also holds a message to the service's header quotas ("Maximum message property size for
each property is 32 KB. Cumulative size of all properties can't exceed 64 KB. This limit
applies to the entire header of the brokered message, which has both user properties and
system properties", the quotas page, every tier): an application property whose value
encodes to more than 32 KB, or a header (message annotations, properties and application
properties, as encoded) of more than 64 KB, is refused with
``amqp:link:message-size-exceeded`` (the SDKs' message-size error) in the words the service
uses for a header past its quota ("The size quota for this stream (65536) has been
exceeded.", Rebus.AzureServiceBus issue 35). A message of at most 32 KB in all cannot break
either, and is not looked at.
"""

from __future__ import annotations

from sbmgmt.amqp.encode import encode_value
from sbmgmt.amqp.sections import (
    APPLICATION_PROPERTIES,
    MESSAGE_ANNOTATIONS,
    PROPERTIES,
    section_spans,
)
from sbmgmt.message import BrokerHead, Message, encode_sections

from ._errors import ArgumentError, FakeServiceError

__all__ = ["MESSAGE_SIZE_EXCEEDED", "check_storable"]

#: One application property's quota and the whole header's (the quotas page).
PROPERTY_QUOTA = 32 * 1024
HEADER_QUOTA = 64 * 1024
#: The sections the service counts as a message's header.
_HEADER = frozenset({MESSAGE_ANNOTATIONS, PROPERTIES, APPLICATION_PROPERTIES})


class MessageSizeExceeded(FakeServiceError):
    """A message past a size quota (``amqp:link:message-size-exceeded``)."""

    status_code = 413
    condition = "amqp:link:message-size-exceeded"


MESSAGE_SIZE_EXCEEDED = MessageSizeExceeded.condition


def check_storable(message: Message, size: int | None = None) -> None:
    """Raise ArgumentError unless the message encodes as the fake will send it.

    ``message`` is decoded from what was sent (a transfer, a schedule request): the
    sections the fake never changes go out as the bytes they came as, so only those it
    writes anew are encoded here: the header and the annotations (the message's
    ``BrokerHead``: what each delivery changes is the broker's, always encodable), and the
    properties of a message without a MessageId (the broker gives it one). ``size``, when
    known, is the encoded size of the message or of the batch that holds it: at most 32 KB,
    no header quota can be broken and the message's bytes are not looked at again.
    """
    try:
        BrokerHead(message)
        if message.message_id is None:
            encode_sections(message.model_copy(update={"message_id": "0" * 32}), [PROPERTIES])
    except Exception as exc:
        raise ArgumentError(f"The message cannot be kept: its fields do not encode as AMQP "
                            f"({type(exc).__name__}).") from None
    if size is None or size > PROPERTY_QUOTA:
        _check_header(message)


def _check_header(message: Message) -> None:
    """Raise MessageSizeExceeded for a property past 32 KB or a header past 64 KB."""
    raw = message.to_bytes()
    if len(raw) <= PROPERTY_QUOTA:
        return
    sizes = {code: end - start for code, start, end in section_spans(raw)}
    header = sum(size for code, size in sizes.items() if code in _HEADER)
    if header > HEADER_QUOTA:
        raise MessageSizeExceeded(
            f"A serialization error occurred while processing the message header stream: the "
            f"size quota for this stream ({HEADER_QUOTA}) has been exceeded ({header} bytes "
            "of properties).")
    if sizes.get(APPLICATION_PROPERTIES, 0) <= PROPERTY_QUOTA:
        return
    for name, value in message.application_properties.items():
        size = len(encode_value(value))
        if size > PROPERTY_QUOTA:
            raise MessageSizeExceeded(
                f"The application property {name[:64]!r} is {size} bytes: the size quota of "
                f"one property ({PROPERTY_QUOTA}) has been exceeded.")
