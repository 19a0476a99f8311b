"""What the service's disposition of a message link's delivery says: the error of a
rejected send or settlement (bare, or as a transactional-state's outcome), and a C
delivery's tag and address, read without proton's Python wrappers (I/O thread).
"""

from __future__ import annotations

from typing import Any

from cproton import PN_ACCEPTED, PN_REJECTED, ffi, lib
from proton import Delivery, Described, symbol

from ..amqp.transaction_frames import TRANSACTIONAL_STATE, transactional_state
from ..errors import ServiceBusManagementError, error_for_status

__all__ = ["address", "outcome_error", "tag"]


def address(delivery: Any) -> int:
    """A C delivery's address (a key while it is unsettled)."""
    return int(ffi.cast("uintptr_t", delivery))


def tag(delivery: Any) -> bytes:
    """A delivery's tag as bytes (proton's ``pn_delivery_tag`` decodes it as UTF-8, which a
    lock token's 16 random bytes are not)."""
    raw = lib.pn_delivery_tag(delivery)
    return bytes(ffi.unpack(raw.start, raw.size))


def outcome_error(delivery: Any, state: int, operation: str) -> ServiceBusManagementError | None:
    """The service's error for a delivery's remote ``state`` (a C pointer's), or None.

    Accepted, bare or as a transactional-state's outcome (every send and settlement of a
    transaction), is read without proton's Python wrappers: they cost more than the rest
    of the delivery's handling."""
    if state == PN_ACCEPTED:
        return None
    if state == TRANSACTIONAL_STATE:
        found = transactional_state(delivery)
        outcome = None if found is None else found[1]
        if outcome is None or (isinstance(outcome, Described)
                               and outcome.descriptor == PN_ACCEPTED):
            return None
    return _rejection(Delivery.wrap(delivery), operation)  # type: ignore[no-untyped-call]


def _rejection(delivery: Any, operation: str) -> ServiceBusManagementError | None:
    """The service's error for a rejected delivery (or a transactional-state whose
    outcome is a rejection), or None."""
    remote = delivery.remote
    condition = remote.condition
    if condition is None and remote.type == TRANSACTIONAL_STATE:
        data = remote.data or []
        inner = data[1] if len(data) > 1 else None
        descriptor = getattr(inner, "descriptor", None)
        if descriptor is not None and int(descriptor) == PN_REJECTED:
            value = getattr(inner, "value", None) or []
            error = value[0] if value else None
            if isinstance(error, dict):
                found = error.get(symbol("condition"))
                text = error.get(symbol("description"))
                return _refused(operation, None if found is None else str(found),
                                None if text is None else str(text))
            return _refused(operation, None, None)
        return None
    if remote.type != PN_REJECTED and condition is None:
        return None
    name = None if condition is None else str(condition.name)
    description = None if condition is None else condition.description
    return _refused(operation, name, description)


def _refused(operation: str, condition: str | None,
             description: str | None) -> ServiceBusManagementError:
    """The typed error for a delivery the service rejected (no status code: the table
    decides by the condition)."""
    kind = type(error_for_status(operation, 0, condition, description))
    return kind(f"{operation} was refused ({condition or 'no error condition'})"
                + (f": {description}" if description else ""),
                operation=operation, error_condition=condition, description=description)
