"""The exceptions sbmgmt raises, and the one table that maps replies to them.

Every exception carries ``operation``, ``status_code``, ``error_condition`` and
``description`` (``None`` where they do not apply). ``retryable`` tells whether the
kind of failure is transient (the same request may succeed if sent again); whether a
request *is* sent again also depends on its operation's idempotence (docs/errors.md).

```text
    ServiceBusManagementError
    ├── TransportError                    the request may not have reached the service
    │   ├── ConnectionLostError           connection or link lost while the request was pending
    │   │   ├── ConnectFailedError        the client's first connection could not be opened
    │   │   ├── LinkDetachedError         the management link was detached by the peer
    │   │   ├── TransactionLostError      the transaction's connection was lost: nothing committed
    │   │   └── TransactionOutcomeUnknownError  a commit's outcome never arrived
    │   ├── OperationTimeoutError         no reply in time (also a builtin TimeoutError)
    │   ├── ProtocolMismatchError         the peer does not speak AMQP 1.0 (not retried)
    │   └── ClientClosedError             the client was closed
    ├── ProtocolError                     a reply that does not follow the protocol
    └── OperationError                    the service answered with a failure status
        ├── BadRequestError               400, com.microsoft:argument-error
        ├── UnauthorizedError             401 / 403, amqp:unauthorized-access
        ├── NotFoundError                 404, amqp:not-found, message-/session-not-found
        │   └── ScheduledMessagesNotFoundError  cancel: numbers that are not scheduled messages
        ├── ConflictError                 409, com.microsoft:entity-already-exists
        ├── QuotaExceededError            amqp:resource-limit-exceeded (a quota of the tier)
        ├── LockLostError                 410
        │   ├── MessageLockLostError      com.microsoft:message-lock-lost
        │   └── SessionLockLostError      com.microsoft:session-lock-lost
        ├── SessionLockedElsewhereError   com.microsoft:session-cannot-be-locked
        ├── ServerBusyError               503, com.microsoft:server-busy        (retryable)
        ├── ServerTimeoutError            408, com.microsoft:timeout            (retryable*)
        ├── InternalServerError           500 and other 5xx                     (retryable*)
        └── TransactionRefusedError       the coordinator (or a transactional request) refused
            ├── TransactionDeclareError   declare refused: no transaction was opened
            ├── TransactionUnknownError   amqp:transaction:unknown-id
            ├── TransactionTimeoutError   amqp:transaction:timeout: open too long, rolled back
            └── TransactionRolledBackError  amqp:transaction:rollback

    UnsupportedLockTargetError            (also a TypeError) the lock renewer cannot keep
                                          this object's cached lock expiry in step
    WrongEntityError                      (also a ValueError) an entity that cannot be used
                                          so: a subscription as a target, the source itself
    DuplicatesRefusedError                (also a ValueError) copies a target's duplicate
                                          detection would drop, with no choice made for them
    PurgeError                            a purge stopped before it finished: how many it
    └── PurgeCancelledError               deleted, and the error that stopped it (its cause)
```

Every transaction error is also a [TransactionError][sbmgmt.errors.TransactionError]
(``except TransactionError`` catches them all); none is retryable.

``may_have_been_applied`` is ``True`` when a request that is not idempotent
(schedule-message, add-rule, receive-by-sequence-number, update-disposition) may or
may not have been applied by the service: it was written to the wire before the
connection was lost (ConnectionLostError), or the service answered 500 or 408, whose
outcome is unknown (* such requests are not replayed automatically; idempotent ones
are). A 503 server-busy reply means "not applied": every request is retried after it,
except one in a transaction (a transaction's work is never replayed).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "BadRequestError",
    "ClientClosedError",
    "ConflictError",
    "QuotaExceededError",
    "ConnectCause",
    "ConnectFailedError",
    "ConnectionLostError",
    "DuplicatesRefusedError",
    "ExportFormatError",
    "InternalServerError",
    "LinkDetachedError",
    "LockLostError",
    "MessageLockLostError",
    "NotFoundError",
    "OUTCOME_UNKNOWN",
    "OperationError",
    "OperationTimeoutError",
    "ProtocolError",
    "ProtocolMismatchError",
    "PurgeCancelledError",
    "PurgeError",
    "ScheduledMessagesNotFoundError",
    "ServerBusyError",
    "ServerTimeoutError",
    "ServiceBusManagementError",
    "SessionLockLostError",
    "SessionLockedElsewhereError",
    "TransactionDeclareError",
    "TransactionError",
    "TransactionLostError",
    "TransactionOutcomeUnknownError",
    "TransactionRefusedError",
    "TransactionRolledBackError",
    "TransactionTimeoutError",
    "TransactionUnknownError",
    "TransportError",
    "UnauthorizedError",
    "UnsupportedLockTargetError",
    "WrongEntityError",
    "attach_refused",
    "error_for_status",
    "transaction_refusal",
    "reply_status_for",
]


class ServiceBusManagementError(Exception):
    """Root of every error sbmgmt raises: ``except ServiceBusManagementError`` catches them all.

    Args:
        message: The error's text (``str(error)``); it never holds a key or a token.
        operation: The operation that failed (``com.microsoft:renew-lock``, ``attach``...).
        status_code: The reply's status code, when the service answered.
        error_condition: The reply's AMQP error condition
            (``com.microsoft:message-lock-lost``...), when it gave one.
        description: The reply's status description, when it gave one.

    Raises nothing (an exception class).

    Attributes:
        retryable: Whether this kind of failure is transient (the same request may succeed if
            sent again); whether it *is* sent again also depends on the operation
            (docs/errors.md).
        may_have_been_applied: True when a request that is not idempotent may or may not have
            been applied by the service: check before sending it again.
    """

    retryable: bool = False
    #: The request was not idempotent and the service may have applied it.
    may_have_been_applied: bool = False

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
    """The connection or the management link was lost while the request was pending.

    Args:
        message: The error's text.
        operation: The operation that failed.
        may_have_been_applied: Whether the request was on the wire, and is not idempotent: the
            service may have applied it (it is then not replayed).
        error_condition: The AMQP error condition the connection or link closed with.
        description: Its description.

    Raises nothing (an exception class).
    """

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


class ConnectCause(str, enum.Enum):
    """Why a connection could not be opened (:attr:`ConnectFailedError.cause`)."""

    REFUSED = "refused"
    """Nothing accepts connections on that port (yet): retryable."""
    NAME_NOT_FOUND = "name-not-found"
    """The host name does not resolve: not retryable (check the endpoint)."""
    TLS = "tls"
    """The TLS handshake failed (a certificate, or a port that does not speak TLS):
    not retryable."""
    OTHER = "other"
    """Unreachable, timed out, or closed by the peer before the AMQP open: retryable."""


class ConnectFailedError(ConnectionLostError):
    """The client's first connection could not be opened: the requests (session locks,
    transaction declares) waiting for it fail at once (nothing was sent, so
    ``may_have_been_applied`` is False).

    ``retryable`` is True only where trying again may help (refused, unreachable). A
    client whose connection was open once reconnects instead while requests wait.

    Args:
        message: The error's text (it names the host, the port and the cause).
        host: The host name the client tried.
        port: The port it tried.
        cause: Why the connection could not be opened
            ([ConnectCause][sbmgmt.errors.ConnectCause]).
        operation: The operation that was waiting for the connection, if one was.

    Raises nothing (an exception class).
    """

    def __init__(
        self, message: str, *, host: str, port: int, cause: ConnectCause,
        operation: str | None = None,
    ) -> None:
        super().__init__(message, operation=operation, description=cause.value)
        self.host = host
        self.port = port
        self.cause = cause
        self.retryable = cause in (ConnectCause.REFUSED, ConnectCause.OTHER)


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


class ExportFormatError(ServiceBusManagementError, ValueError):
    """A line of an export file that is not the export format (``sbmgmt.actions.export``):
    not JSON, another version, a field of the wrong kind.

    Args:
        message: What is wrong, and on which line.
        line: The line's number, counted from 1.

    Raises nothing (an exception class).
    """

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


class OperationError(ServiceBusManagementError):
    """The service answered the request with a failure status."""


class BadRequestError(OperationError):
    """400: the service refused the request's arguments."""


class UnauthorizedError(OperationError):
    """401 / 403: missing, invalid or expired credentials, or not enough rights."""


class NotFoundError(OperationError):
    """404: the entity, message, session or rule does not exist."""


class ScheduledMessagesNotFoundError(NotFoundError):
    """404 com.microsoft:message-not-found to cancel-scheduled-message: some of the sequence
    numbers are not scheduled messages of the entity (active, deferred, already cancelled or
    never used). The service words it "Messages not found. Missing sequence numbers: …".

    Args:
        message: The error's text.
        sequence_numbers: The numbers the reply names as missing.
        operation: As for [ServiceBusManagementError][sbmgmt.errors.ServiceBusManagementError].
        status_code: The reply's status code (404).
        error_condition: The reply's error condition.
        description: The reply's status description (the service's text).

    Raises nothing (an exception class).

    Attributes:
        sequence_numbers: The numbers the reply names as missing, in its order. Whether the
            others of the request were cancelled the reply does not say (the fake namespace
            refuses the request as a whole and cancels none).
    """

    def __init__(
        self,
        message: str,
        *,
        sequence_numbers: tuple[int, ...],
        operation: str | None = None,
        status_code: int | None = None,
        error_condition: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(message, operation=operation, status_code=status_code,
                         error_condition=error_condition, description=description)
        self.sequence_numbers = sequence_numbers


class ConflictError(OperationError):
    """409: the thing being created already exists (for example a rule of that name)."""


class QuotaExceededError(OperationError):
    """A quota of the namespace's tier was reached (AMQP ``amqp:resource-limit-exceeded``,
    the condition the .NET and Java clients raise as ``QuotaExceededException``): the size
    of an entity, the entities of a namespace, the subscriptions or filters of a topic, the
    messages of a transaction. Retrying the same request does not help; the service's
    quotas are listed on its "Service Bus quotas" page."""


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
    """408 com.microsoft:timeout: the service did not finish in its time (the request's
    outcome is unknown)."""

    retryable = True


class InternalServerError(OperationError):
    """500 (or another 5xx): a transient failure in the service (the request's outcome
    is unknown)."""

    retryable = True


#: Failure replies after which the request may or may not have been applied.
OUTCOME_UNKNOWN: tuple[type[OperationError], ...] = (ServerTimeoutError, InternalServerError)


class TransactionError(ServiceBusManagementError):
    """Base of every error about a transaction (its classes are also transport or
    operation errors); never retryable: a transaction's work is not replayed."""

    retryable = False


class TransactionLostError(TransactionError, ConnectionLostError):
    """The connection (or the coordinator link) was lost while the transaction was
    open: the service rolls it back, so nothing done under it was committed."""


class TransactionOutcomeUnknownError(TransactionError, ConnectionLostError):
    """A commit was sent but its outcome never arrived (connection lost, or no answer
    in time): it may or may not have been applied (``may_have_been_applied`` is True)."""


class TransactionRefusedError(TransactionError, OperationError):
    """The coordinator refused a declare or a discharge, or the service refused a
    request because of its transaction (``error_condition`` says why)."""


class TransactionDeclareError(TransactionRefusedError):
    """The coordinator refused to declare a transaction (or its link): none was opened."""


class TransactionUnknownError(TransactionRefusedError):
    """amqp:transaction:unknown-id: no such open transaction on this connection (never
    declared here, already discharged, or declared on another connection)."""


class TransactionTimeoutError(TransactionRefusedError):
    """amqp:transaction:timeout: the transaction stayed open too long (the service's
    limit is 2 minutes) and was rolled back; nothing was committed."""


class TransactionRolledBackError(TransactionRefusedError):
    """amqp:transaction:rollback: the service rolled the transaction back instead of
    committing it (for example a settled lock was lost); nothing was committed."""


class UnsupportedLockTargetError(ServiceBusManagementError, TypeError):
    """The lock renewer was given an object whose own cached lock expiry it cannot update.

    The official SDKs check the expiry they cached on a received message or a session
    before they settle or receive; a renewer that renewed on the service only would let
    that cache run out. An object of an SDK version whose cache the renewer does not
    know is refused at registration instead.
    """


class WrongEntityError(ServiceBusManagementError, ValueError):
    """An entity that cannot be used as asked, found before anything was locked or
    changed: a subscription or a dead-letter queue named as where to send (nothing is sent
    to either), or the source named as its own target. Not retryable: the same command
    fails the same way."""


class DuplicatesRefusedError(ServiceBusManagementError, ValueError):
    """A resubmit, move or import refused before anything was locked or sent: its target
    detects duplicates, and copies keeping their MessageId would be dropped by it (the
    service accepts a duplicate's send and discards it). ``message_ids`` names them; the
    caller chooses what to do with them (``sbmgmt.actions.targets.IfDuplicate``).

    Args:
        message: The error's text.
        message_ids: The MessageIds at risk, as text.

    Raises nothing (an exception class).
    """

    def __init__(self, message: str, *, message_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message_ids = message_ids


class PurgeError(ServiceBusManagementError):
    """A purge (``purge_messages``) stopped before it finished.

    The error that stopped it is its ``__cause__`` (and ``error``); what it did before is
    counted: ``deleted`` messages were confirmed deleted, and ``uncertain_requests``
    batch-delete requests were sent whose replies never came (each may have deleted up to
    ``batch_size`` more). No message is deleted twice: run the purge again to finish.

    Args:
        message: The error's text.
        deleted: The messages whose deletion the service confirmed.
        uncertain_requests: The requests whose outcome is unknown.
        error: What stopped the purge (None for a cancellation).

    Raises nothing (an exception class).
    """

    def __init__(self, message: str, *, deleted: int, uncertain_requests: int = 0,
                 error: BaseException | None = None) -> None:
        super().__init__(message, operation="com.microsoft:batch-delete-messages")
        self.deleted = deleted
        self.uncertain_requests = uncertain_requests
        self.error = error
        self.retryable = isinstance(error, ServiceBusManagementError) and error.retryable
        self.may_have_been_applied = uncertain_requests > 0


class PurgeCancelledError(PurgeError):
    """A purge was cancelled (its ``cancel`` event was set): it sent no request after
    that and waited for the ones in flight; ``deleted`` counts what it deleted."""


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
    "amqp:resource-limit-exceeded": QuotaExceededError,
    "com.microsoft:argument-error": BadRequestError,
    "com.microsoft:argument-out-of-range": BadRequestError,
    "com.microsoft:entity-already-exists": ConflictError,
    "com.microsoft:server-busy": ServerBusyError,
    "com.microsoft:timeout": ServerTimeoutError,
    "amqp:internal-error": InternalServerError,
    "amqp:transaction:unknown-id": TransactionUnknownError,
    "amqp:transaction:timeout": TransactionTimeoutError,
    "amqp:transaction:rollback": TransactionRolledBackError,
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
    """Build the typed exception for a failed reply (a status code that is not 2xx).

    The one table from reply to exception: a known error condition decides first, the status code
    when the condition is absent or unknown (the module's tree above).

    Args:
        operation: The operation the reply answers.
        status_code: The reply's status code.
        error_condition: The reply's error condition, if any.
        description: The reply's status description, if any.

    Returns:
        The exception (not raised): an [OperationError][sbmgmt.errors.OperationError]
        subclass, [InternalServerError][sbmgmt.errors.InternalServerError] for an unknown
        5xx, ``OperationError`` itself for another unknown status.

    Raises nothing.
    """
    cls = _BY_CONDITION.get(error_condition or "") or _BY_STATUS.get(status_code)
    if cls is None:
        cls = InternalServerError if status_code >= 500 else OperationError
    return cls(
        f"{operation} failed with status {status_code}{_why(error_condition, description)}",
        operation=operation,
        status_code=status_code,
        error_condition=error_condition,
        description=description,
    )


def transaction_refusal(
    operation: str, error_condition: str | None, description: str | None
) -> TransactionRefusedError:
    """The typed error for a declare or discharge the transaction coordinator rejected.

    A rejected outcome carries only its condition, no status code. A condition the table maps to
    a transaction error decides; any other refuses a declare as
    [TransactionDeclareError][sbmgmt.errors.TransactionDeclareError], a discharge as
    [TransactionRefusedError][sbmgmt.errors.TransactionRefusedError].

    Args:
        operation: ``"declare"`` or ``"discharge"``.
        error_condition: The rejection's error condition, if any.
        description: Its description, if any.

    Returns:
        The exception (not raised).

    Raises nothing.
    """
    cls = _BY_CONDITION.get(error_condition or "")
    if cls is None or not issubclass(cls, TransactionRefusedError):
        cls = TransactionDeclareError if operation == "declare" else TransactionRefusedError
    return cls(
        f"{operation} was refused by the transaction coordinator"
        f"{_why(error_condition, description)}",
        operation=operation,
        error_condition=error_condition,
        description=description,
    )


def _why(error_condition: str | None, description: str | None) -> str:
    """`` (condition): description`` for an error message, each part when present."""
    condition = f" ({error_condition})" if error_condition else ""
    return condition + (f": {description}" if description else "")


def reply_status_for(error: type[OperationError]) -> tuple[int, str | None]:
    """The status code and error condition of a reply that maps to ``error``.

    The table of [error_for_status][sbmgmt.errors.error_for_status] read backwards;
    ``sbmgmt.testing``'s mock answers with it. An error the table names by its condition only
    comes with the status the fake namespace answers it with (410 for
    ``SessionLockedElsewhereError``, 400 for the transaction refusals).

    Args:
        error: An [OperationError][sbmgmt.errors.OperationError] subclass.

    Returns:
        ``(status_code, error_condition)``; the condition is None where the status alone
        maps to ``error``.

    Raises:
        ValueError: No reply maps to ``error`` (``OperationError`` itself).
    """
    condition = next((c for c, cls in _BY_CONDITION.items() if cls is error), None)
    for klass in error.__mro__:
        status = next((s for s, cls in _BY_STATUS.items() if cls is klass), None)
        if status is not None:
            return status, condition
    status = _STATUS_OF_CONDITION_ONLY.get(error)
    if condition is not None and status is not None:
        return status, condition
    raise ValueError(f"no reply status maps to {error.__name__}")


#: The status of a reply for the errors the table knows by their condition only: a request
#: refused for its transaction (400, as the fake answers; the service's code is not
#: documented), a session locked by another receiver (410, as the service answers) and a
#: quota reached (403, as the fake answers; the service's code is not documented).
_STATUS_OF_CONDITION_ONLY: dict[type[OperationError], int] = {
    TransactionUnknownError: 400,
    TransactionTimeoutError: 400,
    TransactionRolledBackError: 400,
    SessionLockedElsewhereError: 410,
    QuotaExceededError: 403,
}


def attach_refused(
    what: str, condition: str | None, description: str | None
) -> ServiceBusManagementError:
    """The error for a link the peer refused to attach (or detached).

    Args:
        what: What was attached, for the message (``"attaching q/$management"``).
        condition: The error condition the peer gave, if any.
        description: Its description, if any.

    Returns:
        The exception (not raised): the table's class for ``condition``, else
        [LinkDetachedError][sbmgmt.errors.LinkDetachedError].

    Raises nothing.
    """
    message = f"{what} was refused ({condition or 'no error condition'})" + (
        f": {description}" if description else ""
    )
    kind = type(error_for_status("attach", 0, condition, description))
    if kind is OperationError:
        return LinkDetachedError(message, operation="attach", error_condition=condition,
                                 description=description)
    return kind(message, operation="attach", error_condition=condition, description=description)
