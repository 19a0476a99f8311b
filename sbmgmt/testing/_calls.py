"""One request the mock received, as the typed model the client encoded."""

from __future__ import annotations

from dataclasses import dataclass

from ..ops._base import OpModel

__all__ = ["Call", "shortened"]

_LONGEST = 300


def shortened(text: str) -> str:
    """``text`` cut to a readable length (a request or response may hold megabytes)."""
    return text if len(text) <= _LONGEST else f"{text[:_LONGEST - 5]} ...)"


@dataclass(frozen=True, slots=True)
class Call:
    """A request to ``<entity>/$management`` the mock received.

    Compare calls with ``==``; ``mock.requests(ops.renew_lock.Request)`` gives one operation's
    requests, typed.

    Attributes:
        operation: The operation name (``"com.microsoft:renew-lock"``).
        entity: The entity path as the client attached it.
        request: The request decoded from the wire into its ``Request`` model
            (``sbmgmt.ops.<op>.Request``).
    """

    operation: str
    entity: str
    request: OpModel

    def __str__(self) -> str:
        return f"{self.operation} on {self.entity!r}: {shortened(repr(self.request))}"
