"""The errors the engine gives requests and session links, by cause."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._protocol.dispatcher import PendingRequest, reject
from ..errors import (
    ClientClosedError,
    ConnectCause,
    ConnectFailedError,
    ConnectionLostError,
    ProtocolMismatchError,
    ServiceBusManagementError,
)
from .coordinator_link import Control
from .message_links import LinkWork, MessageLink
from .session_links import SessionAttach
from .session_links import end as end_session_link

__all__ = [
    "closed_error",
    "closed_link",
    "ConnectFailure",
    "describe",
    "fail_closed",
    "fail_control",
    "refuse_work",
    "for_request",
    "protocol_mismatch",
    "session_closed",
]


def describe(condition: Any) -> str:
    """A proton error condition in a log line or a message."""
    if condition is None:
        return "no error condition"
    if condition.description:
        return f"{condition.name}: {condition.description}"
    return str(condition.name)


# Protocol headers of the older AMQP versions (a RabbitMQ-style broker, not Service Bus).
_OTHER_AMQP_HEADERS = {
    "AMQP\\x00\\x00\\x09\\x01": "AMQP 0-9-1",
    "AMQP\\x01\\x01\\x00\\x09": "AMQP 0-9",
    "AMQP\\x01\\x01\\x08\\x00": "AMQP 0-8",
    "AMQP\\x01\\x01\\x09\\x01": "AMQP 0-9-1",
}


@dataclass(frozen=True, slots=True)
class Mismatch:
    text: str

    def for_request(self, request: PendingRequest) -> ProtocolMismatchError:
        return ProtocolMismatchError(f"{request.operation}: {self.text}",
                                     operation=request.operation)


def protocol_mismatch(reason: str) -> Mismatch | None:
    """A clear message when the peer answered with another protocol's header."""
    if "protocol header" not in reason:
        return None
    for header, version in _OTHER_AMQP_HEADERS.items():
        if header in reason:
            return Mismatch(f"the peer answered with the {version} protocol header: it is "
                            "not an AMQP 1.0 endpoint such as Service Bus (check the host "
                            "and port)")
    return Mismatch(f"the peer does not speak AMQP 1.0 ({reason})")


# What each cause adds to "cannot connect to HOST:PORT"; the reason follows in parentheses.
_CAUSE_TEXT = {
    ConnectCause.REFUSED: "connection refused: nothing listens on that port (is the namespace "
                          "or emulator running, and the port right?)",
    ConnectCause.NAME_NOT_FOUND: "the host name was not found (check the Endpoint of the "
                                 "connection string)",
    ConnectCause.TLS: "the TLS handshake failed (does the port speak TLS, and is the "
                      "certificate trusted?)",
    ConnectCause.OTHER: "the connection closed before it opened",
}
# The transport's reason says more only where the cause is not the whole story.
_DETAIL: dict[ConnectCause, Callable[[str], str]] = {
    ConnectCause.REFUSED: lambda reason: "",
    ConnectCause.NAME_NOT_FOUND: lambda reason: "",
    ConnectCause.TLS: lambda reason: f": {reason}",
    ConnectCause.OTHER: lambda reason: f": {reason}",
}
# Name look-ups that may succeed later (EAI_AGAIN): not a wrong name.
_TEMPORARY_LOOKUP = ("temporary failure", "try again")


def _cause_of(reason: str) -> ConnectCause:
    text = reason.lower()
    if "cannot resolve" in text:
        if any(hint in text for hint in _TEMPORARY_LOOKUP):
            return ConnectCause.OTHER
        return ConnectCause.NAME_NOT_FOUND
    if "econnrefused" in text:
        return ConnectCause.REFUSED
    if "ssl" in text or "tls" in text or "certificate" in text:
        return ConnectCause.TLS
    return ConnectCause.OTHER


@dataclass(frozen=True, slots=True)
class ConnectFailure:
    """The client's first connection failed: the error for each request that waited."""

    host: str
    port: int
    reason: str

    def error(self, what: str, operation: str) -> ConnectFailedError:
        cause = _cause_of(self.reason)
        return ConnectFailedError(
            f"{what}: cannot connect to {self.host}:{self.port}: "
            f"{_CAUSE_TEXT[cause]}{_DETAIL[cause](self.reason)}",
            host=self.host, port=self.port, cause=cause, operation=operation)

    def for_request(self, request: PendingRequest) -> ConnectFailedError:
        return self.for_operation(request.operation)

    def for_operation(self, operation: str) -> ConnectFailedError:
        return self.error(operation, operation)

    def for_attach(self, attach: SessionAttach) -> ConnectFailedError:
        return self.error(f"locking {attach.what()}", "attach")

    def for_link(self, link: MessageLink) -> ConnectFailedError:
        return self.error(f"attaching the {link.what()}", "attach")


def closed_error(request: PendingRequest) -> ClientClosedError:
    return ClientClosedError(
        f"{request.operation}: the client was closed", operation=request.operation
    )


def session_closed(attach: SessionAttach) -> ClientClosedError:
    return ClientClosedError(f"locking {attach.what()}: the client was closed",
                             operation="attach")


def closed_link(link: MessageLink) -> ClientClosedError:
    return ClientClosedError(f"the {link.what()}: the client was closed", operation="link")


def fail_closed(work: PendingRequest | SessionAttach | LinkWork) -> None:
    """Fail work that reached a closed client."""
    if isinstance(work, SessionAttach):
        end_session_link(work, session_closed(work))
    elif isinstance(work, LinkWork):
        reject(work.future, closed_link(work.link))
    else:
        reject(work.future, closed_error(work))  # a caller may have cancelled it


def refuse_work(work: tuple[str, PendingRequest | SessionAttach | LinkWork]) -> None:
    """Fail work (an entity and its request or session link) that reached a closed
    client."""
    fail_closed(work[1])


def fail_control(control: Control) -> None:
    """Fail a transaction's declare or discharge that reached a closed client."""
    control.future.set_exception(ClientClosedError(
        f"{control.operation}: the client was closed", operation=control.operation))


def for_request(error: ServiceBusManagementError, request: PendingRequest) -> Exception:
    """A copy of ``error`` naming the request's operation (one exception per future)."""
    if isinstance(error, ConnectionLostError):
        return type(error)(
            f"{request.operation}: {error}", operation=request.operation,
            error_condition=error.error_condition, description=error.description,
        )
    return type(error)(
        f"{request.operation}: {error}", operation=request.operation,
        status_code=error.status_code, error_condition=error.error_condition,
        description=error.description,
    )
