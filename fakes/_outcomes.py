"""A receiver's settlement outcome, and what it does to the message it settles.

A peek-lock receiver settles a message with an outcome: accepted completes it,
rejected dead-letters it (``DeadLetterReason`` / ``DeadLetterErrorDescription`` in the
error's info), modified with ``undeliverable-here`` defers it, modified without it
abandons it (one more delivery), released gives it back as it was (its delivery count
unchanged: :meth:`Entity.release`). The outcome arrives either as the disposition's own
state or, in a transaction, inside a transactional-state (as a described value): both
become one :class:`Outcome`.

``modified`` counts a delivery whatever its ``delivery-failed`` says: the .NET clients
abandon with a modified outcome that leaves ``delivery-failed`` unset
(Microsoft.Azure.ServiceBus's and Azure.Messaging.ServiceBus's ``GetAbandonOutcome``:
``new Modified()``, ``UndeliverableHere`` only to defer) and the service counts an
abandon; the Python SDK sets it (``delivery_failed=True``). The Python SDK gives back
uncounted, with released, what arrives outside a receive call.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from proton import Described

from ._entity import Entity
from ._proton import DeliveryHandle

__all__ = ["Outcome"]

_ACCEPTED = 0x24  # "amqp:accepted:list"
_REJECTED = 0x25  # "amqp:rejected:list": [error]
_RELEASED = 0x26  # "amqp:released:list"
_MODIFIED = 0x27  # "amqp:modified:list": [delivery-failed, undeliverable-here, annotations]
_ERROR = 0x1D     # "amqp:error:list": [condition, description, info]


@dataclass(frozen=True)
class Outcome:
    """A terminal delivery state: its descriptor code and what the fake reads of it."""

    code: int
    info: dict[Any, Any] = field(default_factory=dict)
    undeliverable: bool = False

    @classmethod
    def of_delivery(cls, delivery: DeliveryHandle) -> Outcome | None:
        """The outcome a disposition carries as its state (None for another state)."""
        code = delivery.remote_state
        if code not in (_ACCEPTED, _REJECTED, _RELEASED, _MODIFIED):
            return None
        condition = delivery.remote.condition
        info = condition.info if condition is not None else None
        return cls(int(code), info if isinstance(info, dict) else {},
                   bool(delivery.remote.undeliverable))

    @classmethod
    def of_described(cls, value: Any) -> Outcome | None:
        """The outcome inside a transactional-state (None when absent or unknown)."""
        if not isinstance(value, Described):
            return None
        code: Any = value.descriptor
        fields = value.value if isinstance(value.value, list) else []
        if code in (_ACCEPTED, _RELEASED):
            return cls(int(code))
        if code == _REJECTED:
            error = fields[0] if fields else None
            error_fields: Any = error.value if isinstance(error, Described) else []
            info = error_fields[2] if isinstance(error_fields, list) and len(
                error_fields) > 2 else None
            return cls(_REJECTED, info if isinstance(info, dict) else {})
        if code == _MODIFIED:
            return cls(_MODIFIED, undeliverable=len(fields) > 1 and fields[1] is True)
        return None

    def apply(self, entity: Entity, token: uuid.UUID, now: float) -> None:
        """Settle the message locked by ``token`` (the entity raises what the service
        would: a lost lock...)."""
        if self.code == _ACCEPTED:
            entity.complete(token, now)
        elif self.code == _REJECTED:
            entity.dead_letter(token, now, _text(self.info.get("DeadLetterReason")),
                               _text(self.info.get("DeadLetterErrorDescription")))
        elif self.code == _RELEASED:
            entity.release(token, now)
        elif self.undeliverable:
            entity.defer(token, now)
        else:
            entity.abandon(token, now)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
