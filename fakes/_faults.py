"""Fault injection for the fake namespace's management node.

:class:`Faults` (``FakeNamespace.faults``) holds rules, each scoped to an entity and/or
an operation (``None`` = any), and optionally limited to the next ``count`` matching
requests. For every management request the server asks :meth:`Faults.plan` what to
do with its reply and gets a :class:`ReplyPlan`; the plan is applied on the server
thread (latency with timers, never by sleeping). Link detaches, connection closes and
token expiry are carried out by the server (:class:`FaultTarget`) on its thread; the
call returns once they are done.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from proton import Message
from typing_extensions import assert_never

from ._addresses import entity_key

__all__ = [
    "NO_FAULTS",
    "FaultHandle",
    "FaultKind",
    "FaultTarget",
    "Faults",
    "ReplyFactory",
    "ReplyPlan",
]

#: Builds a (malformed) reply for the request whose message-id it is given.
ReplyFactory = Callable[[Any], Message]


class FaultTarget(Protocol):
    """What the server does for :class:`Faults` (each call returns when it is done)."""

    def detach_management_link(self, entity: str) -> int:
        """Detach ``entity``'s management links on every connection; how many links."""

    def close_connections(self) -> int:
        """Close every client connection; how many."""

    def expire_tokens(self) -> int:
        """Forget every CBS token and detach the entity links they authorised; how many."""

    def release_held(self) -> None:
        """Send the replies held by pauses that have been removed."""


class FaultKind(str, Enum):
    """The kinds of reply fault; :meth:`Faults.plan` handles each one explicitly."""

    LATENCY = "latency"
    DROP = "drop"
    DUPLICATE = "duplicate"
    WRONG_CORRELATION_ID = "wrong-correlation-id"
    SERVER_BUSY = "server-busy"
    MALFORMED = "malformed"
    PAUSE = "pause"


@dataclass(eq=False)
class _Rule:
    kind: FaultKind
    entity: str | None
    operation: str | None
    remaining: int | None
    seconds: float = 0.0
    jitter: float = 0.0
    factory: ReplyFactory | None = None
    active: bool = True
    hits: int = 0

    def applies(self, entity: str, operation: str | None) -> bool:
        return (self.active and (self.entity is None or self.entity == entity)
                and (self.operation is None or self.operation == operation))


@dataclass(frozen=True, slots=True)
class ReplyPlan:
    """What to do with one management reply."""

    server_busy: bool = False
    drop: bool = False
    copies: int = 1
    wrong_correlation_id: bool = False
    malformed: ReplyFactory | None = None
    delay: float = 0.0
    paused_by: tuple[FaultHandle, ...] = field(default=())

    def held(self) -> bool:
        """Whether a pause still holds this reply."""
        return any(handle.active for handle in self.paused_by)


#: The plan when no fault applies: answer at once, once.
NO_FAULTS = ReplyPlan()


class FaultHandle:
    """One injected fault; :meth:`remove` ends it."""

    __slots__ = ("_faults", "_rule")

    def __init__(self, faults: Faults, rule: _Rule) -> None:
        self._faults = faults
        self._rule = rule

    def __repr__(self) -> str:
        rule = self._rule
        return (f"FaultHandle({rule.kind.value}, entity={rule.entity!r}, "
                f"operation={rule.operation!r}, hits={rule.hits}, active={rule.active})")

    @property
    def kind(self) -> FaultKind:
        """Which kind of fault this is (a :class:`FaultKind`, equal to its string value)."""
        return self._rule.kind

    @property
    def hits(self) -> int:
        """How many replies this fault has affected so far."""
        with self._faults.lock:
            return self._rule.hits

    @property
    def active(self) -> bool:
        """False once removed, cleared, or its count is used up."""
        return self._rule.active

    def remove(self) -> None:
        """End this fault (a pause sends the replies it held)."""
        self._faults.remove(self._rule)


class Faults:
    """The faults injected into one fake namespace (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._target: FaultTarget | None = None
        self._random = random.Random()

    def bind(self, target: FaultTarget | None) -> None:
        """Set (or unset, with ``None``) the server that carries out link and connection faults."""
        self._target = target

    def __repr__(self) -> str:
        with self.lock:
            kinds = [rule.kind.value for rule in self._rules]
        return f"Faults({kinds})"

    # --- reply faults -------------------------------------------------------------------

    def _add(self, kind: FaultKind, count: int | None, entity: str | None, operation: str | None,
             **params: Any) -> FaultHandle:
        if count is not None and count < 1:
            raise ValueError(f"count must be at least 1 (or None for every reply), got {count}")
        rule = _Rule(kind, None if entity is None else entity_key(entity), operation, count,
                     **params)
        with self.lock:
            self._rules.append(rule)
        return FaultHandle(self, rule)

    def latency(self, seconds: float, jitter: float = 0.0, *, entity: str | None = None,
                operation: str | None = None) -> FaultHandle:
        """Delay every matching reply by ``seconds`` plus a uniform ``[0, jitter]``."""
        if seconds < 0 or jitter < 0:
            raise ValueError("latency and jitter must not be negative")
        return self._add(FaultKind.LATENCY, None, entity, operation, seconds=seconds, jitter=jitter)

    def drop_replies(self, count: int | None = None, *, entity: str | None = None,
                     operation: str | None = None) -> FaultHandle:
        """Apply the next ``count`` matching requests (all, if None) but send no reply."""
        return self._add(FaultKind.DROP, count, entity, operation)

    def duplicate_replies(self, count: int | None = None, *, entity: str | None = None,
                          operation: str | None = None) -> FaultHandle:
        """Send each of the next ``count`` matching replies twice."""
        return self._add(FaultKind.DUPLICATE, count, entity, operation)

    def wrong_correlation_id(self, count: int | None = None, *, entity: str | None = None,
                             operation: str | None = None) -> FaultHandle:
        """Send the next ``count`` matching replies with a correlation-id nobody asked for."""
        return self._add(FaultKind.WRONG_CORRELATION_ID, count, entity, operation)

    def server_busy(self, count: int | None, *, entity: str | None = None,
                    operation: str | None = None) -> FaultHandle:
        """Answer the next ``count`` matching requests 503 ``com.microsoft:server-busy``.

        The requests are not applied.
        """
        return self._add(FaultKind.SERVER_BUSY, count, entity, operation)

    def malformed_replies(self, factory: ReplyFactory, count: int | None = None, *,
                          entity: str | None = None, operation: str | None = None) -> FaultHandle:
        """Replace the next ``count`` matching replies by ``factory(request_message_id)``.

        The requests are applied; only their replies are replaced.
        """
        return self._add(FaultKind.MALFORMED, count, entity, operation, factory=factory)

    def pause(self, *, entity: str | None = None, operation: str | None = None) -> FaultHandle:
        """Apply matching requests but hold their replies until ``handle.remove()``."""
        return self._add(FaultKind.PAUSE, None, entity, operation)

    def remove(self, rule: _Rule) -> None:
        """End one fault (what :meth:`FaultHandle.remove` calls)."""
        with self.lock:
            was_pause = rule.kind is FaultKind.PAUSE and rule.active
            rule.active = False
            if rule in self._rules:
                self._rules.remove(rule)
        if was_pause:
            self._release_held()

    def clear(self) -> None:
        """End every fault."""
        with self.lock:
            rules, self._rules = self._rules, []
            for rule in rules:
                rule.active = False
        if any(rule.kind is FaultKind.PAUSE for rule in rules):
            self._release_held()

    def _release_held(self) -> None:
        target = self._target
        if target is not None:
            target.release_held()

    def plan(self, entity: str, operation: str | None) -> ReplyPlan:
        """The plan for the reply to one request (server thread); consumes counts."""
        if not self._rules:
            return NO_FAULTS
        key = entity_key(entity)
        busy = drop = wrong = False
        copies = 1
        delay = 0.0
        malformed: ReplyFactory | None = None
        pauses: list[FaultHandle] = []
        with self.lock:
            for rule in list(self._rules):
                if not rule.applies(key, operation):
                    continue
                if busy and rule.kind is not FaultKind.LATENCY:
                    continue
                rule.hits += 1
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        rule.active = False
                        self._rules.remove(rule)
                kind = rule.kind
                if kind is FaultKind.SERVER_BUSY:
                    busy = True
                elif kind is FaultKind.DROP:
                    drop = True
                elif kind is FaultKind.DUPLICATE:
                    copies += 1
                elif kind is FaultKind.WRONG_CORRELATION_ID:
                    wrong = True
                elif kind is FaultKind.MALFORMED:
                    malformed = rule.factory
                elif kind is FaultKind.PAUSE:
                    pauses.append(FaultHandle(self, rule))
                elif kind is FaultKind.LATENCY:
                    delay += rule.seconds + (self._random.uniform(0.0, rule.jitter)
                                             if rule.jitter else 0.0)
                else:
                    assert_never(kind)
        return ReplyPlan(server_busy=busy, drop=drop, copies=copies, wrong_correlation_id=wrong,
                         malformed=malformed, delay=delay, paused_by=tuple(pauses))

    # --- link and connection faults ------------------------------------------------------

    def _require_target(self) -> FaultTarget:
        target = self._target
        if target is None:
            raise RuntimeError("the fake namespace is not running")
        return target

    def detach_management_link(self, entity: str) -> int:
        """Force-detach ``entity``'s ``$management`` links (``amqp:link:detach-forced``).

        Returns how many links were detached.
        """
        return self._require_target().detach_management_link(entity)

    def close_connections(self) -> int:
        """Close every client connection (``amqp:connection:forced``); returns how many."""
        return self._require_target().close_connections()

    def expire_tokens(self) -> int:
        """Expire every CBS token now: links they authorised are detached with
        ``amqp:unauthorized-access`` and new attaches need a new put-token.

        Returns how many links were detached.
        """
        return self._require_target().expire_tokens()
