"""Link addresses as the SDKs send them, reduced to entity paths.

Clients attach with full URIs (``amqps://host:port/queue``), bare paths
(``queue/$management``) or mixed case (``$deadletterqueue``); entity names are
case-insensitive in Service Bus.
"""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

__all__ = ["CBS_NODE", "DEAD_LETTER_SUFFIX", "MANAGEMENT_SUFFIX", "entity_key", "normalize",
           "split_management"]

CBS_NODE = "$cbs"
MANAGEMENT_SUFFIX = "/$management"
DEAD_LETTER_SUFFIX = "/$DeadLetterQueue"


def normalize(address: str | None) -> str:
    """The path part of an address, without scheme, host or surrounding slashes."""
    if not address:
        return ""
    if "://" in address:
        address = urlsplit(address).path
    return address.strip("/")


@functools.lru_cache(maxsize=4096)
def entity_key(path: str) -> str:
    """The case-insensitive lookup key of an entity path (cached: every request asks)."""
    return normalize(path).lower()


def split_management(path: str) -> tuple[str, bool]:
    """``("queue", True)`` for ``queue/$management``; ``(path, False)`` otherwise."""
    if path.lower().endswith(MANAGEMENT_SUFFIX.lower()):
        return path[: -len(MANAGEMENT_SUFFIX)], True
    return path, False
