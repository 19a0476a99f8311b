"""The "list of maps, each with a wire-encoded message" shape shared by several operations."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from .._messages.lazy_decoder import lazy_decoder
from ..amqp.values import Fields
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


def _entry(item: Any, fields: Fields, index: int) -> tuple[bytes, uuid.UUID | None]:
    """One entry's message bytes and lock token; an entry that is not exactly a map with
    binary ``message`` (and a uuid ``lock-token``, if any) is read through ``Fields``,
    which converts what it can and names what it cannot."""
    if type(item) is dict:
        raw = item.get("message")
        token = item.get("lock-token")
        if type(raw) is bytes and (token is None or type(token) is uuid.UUID):
            return raw, token
    entry = Fields(item, f"{fields.where}.messages[{index}]")
    return entry.bytes("message"), entry.uuid("lock-token") if entry.has("lock-token") else None


_decode_lazily = lazy_decoder(ReceivedMessage, ReceivedMessage._construct)


def decode_message_list(fields: Fields) -> tuple[ReceivedMessage, ...]:
    """The messages of a ``messages`` list, each decoded as its fields are read
    (:mod:`sbmgmt._messages.lazy_decoder`): at once, their structure, sequence numbers and lock
    tokens (ProtocolError, naming the operation, for the first that is malformed)."""
    messages: list[ReceivedMessage] = []
    append = messages.append
    decode = _decode_lazily
    for index, item in enumerate(fields.sequence("messages")):
        # A map of exactly a binary message (a peek reply's entries) needs no _entry.
        raw = item.get("message") if type(item) is dict and len(item) == 1 else None
        lock_token = None
        if type(raw) is not bytes:
            raw, lock_token = _entry(item, fields, index)
        try:
            append(decode(raw, lock_token))
        except ProtocolError as exc:
            raise ProtocolError(f"{fields.where}: {exc}", operation=fields.where) from None
    return tuple(messages)
