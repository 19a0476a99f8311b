"""Which links the CBS tokens put on a connection authorize, and until when.

Theory of operation
-------------------
A ``$cbs`` put-token names an audience (``sb://host/<path>``) and carries a SAS token
whose signature, expiry and ``sr`` are checked against it
(:func:`sbmgmt.auth.verify_sas_token`). What the connection then holds is a *grant*:
the audience's path, as lower-case segments (entity names are case-insensitive), valid
until the token's expiry. A link is authorized when a grant covers its address: the
grant's segments are a prefix of the address's (the namespace covers everything, an
entity covers itself, its dead-letter queue, its subscriptions and its ``$management``
node, and a node's own address covers only that node). So a token for
``q/$management`` opens no sender or receiver on ``q``, and a token for ``a`` opens
nothing of ``b`` or ``ab``.

Each connection's :class:`TokenBook` maps segments to expiry: a new token for the same
audience replaces the earlier one, so a client that refreshes its tokens holds one per
audience. Checking a link looks up each prefix of its address in that map, a few
dictionary lookups however many grants the connection holds. The service publishes no
limit on the tokens one connection may hold; the fake keeps at most
:data:`MAX_GRANTS_PER_CONNECTION` distinct audiences (expired ones are dropped first)
and answers a put-token beyond that with 403.

:class:`Expiries` orders every connection's grants by expiry (a heap with lazy
deletion) so that the server can set one timer for the earliest and, when it fires,
re-check the links of only the connections that lost a grant. Not thread-safe: the
server calls everything on its thread.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from sbmgmt.auth import (
    HTTP_AUDIENCE_SCHEMES,
    SasTokenError,
    audience_for,
    audience_parts,
    verify_sas_token,
)

from ._errors import FakeServiceError

__all__ = ["MAX_GRANTS_PER_CONNECTION", "Expiries", "TokenBook", "TooManyTokens",
           "audience_scope", "scope_of", "verify_request_token"]

#: Distinct token audiences one connection may hold at once (the fake's own bound).
MAX_GRANTS_PER_CONNECTION = 1000

Scope = tuple[str, ...]


class TooManyTokens(FakeServiceError):
    """403: the connection holds as many token audiences as the fake allows."""

    status_code = 403
    condition = "amqp:resource-limit-exceeded"


def scope_of(path: str) -> Scope:
    """A link address or audience path (``q/$management``) as lower-case segments."""
    return tuple(segment.lower() for segment in path.split("/") if segment)


def audience_scope(audience: str, hosts: frozenset[str]) -> Scope:
    """The path of a put-token's audience, which must name the namespace by one of its
    ``hosts`` (lower case)."""
    audience_host, segments = audience_parts(audience)
    if audience_host not in hosts:
        raise SasTokenError(f"audience {audience!r} does not name this namespace")
    return scope_of("/".join(segments))


@dataclass
class TokenBook:
    """One connection's grants: token audience (as segments) -> expiry (epoch seconds)."""

    grants: dict[Scope, float] = field(default_factory=dict)
    #: Set by put-token when the namespace accepts any token: covers everything, always.
    any_token: bool = False

    def put(self, scope: Scope, expiry: float, now: float) -> None:
        """Hold ``scope`` until ``expiry`` (replacing an earlier token for it)."""
        if scope not in self.grants and len(self.grants) >= MAX_GRANTS_PER_CONNECTION:
            self.prune(now)
            if len(self.grants) >= MAX_GRANTS_PER_CONNECTION:
                raise TooManyTokens(
                    f"This connection holds tokens for {MAX_GRANTS_PER_CONNECTION} audiences, "
                    "the most the fake namespace allows; reuse an audience or a new connection.")
        self.grants[scope] = expiry

    def covers(self, address: Scope, now: float) -> bool:
        """Whether a grant valid at ``now`` covers a link to ``address``."""
        if self.any_token:
            return True
        grants = self.grants
        for depth in range(len(address) + 1):
            expiry = grants.get(address[:depth])
            if expiry is not None and expiry > now:
                return True
        return False

    def prune(self, now: float) -> bool:
        """Drop the grants expired by ``now``; whether any was dropped."""
        expired = [scope for scope, expiry in self.grants.items() if expiry <= now]
        for scope in expired:
            del self.grants[scope]
        return bool(expired)

    def clear(self) -> None:
        """Forget every grant (the token-expiry fault)."""
        self.grants.clear()
        self.any_token = False


@dataclass
class Expiries:
    """Every connection's grant expiries, earliest first (entries may be stale)."""

    _heap: list[tuple[float, int]] = field(default_factory=list)

    def add(self, expiry: float, connection: int) -> None:
        """Note that ``connection`` holds a grant until ``expiry``."""
        heapq.heappush(self._heap, (expiry, connection))

    def due(self, now: float) -> set[int]:
        """The connections with a grant that expired by ``now`` (each entry reported once)."""
        found: set[int] = set()
        heap = self._heap
        while heap and heap[0][0] <= now:
            found.add(heapq.heappop(heap)[1])
        return found

    def next(self) -> float | None:
        """The earliest expiry still to come, if any."""
        return self._heap[0][0] if self._heap else None


def verify_request_token(token: str, keys: Mapping[str, str], host: str, path: str,
                         now: float) -> int:
    """Check an administration request's SAS token (its ``Authorization`` header) for the
    entity ``path`` on ``host``; returns its expiry, :class:`SasTokenError` if it grants nothing.

    The same check as a put-token's (:func:`sbmgmt.auth.verify_sas_token`), with the HTTP
    schemes the clients sign: Python's ``https://<namespace>``, JavaScript's whole request URL
    lower-cased, so the path is tried as sent and lower-cased (entity names are
    case-insensitive).
    """
    error: SasTokenError | None = None
    for candidate in dict.fromkeys((path, path.lower())):
        audience = audience_for(host, candidate)
        try:
            return verify_sas_token(token, keys, audience, now, schemes=HTTP_AUDIENCE_SCHEMES)
        except SasTokenError as exc:
            error = exc
    assert error is not None
    raise error
