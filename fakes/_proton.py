"""The proton handles the fake's server holds, typed by what it uses of them.

proton's classes are untyped; these Protocols name the members the server reads and calls,
so the rest of the fake is typed without ``Any``. ``_impl`` is proton's C pointer: stable
for the endpoint's life and hashable, it keys the server's records (:mod:`fakes._links`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from proton import Condition, Delivery, Transport

__all__ = ["ConnectionHandle", "DeliveryHandle", "EventHandle", "LinkHandle", "Pointer",
           "SessionHandle", "TerminusHandle", "wrap_delivery"]

#: proton's C pointer to an endpoint or a delivery (a cffi pointer, hashed and compared
#: by address): what the fake's records are keyed by.
Pointer = object


class TerminusHandle(Protocol):
    """A link's source or target."""

    address: str | None
    type: int

    @property
    def filter(self) -> Any: ...

    def copy(self, other: TerminusHandle) -> None: ...


class ConnectionHandle(Protocol):
    """A client connection."""

    _impl: Pointer
    condition: Condition | None

    @property
    def state(self) -> int: ...

    @property
    def remote_condition(self) -> Condition | None: ...

    @property
    def transport(self) -> Transport | None: ...

    def open(self) -> None: ...

    def close(self) -> None: ...

    def free(self) -> None: ...

    def link_head(self, mask: int) -> LinkHandle | None: ...


class DeliveryHandle(Protocol):
    """A transfer on a link, with its local and remote state."""

    _impl: Pointer

    @property
    def local(self) -> Any: ...

    @property
    def remote(self) -> Any: ...

    @property
    def remote_state(self) -> int | None: ...

    @property
    def settled(self) -> bool: ...

    def update(self, state: int) -> None: ...

    def settle(self) -> None: ...


class SessionHandle(Protocol):
    """A session of a client connection."""

    @property
    def state(self) -> int: ...

    def open(self) -> None: ...

    def close(self) -> None: ...


class LinkHandle(Protocol):
    """A link of a client connection (the server's sender or receiver end)."""

    _impl: Pointer
    condition: Condition | None
    properties: Any
    snd_settle_mode: int
    rcv_settle_mode: int
    max_message_size: int

    @property
    def name(self) -> str: ...

    @property
    def remote_condition(self) -> Condition | None: ...

    @property
    def state(self) -> int: ...

    @property
    def is_sender(self) -> bool: ...

    @property
    def is_receiver(self) -> bool: ...

    @property
    def connection(self) -> ConnectionHandle: ...

    @property
    def source(self) -> TerminusHandle: ...

    @property
    def target(self) -> TerminusHandle: ...

    @property
    def remote_source(self) -> TerminusHandle: ...

    @property
    def remote_target(self) -> TerminusHandle: ...

    @property
    def remote_properties(self) -> Any: ...

    @property
    def remote_snd_settle_mode(self) -> int: ...

    @property
    def remote_rcv_settle_mode(self) -> int: ...

    @property
    def credit(self) -> int: ...

    @property
    def drain_mode(self) -> bool: ...

    def open(self) -> None: ...

    def close(self) -> None: ...

    def flow(self, credit: int) -> None: ...

    def drained(self) -> int: ...

    def delivery(self, tag: str) -> DeliveryHandle: ...

    def send(self, data: bytes) -> int: ...

    def advance(self) -> bool: ...

    def next(self, mask: int) -> LinkHandle | None: ...


class EventHandle(Protocol):
    """An event the loop dispatches to the server (its endpoints, where it has them)."""

    #: The C event (for proton-C's calls on hot paths), valid during the handler call.
    impl: Pointer

    @property
    def connection(self) -> ConnectionHandle: ...

    @property
    def session(self) -> SessionHandle: ...

    @property
    def link(self) -> LinkHandle: ...

    @property
    def delivery(self) -> DeliveryHandle: ...

    @property
    def transport(self) -> Transport | None: ...


#: proton's wrapper of a C delivery pointer (proton's own ``wrap`` is untyped).
wrap_delivery = cast("Callable[[Pointer], DeliveryHandle]", Delivery.wrap)
