"""Exit codes, the one table from exceptions to them, and secret scrubbing for stderr."""

from __future__ import annotations

import enum
import re
import traceback
from collections.abc import Iterable

from ..errors import (
    BadRequestError,
    ConflictError,
    ConnectFailedError,
    LockLostError,
    NotFoundError,
    ProtocolError,
    ProtocolMismatchError,
    ServiceBusManagementError,
    SessionLockedElsewhereError,
    TransportError,
    UnauthorizedError,
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
    """A destructive command (``purge``) was not confirmed: declined at the prompt, or
    stdin is not a terminal and ``--yes`` was not given. Nothing was changed."""
    INTERRUPTED = 130
    """Interrupted with Ctrl-C."""


class UsageProblem(ValueError):
    """A command-line argument or input that the CLI itself rejects."""


class NotConfirmed(UsageProblem):
    """A destructive command the user did not confirm (or could not: no terminal)."""


# The one table, first match wins: subclasses before their bases.
_EXIT_CODES: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (NotConfirmed, ExitCode.NOT_CONFIRMED),
    (UnauthorizedError, ExitCode.AUTH),
    (NotFoundError, ExitCode.NOT_FOUND),
    (LockLostError, ExitCode.LOCK_LOST),
    (SessionLockedElsewhereError, ExitCode.SESSION_LOCKED),
    (ConflictError, ExitCode.CONFLICT),
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
    """A one-line description of an error for stderr."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    text = " ".join(str(error).split())
    if isinstance(error, (ServiceBusManagementError, UsageProblem)):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


_SECRET_SETTINGS = re.compile(
    r"(SharedAccessKey|SharedAccessSignature)\s*=\s*([^;]+)", re.IGNORECASE
)
_SAS_SIGNATURE = re.compile(r"(sig=)[^&\s;\"']+", re.IGNORECASE)
_MASK = "***"


# What a key, a signature or a token is made of (base64, URL-safe base64, URL escapes):
# a known secret is replaced only where none of these touches it on either side (a
# padding ``=`` only ends one: ``Key=b`` holds the token ``b``).
_TOKEN_BEFORE = r"[A-Za-z0-9+/%_\-]"
_TOKEN_AFTER = r"[A-Za-z0-9+/=%_\-]"


class Scrubber:
    """Replaces known secrets (and anything shaped like a key or signature) with ``***``.

    A known secret is replaced as a whole token only: a one-letter key ``b`` hides the
    ``b`` of ``SharedAccessKey=b``, never the one inside ``problem``.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        for secret in secrets:
            self.add(secret)

    def add(self, text: str | None) -> None:
        """Remember a secret: a connection string, a key or a token."""
        if not text or not text.strip():
            return
        self._secrets.add(text.strip())
        for match in _SECRET_SETTINGS.finditer(text):
            self._secrets.add(match.group(2).strip())
        longest_first = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile(
            f"(?<!{_TOKEN_BEFORE})(?:{'|'.join(map(re.escape, longest_first))})"
            f"(?!{_TOKEN_AFTER})"
        )

    def __call__(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(_MASK, text)
        text = _SECRET_SETTINGS.sub(lambda m: f"{m.group(1)}={_MASK}", text)
        return _SAS_SIGNATURE.sub(lambda m: f"{m.group(1)}{_MASK}", text)

    def traceback(self, error: BaseException) -> str:
        """The error's formatted traceback, scrubbed."""
        return self("".join(traceback.format_exception(error)))
