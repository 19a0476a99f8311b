"""What the fake namespace refuses, as the service's status codes and error conditions.

Each error carries the ``status_code`` a management reply uses and the AMQP
``condition`` a refused link, a rejected delivery or a reply's ``errorCondition``
uses, so the store raises one thing and each front end reports it its own way.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "ConfigError",
    "EntityAlreadyExists",
    "EntityNotFound",
    "FakeServiceError",
    "InternalError",
    "LinkLimitExceeded",
    "MessageLockLost",
    "MessageNotFound",
    "NoSessionAvailable",
    "QuotaExceeded",
    "ServerBusy",
    "SessionCannotBeLocked",
    "SessionLockLost",
    "SessionNotFound",
    "TransactionRolledBack",
    "TransactionTimedOut",
    "TransactionUnknown",
    "Unauthorized",
]


class FakeServiceError(Exception):
    """A refusal with the service's status code and AMQP error condition."""

    status_code = 500
    condition = "amqp:internal-error"

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class InternalError(FakeServiceError):
    """500: the fake itself failed on this request."""


class LinkLimitExceeded(FakeServiceError):
    """A connection already holds as many links as the fake allows (``fakes.Limits``)."""

    status_code = 403
    condition = "amqp:resource-limit-exceeded"


class ArgumentError(FakeServiceError):
    """400: a bad argument."""

    status_code = 400
    condition = "com.microsoft:argument-error"


class ArgumentOutOfRange(FakeServiceError):
    """400: an argument outside the values the service can hold."""

    status_code = 400
    condition = "com.microsoft:argument-out-of-range"


class QuotaExceeded(FakeServiceError):
    """403: a quota of the namespace's tier is reached (entities, subscriptions, filters,
    messages in a transaction): the service's QuotaExceeded, ``amqp:resource-limit-exceeded``
    on AMQP (the SDKs' quota-exceeded error)."""

    status_code = 403
    condition = "amqp:resource-limit-exceeded"


class ServerBusy(FakeServiceError):
    """503: the namespace is throttled (``fakes._throttle``); "not applied", retried by the
    SDKs."""

    status_code = 503
    condition = "com.microsoft:server-busy"


class Unauthorized(FakeServiceError):
    """401: no valid token for this entity on this connection."""

    status_code = 401
    condition = "amqp:unauthorized-access"


class EntityNotFound(FakeServiceError):
    """404: no such queue, topic, subscription or rule."""

    status_code = 404
    condition = "amqp:not-found"

    @classmethod
    def of(cls, what: str) -> EntityNotFound:
        """The service's wording, by which the SDKs classify it (the JavaScript SDK matches
        ``The messaging entity .* could not be found``; the Python SDK the condition)."""
        return cls(f"The messaging entity '{what}' could not be found.")


class MessageNotFound(FakeServiceError):
    """404: no message with that sequence number in the expected state."""

    status_code = 404
    condition = "com.microsoft:message-not-found"

    @classmethod
    def not_scheduled(cls, sequence_numbers: list[int]) -> MessageNotFound:
        """cancel-scheduled-message of numbers that are not scheduled messages, in the
        service's words (quoted from its replies in MassTransit issue 926 and
        azure-service-bus issue 239; how it separates several numbers is not shown there)."""
        return cls("Messages not found. Missing sequence numbers: "
                   + ", ".join(map(str, sequence_numbers)))


class SessionNotFound(FakeServiceError):
    """404: no such session."""

    status_code = 404
    condition = "com.microsoft:session-not-found"


class NoSessionAvailable(FakeServiceError):
    """408: next-available-session found no unlocked session with messages."""

    status_code = 408
    condition = "com.microsoft:timeout"


class EntityAlreadyExists(FakeServiceError):
    """409: a rule (or entity) of that name exists."""

    status_code = 409
    condition = "com.microsoft:entity-already-exists"


class MessageLockLost(FakeServiceError):
    """410: the message lock expired or is not held."""

    status_code = 410
    condition = "com.microsoft:message-lock-lost"


class SessionLockLost(FakeServiceError):
    """410: the session lock expired or is not held by this client."""

    status_code = 410
    condition = "com.microsoft:session-lock-lost"


class SessionCannotBeLocked(FakeServiceError):
    """410: the session is locked by another receiver."""

    status_code = 410
    condition = "com.microsoft:session-cannot-be-locked"


class NotAllowed(FakeServiceError):
    """The operation is not allowed here (a transaction spanning two top-level entities)."""

    status_code = 400
    condition = "amqp:not-allowed"


class TransactionUnknown(FakeServiceError):
    """No such open transaction on this connection (never declared, discharged, or
    declared on another connection)."""

    status_code = 400
    condition = "amqp:transaction:unknown-id"


class TransactionTimedOut(FakeServiceError):
    """The transaction stayed open longer than the service allows and was rolled back."""

    status_code = 400
    condition = "amqp:transaction:timeout"


class TransactionRolledBack(FakeServiceError):
    """A commit could not apply everything, so nothing was applied."""

    status_code = 400
    condition = "amqp:transaction:rollback"


class ConfigError(ValueError):
    """An invalid Config.json; the message names the JSON path of the bad value."""
