"""Session receiver links that lock a session for a management-only client (I/O thread).

The service applies renew-session-lock and get/set-session-state only to a session
locked by a receiver link of the same connection, named in the request's
``associated-link-name``. A caller that receives nothing locks the session itself: a
receiver link from the entity whose source carries the ``com.microsoft:session-filter``
filter (the session id), given no credit, so no message is ever delivered on it.

Theory of operation
-------------------
A :class:`SessionAttach` is handed to the I/O thread twice: once to attach, once (with
``detaching`` set) to detach. :class:`SessionReceivers` (one per I/O engine, touched
only on the I/O thread) keeps them:

- *waiting*: the entity's CBS token is not accepted yet on this connection; the engine
  calls :meth:`SessionReceivers.authorized` when it is (or :meth:`refused`);
- *attaching*: the link was sent; the peer answers with its attach. An attach without
  a source is a refusal, whose detach follows with the reason
  (``com.microsoft:session-cannot-be-locked`` when another receiver holds the session):
  ``opened`` fails with the error :func:`sbmgmt.errors.error_for_status` names for it.
  An attach whose source echoes the session filter locked the session: ``opened``
  resolves to the lock's expiry, read from the link property
  ``com.microsoft:locked-until-utc`` (.NET ticks), or None when absent;
- *attached*: until the caller detaches (``closed`` resolves once the peer confirms;
  the service then releases the lock) or the peer detaches it or the connection is
  lost (``closed`` resolves; the lock is gone, and later requests naming the link
  fail with the service's session-lock-lost).
"""

from __future__ import annotations

import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from proton import symbol

from ..errors import (
    BadRequestError,
    ConnectionLostError,
    ServiceBusManagementError,
    attach_refused,
)
from .open_links import create_receiver

__all__ = ["SESSION_FILTER", "SessionAttach", "SessionReceivers", "end", "expiry_from_ticks"]

SESSION_FILTER = symbol("com.microsoft:session-filter")
_LOCKED_UNTIL_UTC = symbol("com.microsoft:locked-until-utc")
# .NET ticks (100 ns since 0001-01-01) at the Unix epoch.
_DOTNET_EPOCH_TICKS = 621355968000000000
_ATTACH = "attach"


def expiry_from_ticks(ticks: int) -> float:
    """Epoch seconds of a .NET ticks value (``com.microsoft:locked-until-utc``)."""
    return (ticks - _DOTNET_EPOCH_TICKS) / 10_000_000


@dataclass(eq=False)
class SessionAttach:
    """One session receiver link, from the request to attach until it is detached."""

    entity: str
    session_id: str
    name: str = field(default_factory=lambda: f"sbmgmt-session-{uuid.uuid4()}")
    #: The lock's expiry (epoch seconds; None when the peer did not say), or the refusal.
    opened: Future[float | None] = field(default_factory=Future)
    #: Resolves when the link is gone (detached by either side, or the connection lost).
    closed: Future[None] = field(default_factory=Future)
    detaching: bool = False
    link: Any = None

    def what(self) -> str:
        return f"session {self.session_id!r} of {self.entity!r}"


class SessionReceivers:
    """Every session receiver link of one I/O engine (I/O thread only)."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[SessionAttach]] = {}
        self._by_name: dict[str, SessionAttach] = {}

    def waiting(self, entity: str) -> bool:
        """Whether attaches wait for ``entity``'s authorization."""
        return bool(self._waiting.get(entity))

    def wait(self, attach: SessionAttach) -> None:
        """Attach once the entity is authorized on the connection."""
        self._waiting.setdefault(attach.entity, []).append(attach)

    def attach(self, attach: SessionAttach, connection: Any) -> None:
        """Send the attach now: a receiver with the session filter and no credit."""
        if attach.opened.done():
            return
        attach.link = create_receiver(connection, source=attach.entity, target=attach.name,
                                      name=attach.name,
                                      filters={SESSION_FILTER: attach.session_id})
        self._by_name[attach.name] = attach

    def authorized(self, entity: str, connection: Any) -> None:
        """The entity's token was accepted on ``connection``: attach what waits for it."""
        for attach in self._waiting.pop(entity, []):
            self.attach(attach, connection)

    def refused(self, entity: str, error: ServiceBusManagementError) -> None:
        """The entity's authorization failed: fail what waits for it."""
        for attach in self._waiting.pop(entity, []):
            _fail(attach, type(error)(f"locking {attach.what()}: {error}",
                                      operation=_ATTACH, status_code=error.status_code,
                                      error_condition=error.error_condition,
                                      description=error.description))

    def detach(self, attach: SessionAttach) -> None:
        """The caller is done: close the link (``closed`` resolves when the peer confirms)."""
        waiting = self._waiting.get(attach.entity, [])
        if attach in waiting:
            waiting.remove(attach)
        if attach.link is None or attach.name not in self._by_name:
            _settle(attach)
            return
        attach.link.close()

    def remote_open(self, link: Any) -> bool:
        """The peer's attach for one of these links (False: not a session link)."""
        attach = self._by_name.get(link.name)
        if attach is None:
            return False
        source = link.remote_source
        if source is None or source.address is None or attach.opened.done():
            return True  # a refusal: its detach follows with the reason
        if _filter_session(source) != attach.session_id:
            attach.opened.set_exception(BadRequestError(
                f"locking {attach.what()}: the entity did not lock a session (is it a "
                "session-enabled queue or subscription?)", operation=_ATTACH))
            link.close()
            return True
        properties = link.remote_properties or {}
        ticks = properties.get(_LOCKED_UNTIL_UTC)
        attach.opened.set_result(None if ticks is None else expiry_from_ticks(int(ticks)))
        return True

    def remote_close(self, link: Any) -> bool:
        """The peer detached one of these links (False: not a session link)."""
        attach = self._by_name.pop(link.name, None)
        if attach is None:
            return False
        if not attach.opened.done():
            condition = link.remote_condition
            name = None if condition is None else str(condition.name)
            description = None if condition is None else condition.description
            _fail(attach, attach_refused(f"locking {attach.what()}", name, description))
        _settle(attach)
        if not link.state & link.LOCAL_CLOSED:
            link.close()
        return True

    def connection_lost(self, reason: str) -> None:
        """The connection is gone, and every session lock with it."""
        self.fail_all(lambda attach: ConnectionLostError(
            f"locking {attach.what()}: connection lost ({reason})", operation=_ATTACH))

    def fail_all(self, error: Any) -> None:
        """Fail what waits or attaches with ``error(attach)``; settle every link."""
        attaches = [a for group in self._waiting.values() for a in group]
        attaches += self._by_name.values()
        self._waiting.clear()
        self._by_name.clear()
        for attach in attaches:
            end(attach, error(attach))


def _filter_session(source: Any) -> str | None:
    data = source.filter
    data.rewind()
    if not data.next():
        return None
    value = data.get_object()
    if not isinstance(value, dict):
        return None
    session = value.get(SESSION_FILTER)
    return None if session is None else str(session)


def end(attach: SessionAttach, error: BaseException) -> None:
    """The link is gone: fail an attach still unanswered with ``error``; settle ``closed``."""
    _fail(attach, error)
    _settle(attach)


def _fail(attach: SessionAttach, error: BaseException) -> None:
    if not attach.opened.done():
        attach.opened.set_exception(error)


def _settle(attach: SessionAttach) -> None:
    if not attach.closed.done():
        attach.closed.set_result(None)
