"""The fake's log: one line for each thing it does that a person debugging a test wants.

The lines go to standard-library loggers under ``fakes`` (the application decides where
they end up: ``python -m fakes`` sends them to stderr or a file, a test's to pytest):

================== ======= ===========================================================
logger             level   one line for
================== ======= ===========================================================
fakes.connections  INFO    an AMQP connection opened (its peer) or closed (its peer, why)
fakes.links        INFO    a link attached or detached (entity, the client's role)
fakes.cbs          INFO    a ``$cbs`` put-token (audience, status; never the token)
fakes.management   INFO    a management request (operation, entity, status, time)
fakes.http         INFO    an HTTP request (method, path, status, time)
fakes.refusals     INFO    a request throttled or refused (what, why)
fakes.transfers    DEBUG   each message a client sends (entity, size) or receives
================== ======= ===========================================================

:class:`FakeLog` is the one object the fake's parts tell what happened; it writes the
line and keeps the running totals ``/metrics`` shows (:class:`~fakes._metrics.Counts`),
which it keeps whatever the level. A ``FakeLog`` made with level ``None`` writes nothing
(the embedded :class:`~fakes.FakeNamespace`'s default: a test suite's log stays its own);
``python -m fakes`` makes one at INFO.

Every method first checks whether its line would be written (its own level, then the
logger's ``isEnabledFor``), and only then formats it: a line not written costs a call and
two comparisons. Every line's text passes :class:`sbmgmt.auth.Scrubber` (the namespace's
keys, and anything shaped like a key or a SAS signature) before it reaches a logger; no
token is ever handed to the log in the first place.

Not thread-safe on its own: the server thread calls it under the namespace lock; the HTTP
port's workers call only :meth:`FakeLog.http_request`, whose count has a lock of its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from sbmgmt.amqp.envelope import Request
from sbmgmt.auth import Scrubber

from ._errors import FakeServiceError
from ._management import Reply
from ._metrics import Counts
from ._nodes.management import ManagementHandler

__all__ = ["FakeLog", "LoggedManagement", "parse_level"]

_CONNECTIONS = logging.getLogger("fakes.connections")
_LINKS = logging.getLogger("fakes.links")
_CBS = logging.getLogger("fakes.cbs")
_MANAGEMENT = logging.getLogger("fakes.management")
_HTTP = logging.getLogger("fakes.http")
_REFUSALS = logging.getLogger("fakes.refusals")
_TRANSFERS = logging.getLogger("fakes.transfers")
_INFO = logging.INFO
_DEBUG = logging.DEBUG
_OPERATION_PREFIX = "com.microsoft:"
#: The condition of a throttled request (``fakes._errors.ServerBusy``).
_SERVER_BUSY = "com.microsoft:server-busy"


def parse_level(level: int | str | None) -> int | None:
    """A level as ``logging`` numbers it, from a name (``"info"``, ``"DEBUG"``), a number or
    None (None, and ``"off"``: no lines); ValueError names what is allowed."""
    if level is None or isinstance(level, bool):
        if level is None:
            return None
        raise ValueError(f"a log level is a name or a number, not {level!r}")
    if isinstance(level, int):
        return level
    name = level.strip().upper()
    if name == "OFF":
        return None
    number = logging.getLevelName(name)  # the number for a known name (3.10 has no mapping)
    if not isinstance(number, int):
        raise ValueError(f"{level!r} is not a log level (DEBUG, INFO, WARNING, ERROR or OFF)")
    return number


def _role(client_sends: bool) -> str:
    return "sender" if client_sends else "receiver"


class FakeLog:
    """What the fake did: a line for each (at ``level`` and up, None: none) and the counts.

    ``secrets`` are the namespace's keys: masked wherever they would appear.
    """

    def __init__(self, level: int | str | None = None, secrets: Iterable[str] = ()) -> None:
        self.level = parse_level(level)
        self.counts = Counts()
        self._scrub = Scrubber(secrets)
        #: Open connections (by proton's pointer): their number and peer, for the close.
        self._open: dict[object, tuple[int, str]] = {}

    def _writes(self, logger: logging.Logger, level: int) -> bool:
        own = self.level
        return own is not None and level >= own and logger.isEnabledFor(level)

    def _write(self, logger: logging.Logger, level: int, text: str) -> None:
        logger.log(level, self._scrub(text))

    # --- AMQP ------------------------------------------------------------------------

    def connection_opened(self, pointer: object, number: int, peer: str) -> None:
        """A client's AMQP ``open`` was answered: connection ``number`` from ``peer``."""
        if pointer in self._open:
            return
        self._open[pointer] = (number, peer)
        counts = self.counts
        counts.connections_opened += 1
        counts.connections_open += 1
        if self._writes(_CONNECTIONS, _INFO):
            self._write(_CONNECTIONS, _INFO, f"connection {number} opened from {peer}")

    def connection_closed(self, pointer: object, reason: str) -> None:
        """An opened connection ended (the first call for it counts; later ones are none)."""
        opened = self._open.pop(pointer, None)
        if opened is None:
            return
        self.counts.connections_open -= 1
        if self._writes(_CONNECTIONS, _INFO):
            number, peer = opened
            self._write(_CONNECTIONS, _INFO, f"connection {number} closed ({peer}): {reason}")

    def link_attached(self, connection: int, address: str, client_sends: bool,
                      name: str) -> None:
        """A link was attached to ``address``; ``client_sends``: the client's end sends."""
        if self._writes(_LINKS, _INFO):
            self._write(_LINKS, _INFO, f"connection {connection}: {_role(client_sends)} "
                        f"attached to {address or 'the coordinator'} (link {name!r})")

    def link_detached(self, connection: int, address: str, client_sends: bool,
                      why: str) -> None:
        """A link the fake had attached was detached."""
        if self._writes(_LINKS, _INFO):
            self._write(_LINKS, _INFO, f"connection {connection}: {_role(client_sends)} "
                        f"detached from {address or 'the coordinator'}: {why}")

    def put_token(self, connection: int, audience: object, status: int, why: str) -> None:
        """A ``$cbs`` put-token for ``audience`` was answered ``status`` (``why``: the
        reply's description). The token itself is never handed here."""
        if self._writes(_CBS, _INFO):
            self._write(_CBS, _INFO, f"connection {connection}: $cbs put-token for "
                        f"{audience!s}: {status} {why}")

    def management(self, connection: int, entity: str, operation: str, status: int,
                   seconds: float, why: str | None = None) -> None:
        """A request to ``entity``'s ``$management`` node was answered ``status`` after
        ``seconds`` of handling (``why``: a refusal's description)."""
        short = operation.removeprefix(_OPERATION_PREFIX)
        self.counts.management[(entity, short, status)] += 1
        if self._writes(_MANAGEMENT, _INFO):
            because = f" ({why})" if why else ""
            self._write(_MANAGEMENT, _INFO, f"connection {connection}: {short} on {entity}: "
                        f"{status} in {seconds * 1000:.1f} ms{because}")

    def transfer(self, connection: int, entity: str, size: int) -> None:
        """A client sent a message of ``size`` bytes to ``entity`` (DEBUG: one per message)."""
        if self._writes(_TRANSFERS, _DEBUG):
            self._write(_TRANSFERS, _DEBUG, f"connection {connection}: transfer to {entity}, "
                        f"{size} bytes")

    def delivered(self, connection: int, entity: str, sequence_number: int) -> None:
        """The fake sent message ``sequence_number`` of ``entity`` to a receiver of
        ``connection`` (DEBUG: one per message)."""
        if self._writes(_TRANSFERS, _DEBUG):
            self._write(_TRANSFERS, _DEBUG, f"connection {connection}: delivery of {entity} "
                        f"#{sequence_number} to its receiver")

    # --- refusals (any part of the fake) ------------------------------------------------

    def throttled(self, entity: str, operation: str, why: str) -> None:
        """A request (``operation``: a management operation, ``send``, ``receive``...) on
        ``entity`` was refused with ``server-busy`` for throttling; counted in
        ``fakes_throttled_requests_total``."""
        short = operation.removeprefix(_OPERATION_PREFIX)
        self.counts.throttled[(entity, short)] += 1
        if self._writes(_REFUSALS, _INFO):
            self._write(_REFUSALS, _INFO, f"throttled {short} on {entity}: {why}")

    def refused(self, entity: str, request: str, why: str) -> None:
        """A request (``request``: ``attach``, ``send``, a management operation, an HTTP
        method...) on ``entity`` was refused for a quota, a tier or a check; counted in
        ``fakes_refused_requests_total``."""
        short = request.removeprefix(_OPERATION_PREFIX)
        self.counts.refused[(entity, short)] += 1
        if self._writes(_REFUSALS, _INFO):
            self._write(_REFUSALS, _INFO, f"refused {short} on {entity}: {why}")

    def rejected(self, entity: str, error: FakeServiceError) -> None:
        """A client's transfer to ``entity`` was rejected with ``error``: throttled when
        it is ``server-busy``, else refused (both say why)."""
        if error.condition == _SERVER_BUSY:
            self.throttled(entity, "transfer", error.description)
        else:
            self.refused(entity, "transfer", error.description)

    # --- HTTP ------------------------------------------------------------------------

    def http_request(self, method: str, path: str, status: int, seconds: float,
                     why: str | None = None) -> None:
        """The HTTP port answered ``method path`` (no query string) with ``status``
        (any thread); ``why``: the port's reason when it refused the request itself."""
        self.counts.count_http(method, status)
        if self._writes(_HTTP, _INFO):
            refused = f" (refused: {why})" if why else ""
            self._write(_HTTP, _INFO, f"{method} {path}: {status} in {seconds * 1000:.1f} ms"
                        f"{refused}")


class LoggedManagement:
    """A :class:`~fakes._nodes.management.ManagementHandler` that tells ``log`` of every
    request the handler it wraps answers (or refuses by raising), with its handling time."""

    def __init__(self, handler: ManagementHandler, log: FakeLog) -> None:
        self._handler = handler
        self._log = log
        self.applied = handler.applied

    def handle(self, path: str, message: Request, connection: int, now: float,
               txn_id: bytes | None = None) -> Reply | None:
        started = time.perf_counter()
        operation = message.operation or "unknown"
        try:
            reply = self._handler.handle(path, message, connection, now, txn_id)
        except FakeServiceError as exc:  # its delivery is rejected (the router says why)
            self._log.management(connection, path, operation, exc.status_code,
                                 time.perf_counter() - started)
            raise
        if reply is None:
            return None
        status, seconds = reply.status_code, time.perf_counter() - started
        if status < 400:
            self._log.management(connection, path, operation, status, seconds)
            return reply
        why = reply.description or reply.error_condition
        self._log.management(connection, path, operation, status, seconds, why)
        if reply.error_condition == _SERVER_BUSY:
            self._log.throttled(path, operation, why or "server-busy")
        return reply
