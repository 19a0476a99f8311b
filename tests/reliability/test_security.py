"""Credentials the fake must refuse: each gives ``UnauthorizedError`` from a management call.

The error must not carry the key or the signature that was refused.
"""

from __future__ import annotations

import time
from urllib.parse import unquote_plus

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.auth import generate_sas_token
from sbmgmt.errors import UnauthorizedError

from ._cases import QUEUE, SESSION_QUEUE

KEY_NAME = "RootManageSharedAccessKey"
KEY = "SAS_KEY_VALUE"
WRONG_KEY = "V3JvbmdTZWN1cml0eUtleQ=="
HOUR = 3600


def _key_connection_string(fake: FakeNamespace, key: str) -> str:
    return (f"Endpoint=sb://{fake.host}:{fake.port};SharedAccessKeyName={KEY_NAME};"
            f"SharedAccessKey={key};UseDevelopmentEmulator=true")


def _sas_connection_string(fake: FakeNamespace, entity: str, expires_at: int) -> str:
    audience = f"sb://{fake.host}:{fake.port}/{entity}"
    token = generate_sas_token(audience, KEY_NAME, KEY, expires_at)
    return (f"Endpoint=sb://{fake.host}:{fake.port};SharedAccessSignature={token};"
            "UseDevelopmentEmulator=true")


def _signature(conn_str: str) -> str:
    """The URL-encoded signature (``sig``) of a SAS connection string."""
    return conn_str.split("sig=", 1)[1].split("&", 1)[0]


def _refused(conn_str: str, secret: str) -> None:
    """A peek on ``QUEUE`` with ``conn_str`` raises UnauthorizedError that hides ``secret``."""
    with ManagementClient.from_connection_string(conn_str, timeout=10) as client, \
            pytest.raises(UnauthorizedError) as refused:
        client.entity(QUEUE).peek_messages()
    shown = f"{refused.value} {refused.value!r}"
    assert secret not in shown
    assert unquote_plus(secret) not in shown
    assert "sig=" not in shown


def test_the_right_key_is_accepted(fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(_key_connection_string(fake, KEY),
                                                 timeout=10) as client:
        assert client.entity(QUEUE).peek_messages() == []


def test_a_valid_sas_token_for_the_entity_is_accepted(fake: FakeNamespace) -> None:
    conn_str = _sas_connection_string(fake, QUEUE, int(time.time()) + HOUR)
    with ManagementClient.from_connection_string(conn_str, timeout=10) as client:
        assert client.entity(QUEUE).peek_messages() == []


def test_wrong_key_is_unauthorized(fake: FakeNamespace) -> None:
    _refused(_key_connection_string(fake, WRONG_KEY), WRONG_KEY)


def test_expired_sas_token_is_unauthorized(fake: FakeNamespace) -> None:
    conn_str = _sas_connection_string(fake, QUEUE, int(time.time()) - 60)
    _refused(conn_str, _signature(conn_str))


def test_sas_token_for_another_entity_is_unauthorized(fake: FakeNamespace) -> None:
    conn_str = _sas_connection_string(fake, SESSION_QUEUE, int(time.time()) + HOUR)
    _refused(conn_str, _signature(conn_str))
