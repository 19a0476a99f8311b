"""What a registered reply does with the request it answers.

An :class:`Outcome` turns one matched request into what the mock's server does: a
:class:`fakes._management.Reply` to send (a response, or a failure status with its
error condition), or ``None`` after acting on the connection as a network or the
service would (closing the connection, detaching the management link, or saying
nothing, so the client's own timeout fires). ``error=`` arguments become outcomes
through :func:`outcome_for_error`, and a callback's return value or raised error
through the same functions, so both spell a reply the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakes.parts import Faults, Reply

from .. import ops
from ..errors import (
    ConnectionLostError,
    LinkDetachedError,
    OperationError,
    OperationTimeoutError,
    ServiceBusManagementError,
    reply_status_for,
)
from ..ops._base import OpModel
from ._calls import Call, shortened

__all__ = [
    "Detach",
    "Disconnect",
    "ErrorLike",
    "Invoke",
    "Outcome",
    "Refuse",
    "Respond",
    "Silence",
    "outcome_for_error",
    "outcome_for_response",
]

#: An error class or instance from :mod:`sbmgmt.errors`, as ``error=`` takes it.
ErrorLike = type[ServiceBusManagementError] | ServiceBusManagementError


class Outcome:
    """How one registration answers a request (subclasses say how)."""

    def apply(self, call: Call, message_id: Any, faults: Faults) -> Reply | None:
        """The reply to send, or None when none goes out."""
        raise NotImplementedError

    def describe(self) -> str:
        """A short text for error messages (what was registered)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Respond(Outcome):
    """Answer with a typed ``Response``, encoded by the operation's own codec."""

    response: OpModel

    def apply(self, call: Call, message_id: Any, faults: Faults) -> Reply:
        status, body = ops.operation(call.operation).encode_response(self.response)
        return Reply(message_id, status, body)

    def describe(self) -> str:
        return f"response {shortened(repr(self.response))}"


@dataclass(frozen=True)
class Refuse(Outcome):
    """Answer with a failure status (and error condition, description)."""

    status: int
    condition: str | None = None
    description: str | None = None

    def apply(self, call: Call, message_id: Any, faults: Faults) -> Reply:
        return Reply(message_id, self.status, description=self.description,
                     error_condition=self.condition)

    def describe(self) -> str:
        return f"status {self.status}" + (f" {self.condition}" if self.condition else "")


@dataclass(frozen=True)
class Disconnect(Outcome):
    """Close the connection (``amqp:connection:forced``) instead of answering."""

    def apply(self, call: Call, message_id: Any, faults: Faults) -> None:
        faults.close_connections()

    def describe(self) -> str:
        return "a lost connection"


@dataclass(frozen=True)
class Detach(Outcome):
    """Detach the entity's management link (``amqp:link:detach-forced``) instead."""

    def apply(self, call: Call, message_id: Any, faults: Faults) -> None:
        faults.detach_management_link(call.entity)

    def describe(self) -> str:
        return "a detached management link"


@dataclass(frozen=True)
class Silence(Outcome):
    """Send no reply: the client's timeout decides."""

    def apply(self, call: Call, message_id: Any, faults: Faults) -> None:
        return None

    def describe(self) -> str:
        return "no reply"


@dataclass(frozen=True)
class Invoke(Outcome):
    """Ask a callback: it returns the ``Response`` or raises the error to answer with."""

    callback: Callable[[Call], OpModel]

    def apply(self, call: Call, message_id: Any, faults: Faults) -> Reply | None:
        try:
            result = self.callback(call)
        except ServiceBusManagementError as exc:
            outcome = outcome_for_error(exc, "the callback's error")
        else:
            outcome = outcome_for_response(call.operation, result, "the callback's result")
        return outcome.apply(call, message_id, faults)

    def describe(self) -> str:
        return f"callback {getattr(self.callback, '__qualname__', repr(self.callback))}"


def outcome_for_response(operation: str, response: object, what: str) -> Respond:
    """``response`` if it is ``operation``'s Response; TypeError naming ``what`` if not."""
    expected = ops.operation(operation).Response
    if not isinstance(response, expected):
        raise TypeError(f"{what} must be a {expected.__module__}.Response for {operation}, "
                        f"got {type(response).__name__}")
    return Respond(response)


def outcome_for_error(error: object, what: str) -> Outcome:
    """The outcome that makes the client raise ``error`` (a class or an instance).

    An OperationError answers with the status and condition that map to its class (an
    instance's own ``status_code``, ``error_condition`` and ``description``, where set,
    replace them);
    LinkDetachedError detaches the management link, another ConnectionLostError closes
    the connection, and OperationTimeoutError sends nothing. TypeError for anything else.
    """
    kind = error if isinstance(error, type) else type(error)
    if not issubclass(kind, ServiceBusManagementError):
        raise TypeError(f"{what} must be an sbmgmt.errors class or instance, got {error!r}")
    if issubclass(kind, LinkDetachedError):
        return Detach()
    if issubclass(kind, ConnectionLostError):
        return Disconnect()
    if issubclass(kind, OperationTimeoutError):
        return Silence()
    if not issubclass(kind, OperationError):
        raise TypeError(f"{what}: a management node cannot make the client raise "
                        f"{kind.__name__}")
    given = error if isinstance(error, OperationError) else None
    try:
        status, condition = reply_status_for(kind)
    except ValueError:
        if given is None or given.status_code is None:
            raise TypeError(f"{what}: no reply status maps to {kind.__name__}; pass status= "
                            "(and condition=) instead") from None
        status, condition = given.status_code, None
    if given is None:
        return Refuse(status, condition)
    return Refuse(status if given.status_code is None else given.status_code,
                  given.error_condition or condition, given.description)
