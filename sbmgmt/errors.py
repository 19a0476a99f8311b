"""The exceptions sbmgmt raises, and the one table that maps replies to them.

Every exception carries ``operation``, ``status_code``, ``error_condition`` and
``description`` (``None`` where they do not apply). ``retryable`` tells whether the
same request may succeed if sent again.

::

    ServiceBusManagementError
    ├── TransportError                    the request may not have reached the service
    │   ├── ConnectionLostError           connection or link lost while the request was pending
    │   │   └── LinkDetachedError         the management link was detached by the peer
    │   ├── OperationTimeoutError         no reply in time (also a builtin TimeoutError)
    │   ├── ProtocolMismatchError         the peer does not speak AMQP 1.0 (not retried)
    │   └── ClientClosedError             the client was closed
    ├── ProtocolError                     a reply that does not follow the protocol
    └── OperationError                    the service answered with a failure status
        ├── BadRequestError               400, com.microsoft:argument-error
        ├── UnauthorizedError             401 / 403, amqp:unauthorized-access
        ├── NotFoundError                 404, amqp:not-found, message-/session-not-found
        ├── ConflictError                 409, com.microsoft:entity-already-exists
        ├── LockLostError                 410
        │   ├── MessageLockLostError      com.microsoft:message-lock-lost
        │   └── SessionLockLostError      com.microsoft:session-lock-lost
        ├── SessionLockedElsewhereError   com.microsoft:session-cannot-be-locked
        ├── ServerBusyError               503, com.microsoft:server-busy        (retryable)
        ├── ServerTimeoutError            408, com.microsoft:timeout            (retryable)
        └── InternalServerError           500 and other 5xx                     (retryable)

    UnsupportedLockTargetError            (also a TypeError) the lock renewer cannot keep
                                          this object's cached lock expiry in step

``ConnectionLostError.may_have_been_applied`` is ``True`` when a request that is not
idempotent (schedule-message, add-rule, receive-by-sequence-number,
update-disposition) was written to the wire before the connection was lost: the
service may or may not have applied it, so it is not replayed automatically.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "BadRequestError",
    "ClientClosedError",
    "ConflictError",
    "ConnectionLostError",
    "InternalServerError",
    "LinkDetachedError",
    "LockLostError",
    "MessageLockLostError",
    "NotFoundError",
    "OperationError",
    "OperationTimeoutError",
    "ProtocolError",
    "ProtocolMismatchError",
    "ServerBusyError",
    "ServerTimeoutError",
    "ServiceBusManagementError",
    "SessionLockLostError",
    "SessionLockedElsewhereError",
    "TransportError",
    "UnauthorizedError",
    "UnsupportedLockTargetError",
    "attach_refused",
    "error_for_status",
]


class ServiceBusManagementError(Exception):
    """Root of every error sbmgmt raises."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        operation: str | None = None,
        status_code: int | None = None,
        error_condition: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.operation = operation
        self.status_code = status_code
        self.error_condition = error_condition
        self.description = description

    def __str__(self) -> str:
        return self.message


class TransportError(ServiceBusManagementError):
    """The request did not complete because of the connection, not the service's answer."""

    retryable = True


class ConnectionLostError(TransportError):
    """The connection or the management link was lost while the request was pending."""

    def __init__(
        self,
        message: str,
        *,
        operation: str | None = None,
        may_have_been_applied: bool = False,
        error_condition: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(
            message,
            operation=operation,
            error_condition=error_condition,
            description=description,
        )
        self.may_have_been_applied = may_have_been_applied


class LinkDetachedError(ConnectionLostError):
    """The peer detached the management link (or refused to attach it)."""


class OperationTimeoutError(TransportError, TimeoutError):
    """No reply arrived before the request's deadline."""


class ProtocolMismatchError(TransportError):
    """The peer answered with another protocol's header (e.g. AMQP 0-9-1): not Service Bus."""

    retryable = False


class ClientClosedError(TransportError):
    """The client was closed before or while the request was pending."""

    retryable = False


class ProtocolError(ServiceBusManagementError):
    """A reply (or a request, on the fake's side) that does not follow the wire format."""


class OperationError(ServiceBusManagementError):
    """The service answered the request with a failure status."""


class BadRequestError(OperationError):
    """400: the service refused the request's arguments."""


class UnauthorizedError(OperationError):
    """401 / 403: missing, invalid or expired credentials, or not enough rights."""


class NotFoundError(OperationError):
    """404: the entity, message, session or rule does not exist."""


class ConflictError(OperationError):
    """409: the thing being created already exists (for example a rule of that name)."""


class LockLostError(OperationError):
    """410: the lock expired or was lost; the message or session must be received again."""


class MessageLockLostError(LockLostError):
    """410 com.microsoft:message-lock-lost."""


class SessionLockLostError(LockLostError):
    """410 com.microsoft:session-lock-lost."""


class SessionLockedElsewhereError(OperationError):
    """com.microsoft:session-cannot-be-locked: another receiver holds the session lock.

    The service refuses the session receiver's attach (or detaches it) with this
    condition; nothing can be done with the session until its holder lets go or its
    lock expires.
    """


class ServerBusyError(OperationError):
    """503 com.microsoft:server-busy: the service is throttling; retry later."""

    retryable = True


class ServerTimeoutError(OperationError):
    """408 com.microsoft:timeout: the service did not finish in its time."""

    retryable = True


class InternalServerError(OperationError):
    """500 (or another 5xx): a transient failure in the service."""

    retryable = True


class UnsupportedLockTargetError(ServiceBusManagementError, TypeError):
    """The lock renewer was given an object whose own cached lock expiry it cannot update.

    The official SDKs check the expiry they cached on a received message or a session
    before they settle or receive; a renewer that renewed on the service only would let
    that cache run out. An object of an SDK version whose cache the renewer does not
    know is refused at registration instead.
    """


# The one table from (status code, error condition) to exception class. A condition
# decides first; the status code decides when the condition is absent or unknown.
_BY_CONDITION: Mapping[str, type[OperationError]] = {
    "com.microsoft:message-lock-lost": MessageLockLostError,
    "com.microsoft:session-lock-lost": SessionLockLostError,
    "com.microsoft:session-cannot-be-locked": SessionLockedElsewhereError,
    "amqp:not-found": NotFoundError,
    "com.microsoft:message-not-found": NotFoundError,
    "com.microsoft:session-not-found": NotFoundError,
    "com.microsoft:entity-not-found": NotFoundError,
    "amqp:unauthorized-access": UnauthorizedError,
    "com.microsoft:argument-error": BadRequestError,
    "com.microsoft:argument-out-of-range": BadRequestError,
    "com.microsoft:entity-already-exists": ConflictError,
    "com.microsoft:server-busy": ServerBusyError,
    "com.microsoft:timeout": ServerTimeoutError,
    "amqp:internal-error": InternalServerError,
}

_BY_STATUS: Mapping[int, type[OperationError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: UnauthorizedError,
    404: NotFoundError,
    408: ServerTimeoutError,
    409: ConflictError,
    410: LockLostError,
    500: InternalServerError,
    503: ServerBusyError,
}


def error_for_status(
    operation: str,
    status_code: int,
    error_condition: str | None = None,
    description: str | None = None,
) -> OperationError:
    """Build the typed exception for a failed reply (status code not 2xx)."""
    cls = _BY_CONDITION.get(error_condition or "") or _BY_STATUS.get(status_code)
    if cls is None:
        cls = InternalServerError if status_code >= 500 else OperationError
    detail = f": {description}" if description else ""
    condition = f" ({error_condition})" if error_condition else ""
    return cls(
        f"{operation} failed with status {status_code}{condition}{detail}",
        operation=operation,
        status_code=status_code,
        error_condition=error_condition,
        description=description,
    )


def attach_refused(
    what: str, condition: str | None, description: str | None
) -> ServiceBusManagementError:
    """The error for ``what`` (e.g. "attaching q/$management") when the peer refused the
    link (or detached it) with ``condition``: the table's class for it, else
    :class:`LinkDetachedError`."""
    message = f"{what} was refused ({condition or 'no error condition'})" + (
        f": {description}" if description else ""
    )
    kind = type(error_for_status("attach", 0, condition, description))
    if kind is OperationError:
        return LinkDetachedError(message, operation="attach", error_condition=condition,
                                 description=description)
    return kind(message, operation="attach", error_condition=condition, description=description)
