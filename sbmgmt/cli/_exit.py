"""Exit codes and the one table from exceptions to them (secrets are scrubbed for stderr by
:class:`sbmgmt.auth.Scrubber`, re-exported here)."""

from __future__ import annotations

import enum
import os

from ..auth import Scrubber
from ..errors import (
    BadRequestError,
    ConflictError,
    ConnectFailedError,
    DuplicatesRefusedError,
    LockLostError,
    NotFoundError,
    ProtocolError,
    ProtocolMismatchError,
    QuotaExceededError,
    ServiceBusManagementError,
    SessionLockedElsewhereError,
    TransportError,
    UnauthorizedError,
    WrongEntityError,
)

__all__ = ["ExitCode", "NotConfirmed", "Scrubber", "UsageProblem", "describe_error",
           "exit_code_for"]


class ExitCode(enum.IntEnum):
    """What ``sbmgmt`` exits with; scripts may rely on these numbers."""

    OK = 0
    ERROR = 1
    """Anything not listed below (an unexpected failure)."""
    BAD_ARGUMENTS = 2
    """Bad command-line arguments or input, or the service answered 400."""
    AUTH = 3
    """Missing, invalid or expired credentials, or not enough rights (401 / 403)."""
    NOT_FOUND = 4
    """The entity, message, session or rule does not exist (404)."""
    LOCK_LOST = 5
    """The message or session lock expired or is held elsewhere (410)."""
    CONFLICT = 6
    """The thing being created already exists (409, e.g. a rule of that name)."""
    TRANSIENT = 7
    """Connection lost, timeout, server busy or internal error: trying again may work."""
    PROTOCOL = 8
    """The service answered something that does not follow the protocol."""
    SESSION_LOCKED = 9
    """The session is locked by another receiver (com.microsoft:session-cannot-be-locked)."""
    ENDPOINT = 10
    """The endpoint cannot be used as given: its host name does not resolve, or the TLS
    handshake failed. Retrying will not help; check the connection string."""
    NOT_CONFIRMED = 11
    """A destructive command (``purge``, ``deferred complete`` / ``dead-letter``) was not
    confirmed: declined at the prompt, or stdin is not a terminal and ``--yes`` was not
    given. Nothing was changed."""
    WRONG_ENTITY = 12
    """An entity that cannot be used so (a subscription or a dead-letter queue as where to
    send, the source as its own target), found before anything was locked or changed.
    Trying again will not help."""
    DUPLICATES = 13
    """A resubmit, move or import refused before anything was locked or sent: its target
    detects duplicates and would drop copies that keep their MessageId; choose
    ``--if-duplicate``. Nothing was changed."""
    QUOTA = 14
    """A quota of the namespace's tier was reached (``QuotaExceededError``: the service's
    ``amqp:resource-limit-exceeded``): trying again will not help until something is
    removed or the namespace's tier changes."""
    INTERRUPTED = 130
    """Interrupted with Ctrl-C."""


class UsageProblem(ValueError):
    """A command-line argument or input that the CLI itself rejects."""


class NotConfirmed(UsageProblem):
    """A destructive command the user did not confirm (or could not: no terminal)."""


# The one table, first match wins: subclasses before their bases.
_EXIT_CODES: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (NotConfirmed, ExitCode.NOT_CONFIRMED),
    (WrongEntityError, ExitCode.WRONG_ENTITY),
    (DuplicatesRefusedError, ExitCode.DUPLICATES),
    (UnauthorizedError, ExitCode.AUTH),
    (NotFoundError, ExitCode.NOT_FOUND),
    (LockLostError, ExitCode.LOCK_LOST),
    (SessionLockedElsewhereError, ExitCode.SESSION_LOCKED),
    (ConflictError, ExitCode.CONFLICT),
    (QuotaExceededError, ExitCode.QUOTA),
    (BadRequestError, ExitCode.BAD_ARGUMENTS),
    (ProtocolMismatchError, ExitCode.PROTOCOL),
    (ConnectFailedError, ExitCode.ENDPOINT),
    (TransportError, ExitCode.TRANSIENT),
    (ProtocolError, ExitCode.PROTOCOL),
    (ServiceBusManagementError, ExitCode.ERROR),
    (KeyboardInterrupt, ExitCode.INTERRUPTED),
    (ValueError, ExitCode.BAD_ARGUMENTS),
    (OSError, ExitCode.BAD_ARGUMENTS),
)


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code of an error (retryable ones count as transient: a refused
    connection is, an unknown host name is not)."""
    if isinstance(error, ServiceBusManagementError) and error.retryable:
        return ExitCode.TRANSIENT
    for error_type, code in _EXIT_CODES:
        if isinstance(error, error_type):
            return code
    return ExitCode.ERROR


def describe_error(error: BaseException) -> str:
    """A one-line description of an error for stderr, in the user's words: the library's
    and the CLI's own messages as they are, a file's trouble as a sentence with its path,
    a bad value's message without its class, and anything else as unexpected (``--debug``
    shows its traceback); never a Python class name alone."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    text = " ".join(str(error).split())
    if isinstance(error, (ServiceBusManagementError, UsageProblem)):
        return text
    if isinstance(error, OSError):
        return _file_trouble(error)
    if isinstance(error, (ValueError, TypeError)) and text:
        return text
    return f"unexpected error: {text} (--debug shows where)" if text else (
        "unexpected error (--debug shows where)")


#: What an operating system's error on a file is, said of its path.
_FILE_TROUBLES: tuple[tuple[type[OSError], str], ...] = (
    (FileNotFoundError, "{path}: no such file or folder"),
    (IsADirectoryError, "{path} is a folder, not a file"),
    (NotADirectoryError, "{path}: a part of the path is not a folder"),
    (PermissionError, "{path}: not allowed (permission denied)"),
    (FileExistsError, "{path} already exists"),
)


def _file_trouble(error: OSError) -> str:
    """``PATH: what is wrong`` for an error on a file (the system's words for the kinds
    not listed); the system's words alone when no path is known."""
    system = error.strerror or " ".join(str(error).split()) or "the system refused"
    if error.filename is None:
        return system
    said = next((words for kind, words in _FILE_TROUBLES if isinstance(error, kind)),
                f"{{path}}: {system}")
    return said.format(path=os.fsdecode(error.filename))
