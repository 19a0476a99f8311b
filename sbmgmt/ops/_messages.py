"""The "list of maps, each with a wire-encoded message" shape shared by several operations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._amqp import Fields
from ..errors import ProtocolError
from ..message import ReceivedMessage

__all__ = ["decode_message_list", "encode_message_list", "encoded_message_list"]


def encoded_message_list(encoded: Iterable[bytes]) -> list[dict[str, Any]]:
    """The list for messages already wire-encoded (``to_bytes()``), without lock tokens."""
    # "messages | list of maps" / "message | array of byte | AMQP 1.0 wire-encoded message."
    return [{"message": raw} for raw in encoded]


def encode_message_list(
    messages: Iterable[ReceivedMessage], *, with_lock_tokens: bool = False
) -> list[dict[str, Any]]:
    listed = tuple(messages)
    out = encoded_message_list(message.to_bytes() for message in listed)
    for entry, message in zip(out, listed, strict=True):
        if with_lock_tokens and message.lock_token is not None:
            # "lock-token | uuid | Lock token if receiver-settle-mode is 1."
            entry["lock-token"] = message.lock_token
    return out


def decode_message_list(fields: Fields) -> tuple[ReceivedMessage, ...]:
    messages = []
    for entry in fields.maps("messages"):
        raw = entry.bytes("message")
        lock_token = entry.uuid("lock-token") if entry.has("lock-token") else None
        try:
            messages.append(ReceivedMessage.from_bytes(raw, lock_token=lock_token))
        except ProtocolError as exc:
            raise ProtocolError(f"{fields.where}: {exc}", operation=fields.where) from None
    return tuple(messages)
