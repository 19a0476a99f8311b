"""The errors the engine gives requests and session links, by cause."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._dispatcher import PendingRequest, reject
from ._session_link import SessionAttach
from ._session_link import end as end_session_link
from ._transaction_link import Control
from .errors import (
    ClientClosedError,
    ConnectionLostError,
    ProtocolMismatchError,
    ServiceBusManagementError,
)

__all__ = [
    "closed_error",
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


def closed_error(request: PendingRequest) -> ClientClosedError:
    return ClientClosedError(
        f"{request.operation}: the client was closed", operation=request.operation
    )


def session_closed(attach: SessionAttach) -> ClientClosedError:
    return ClientClosedError(f"locking {attach.what()}: the client was closed",
                             operation="attach")


def fail_closed(work: PendingRequest | SessionAttach) -> None:
    """Fail work that reached a closed client."""
    if isinstance(work, SessionAttach):
        end_session_link(work, session_closed(work))
    else:
        reject(work.future, closed_error(work))  # a caller may have cancelled it


def refuse_work(work: tuple[str, PendingRequest | SessionAttach]) -> None:
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
