"""Reference envelopes for the tests: proton's ``Message`` on one side, sbmgmt.amqp on the other.

The project's wire layer (:mod:`sbmgmt.amqp.envelope`) works on bytes; these build and read
the same envelopes through proton's own codec, so a test can hold the two to the same
bytes and values.
"""

from __future__ import annotations

from typing import Any

from proton import Message

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
