"""One module per management operation, and the registry of them by name.

Each module defines ``OPERATION``, ``IDEMPOTENT``, ``Request``, ``Response``,
``encode``, ``decode_request``, ``encode_response`` and ``decode`` (see ``_base``).
The client encodes requests and decodes replies with them; the fake namespace uses
the same modules the other way round.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MODULE_BY_REQUEST", "NAMES", "OPERATIONS", "operation"]

#: Module names, one per operation.
NAMES = (
    "add_rule",
    "cancel_scheduled_message",
    "enumerate_rules",
    "get_message_sessions",
    "get_session_state",
    "peek_message",
    "receive_by_sequence_number",
    "remove_rule",
    "renew_lock",
    "renew_session_lock",
    "schedule_message",
    "set_session_state",
    "update_disposition",
)

_MODULES = tuple(importlib.import_module(f"{__name__}.{name}") for name in NAMES)

#: Operation name (e.g. ``"com.microsoft:renew-lock"``) -> its module.
OPERATIONS: dict[str, ModuleType] = {module.OPERATION: module for module in _MODULES}

#: Request class -> its module (how the client finds the codec for a request).
MODULE_BY_REQUEST: dict[type, ModuleType] = {module.Request: module for module in _MODULES}


def operation(name: str) -> ModuleType:
    """The module of an operation name; KeyError names the unknown operation."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise KeyError(f"unknown management operation {name!r}") from None
