"""What a message lock registers as, for our own ReceivedMessage (read directly) and for
objects shaped like the SDK's (probed)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from sbmgmt.message import ReceivedMessage
from sbmgmt.renewer._targets import SDK_MESSAGE_CACHE, message_lock

_EXPIRY = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


def _received(**fields: object) -> ReceivedMessage:
    return ReceivedMessage(body=b"x", sequence_number=7, **fields)  # type: ignore[arg-type]


def test_received_message_gives_its_token_and_expiry_and_no_sdk_cache() -> None:
    token = uuid.uuid4()
    message = _received(lock_token=token, locked_until=_EXPIRY)
    lock = message_lock(message, None)
    assert (lock.token, lock.locked_until, lock.target, lock.cache) == (
        token, _EXPIRY, message, None)


def test_received_message_explicit_expiry_wins() -> None:
    later = _EXPIRY + timedelta(minutes=1)
    lock = message_lock(_received(lock_token=uuid.uuid4(), locked_until=_EXPIRY), later)
    assert lock.locked_until == later


def test_received_message_without_expiry_registers_none() -> None:
    assert message_lock(_received(lock_token=uuid.uuid4()), None).locked_until is None


def test_received_message_without_lock_is_refused() -> None:
    with pytest.raises(ValueError, match="ReceivedMessage holds no lock"):
        message_lock(_received(), None)


def test_received_message_decoded_from_the_wire_gives_its_expiry() -> None:
    token = uuid.uuid4()
    wire = _received(locked_until=_EXPIRY).to_bytes()
    message = ReceivedMessage.from_bytes(wire, lock_token=token)
    lock = message_lock(message, None)
    assert (lock.token, lock.locked_until) == (token, _EXPIRY)


class _SdkShaped:
    """The azure-servicebus 7.15 shape: lock_token, locked_until_utc and its cache."""

    def __init__(self, token: str) -> None:
        self.lock_token = token
        self._expiry = _EXPIRY

    @property
    def locked_until_utc(self) -> datetime:
        return self._expiry


def test_sdk_shaped_message_still_probed_for_its_cache() -> None:
    token = uuid.uuid4()
    lock = message_lock(_SdkShaped(str(token)), None)
    assert (lock.token, lock.locked_until, lock.cache) == (token, _EXPIRY, SDK_MESSAGE_CACHE)
