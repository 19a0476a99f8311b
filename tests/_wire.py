"""Reference envelopes for the tests: proton's ``Message`` on one side, sbmgmt.amqp on the other.

The project's wire layer (:mod:`sbmgmt.amqp.envelope`) works on bytes; these build and read
the same envelopes through proton's own codec, so a test can hold the two to the same
bytes and values.
"""

from __future__ import annotations

from typing import Any

from proton import Array, Described, Message

from sbmgmt.amqp import envelope


def build_reply(correlation_id: Any, status_code: int, body: Any = None, *,
                description: str | None = None, error_condition: str | None = None,
                status_key: str = "statusCode") -> Message:
    """A reply as proton's ``Message`` (``encode_reply`` gives the same bytes)."""
    properties = envelope._reply_properties(status_code, description, error_condition,
                                            status_key)
    return Message(correlation_id=correlation_id, properties=properties, body=body)


def parse_reply(message: Message) -> envelope.Reply:
    """A proton ``Message``'s reply envelope, parsed from its bytes as the client does."""
    return envelope.reply_of(*envelope.reply_parts(bytes(message.encode())))


def owned(value: Any) -> Any:
    """A proton-decoded value with every ``memoryview`` copied into ``bytes``.

    python-qpid-proton decodes binaries as views into a C buffer that is reused once the
    decoder is freed; sbmgmt.amqp.decode returns ``bytes``, so a test compares its values
    with proton's owned.
    """
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return {owned(k): owned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [owned(v) for v in value]
    if isinstance(value, Array):
        return Array(value.descriptor, value.type, *(owned(v) for v in value.elements))
    if isinstance(value, Described):
        return Described(owned(value.descriptor), owned(value.value))
    return value
