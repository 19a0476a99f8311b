"""What may be registered: entity paths, lock tokens and sessions, or objects that carry them.

Duck-typed so that the official ``azure-servicebus`` objects work without importing it:

- an entity is a path string, an ``EntityClient`` / ``AsyncEntityClient`` (``.path``),
  or an SDK receiver (``.entity_path``); ``None`` takes it from the message's or
  session's own receiver (``._receiver.entity_path``, as SDK objects carry);
- a message lock is a ``uuid.UUID`` / string token (then ``locked_until`` is needed),
  or an object with ``lock_token`` and ``locked_until`` (:class:`~sbmgmt.message.ReceivedMessage`)
  or ``locked_until_utc`` (the SDK's ``ServiceBusReceivedMessage``);
- a session is a session id, or an object with ``session_id`` and ``locked_until_utc``
  (the SDK's ``ServiceBusSession``).

An object with ``locked_until_utc`` is taken for an azure-servicebus object: the SDK
caches the lock's expiry on it and refuses to settle (or, for a session, to do
anything) once that cached time has passed, without asking the service. Its own
renewals update that cache; the renewer must too. The cache is a private attribute
(azure-servicebus 7.15, sync and aio alike: ``ServiceBusReceivedMessage._expiry``,
``ServiceBusSession._locked_until_utc``), so an object without it (another SDK
version) is refused at registration with :class:`~sbmgmt.errors.UnsupportedLockTargetError`
rather than renewed on the service only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .._client.argument_checks import positive_seconds
from .._client.client_core import entity_path
from ..errors import UnsupportedLockTargetError
from ..message import ReceivedMessage

__all__ = [
    "SDK_MESSAGE_CACHE",
    "SDK_SESSION_CACHE",
    "MessageLock",
    "SessionLock",
    "entity_of",
    "message_lock",
    "seconds",
    "session_lock",
    "timestamp",
]


#: Where azure-servicebus caches a received message's lock expiry (``locked_until_utc``
#: reads it; ``receiver.renew_message_lock`` sets it).
SDK_MESSAGE_CACHE = "_expiry"
#: Where azure-servicebus caches a session's lock expiry (``locked_until_utc`` reads it;
#: ``session.renew_lock`` sets it).
SDK_SESSION_CACHE = "_locked_until_utc"
#: The attribute by which an object is taken for an azure-servicebus one.
_SDK_MARK = "locked_until_utc"
_NO_LOCK = "this {} holds no lock (received in receive-and-delete mode, or already settled)"


@dataclass(frozen=True, slots=True)
class MessageLock:
    """A message lock to register: its token, its expiry when known, what was passed, and
    the target's attribute caching the expiry (an SDK message's), to keep in step."""

    token: uuid.UUID
    locked_until: datetime | None
    target: object
    cache: str | None = None


@dataclass(frozen=True, slots=True)
class SessionLock:
    """A session lock to register: its session id, its expiry when known, what was
    passed, and the target's attribute caching the expiry (an SDK session's)."""

    session_id: str
    locked_until: datetime | None
    target: object
    cache: str | None = None


def entity_of(entity: object, carrier: object) -> str:
    """The entity path named by ``entity``, or by ``carrier``'s receiver when it is None."""
    source = entity if entity is not None else getattr(carrier, "_receiver", None)
    if isinstance(source, str):
        return entity_path(source)
    for attribute in ("entity_path", "path"):
        path = getattr(source, attribute, None)
        if isinstance(path, str):
            return entity_path(path)
    if entity is None:
        raise TypeError(
            f"cannot tell the entity of {type(carrier).__name__}: pass the entity path, "
            "an EntityClient or the receiver"
        )
    raise TypeError(
        f"entity must be a path, an EntityClient or a receiver, got {type(entity).__name__}"
    )


def message_lock(lock: object, locked_until: datetime | None) -> MessageLock:
    """The token and expiry of a message lock given as a token or as a message."""
    if isinstance(lock, (uuid.UUID, str)):
        return MessageLock(_token(lock), locked_until, lock)
    if isinstance(lock, ReceivedMessage):
        # Ours: its fields read directly, no SDK cache to look for. The duck-typed probes
        # below would each miss on it through pydantic's __getattr__ (locked_until_utc
        # twice), a fifth of registering a batch of received messages.
        token = lock.lock_token
        if token is None:
            raise ValueError(_NO_LOCK.format(type(lock).__name__))
        return MessageLock(token, lock.locked_until if locked_until is None else locked_until,
                           lock)
    token = getattr(lock, "lock_token", None)
    if token is None:
        raise ValueError(_NO_LOCK.format(type(lock).__name__))
    if locked_until is None:
        locked_until = _expiry_of(lock)
    return MessageLock(_token(token), locked_until, lock, _sdk_cache(lock, SDK_MESSAGE_CACHE))


def session_lock(session: object, locked_until: datetime | None) -> SessionLock:
    """The id and expiry of a session lock given as an id or as a session object."""
    if isinstance(session, str):
        if not session:
            raise ValueError("session: the session id is empty")
        return SessionLock(session, locked_until, session)
    session_id = getattr(session, "session_id", None)
    if not isinstance(session_id, str):
        raise TypeError(
            f"a session is a session id or an object with session_id, "
            f"got {type(session).__name__}"
        )
    if locked_until is None:
        locked_until = _expiry_of(session)
    return SessionLock(session_id, locked_until, session,
                       _sdk_cache(session, SDK_SESSION_CACHE))


def timestamp(value: datetime | None, what: str) -> float:
    """Seconds since the epoch of an expiry (a naive datetime is taken as UTC)."""
    if value is None:
        raise ValueError(f"{what}: locked_until is unknown; pass it explicitly")
    if not isinstance(value, datetime):
        raise TypeError(f"locked_until must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def seconds(value: float | timedelta | None, name: str) -> float | None:
    """A duration in seconds from seconds or a timedelta (None stays None)."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return None if value is None else positive_seconds(value, name)


def _sdk_cache(carrier: object, attribute: str) -> str | None:
    """``attribute`` when ``carrier`` is an SDK object that caches its expiry there; None
    for any other object; an SDK-shaped object without that cache is refused."""
    if not hasattr(carrier, _SDK_MARK):
        return None
    if attribute not in getattr(carrier, "__dict__", {}):
        raise UnsupportedLockTargetError(
            f"cannot keep this {type(carrier).__name__}'s cached lock expiry in step (it has "
            f"no {attribute!r}: an azure-servicebus version the renewer does not support); "
            "the SDK would refuse to settle once its cached expiry passed. Supported: "
            "azure-servicebus 7.15 (docs/lock-renewal.md)."
        )
    return attribute


def _expiry_of(carrier: object) -> datetime | None:
    for attribute in ("locked_until_utc", "locked_until"):
        value = getattr(carrier, attribute, None)
        if value is not None:
            return value if isinstance(value, datetime) else None
    return None


def _token(value: object) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ValueError("lock: its lock token is not a valid uuid") from None
