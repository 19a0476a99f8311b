"""One request the mock received, as the typed model the client encoded."""

from __future__ import annotations

from dataclasses import dataclass

from ..ops._base import OpModel

__all__ = ["Call"]


@dataclass(frozen=True, slots=True)
class Call:
    """A request to ``<entity>/$management``: its operation name, the entity path as the
    client attached it, and the request decoded from the wire into its ``Request`` model
    (``sbmgmt.ops.<op>.Request``)."""

    operation: str
    entity: str
    request: OpModel

    def __str__(self) -> str:
        return f"{self.operation} on {self.entity!r}: {self.request!r}"
