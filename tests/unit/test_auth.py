"""Connection strings, SAS tokens, token providers and SAS verification (sbmgmt.auth)."""

from __future__ import annotations

import string
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast
from urllib.parse import quote_plus

import pytest
from azure.core.credentials import AccessToken as AzureAccessToken
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.servicebus import ServiceBusClient
from azure.servicebus._base_handler import _parse_conn_str
from azure.servicebus._pyamqp.utils import generate_sas_token as _sdk_generate_sas_token
from hypothesis import given
from hypothesis import strategies as st

from sbmgmt.auth import (
    AMQP_PORT,
    AMQPS_PORT,
    ENTRA_SCOPE,
    JWT_TOKEN_TYPE,
    SAS_TOKEN_TYPE,
    AccessToken,
    AmqpAddress,
    ConnectionString,
    CredentialTokenProvider,
    SasKeyTokenProvider,
    SasTokenError,
    SasTokenProvider,
    TokenProvider,
    audience_for,
    generate_sas_token,
    parse_connection_string,
    token_provider_for,
    token_provider_from_connection_string,
    verify_sas_token,
)

sdk_generate_sas_token: Callable[[str, str, str, int], str] = _sdk_generate_sas_token

SECRET_KEY = "c2VjcmV0LWtleS12YWx1ZQ=="
HOST = "myns.servicebus.windows.net"
EXPIRY = 1_700_000_000
KEYS = {"RootManageSharedAccessKey": SECRET_KEY}


def signed(
    audience: str, expires_at: int = EXPIRY, key_name: str = "RootManageSharedAccessKey"
) -> str:
    return generate_sas_token(audience, key_name, KEYS.get(key_name, "other-key"), expires_at)


SECRET_SIGNATURE = signed(f"sb://{HOST}/myqueue")


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeTokenCredential:
    """An azure-core TokenCredential look-alike that records the scopes it was asked for."""

    def __init__(self, token: str = "eyJhbGciOi.jwt.payload", expires_on: int = EXPIRY) -> None:
        self.token = token
        self.expires_on = expires_on
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AzureAccessToken:
        self.scopes.append(scopes)
        return AzureAccessToken(self.token, self.expires_on)


# --------------------------------------------------------------------------------------
# Connection strings
# --------------------------------------------------------------------------------------


def test_parse_every_key() -> None:
    cs = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessKeyName=Root;SharedAccessKey={SECRET_KEY};"
        "EntityPath=orders;UseDevelopmentEmulator=false"
    )
    assert cs == ConnectionString(
        fully_qualified_namespace=HOST,
        port=None,
        shared_access_key_name="Root",
        shared_access_key=SECRET_KEY,
        shared_access_signature=None,
        entity_path="orders",
        use_development_emulator=False,
    )


def test_parse_signature_connection_string() -> None:
    cs = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessSignature={SECRET_SIGNATURE};EntityPath=myqueue"
    )
    assert cs.shared_access_signature == SECRET_SIGNATURE
    assert cs.shared_access_key is None
    assert cs.shared_access_key_name is None
    assert cs.entity_path == "myqueue"


def test_parse_is_case_insensitive_and_ignores_whitespace_and_empty_segments() -> None:
    cs = parse_connection_string(
        f"  endpoint = sb://{HOST.upper()}/ ; SHAREDACCESSKEYNAME=Root;;"
        f"sharedAccessKey= {SECRET_KEY} ;entitypath=t/Subscriptions/s;"
        "USEDEVELOPMENTEMULATOR=False;\n"
    )
    assert cs.fully_qualified_namespace == HOST
    assert cs.shared_access_key_name == "Root"
    assert cs.shared_access_key == SECRET_KEY
    assert cs.entity_path == "t/Subscriptions/s"
    assert cs.use_development_emulator is False


def test_parse_ignores_unknown_keys() -> None:
    cs = parse_connection_string(
        f"Endpoint=sb://{HOST}/;Foo=bar;SharedAccessKeyName=Root;SharedAccessKey={SECRET_KEY};X=1=2"
    )
    assert cs.shared_access_key_name == "Root"
    assert cs.entity_path is None


def test_parse_keeps_value_after_first_equals() -> None:
    cs = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessKeyName=Root;SharedAccessKey=ab=="
    )
    assert cs.shared_access_key == "ab=="


def test_parse_port_only_when_present() -> None:
    assert (
        parse_connection_string(
            f"Endpoint=sb://{HOST};SharedAccessKeyName=R;SharedAccessKey=k"
        ).port
        is None
    )
    cs = parse_connection_string(
        f"Endpoint=sb://{HOST}:9999/;SharedAccessKeyName=R;SharedAccessKey=k"
    )
    assert cs.port == 9999
    assert cs.fully_qualified_namespace == HOST


@pytest.mark.parametrize(
    ("endpoint", "host", "port"),
    [
        ("sb://localhost", "localhost", None),
        ("sb://LocalHost:5673/", "localhost", 5673),
        ("sb://127.0.0.1:10000", "127.0.0.1", 10000),
        ("sb://127.200.3.4", "127.200.3.4", None),
        ("sb://[::1]:5672", "::1", 5672),
    ],
)
def test_parse_emulator_on_loopback(endpoint: str, host: str, port: int | None) -> None:
    cs = parse_connection_string(
        f"Endpoint={endpoint};SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
    )
    assert cs.use_development_emulator is True
    assert cs.fully_qualified_namespace == host
    assert cs.port == port
    assert cs.amqp_address() == AmqpAddress(host, port or AMQP_PORT, False)


def test_amqp_address_is_tls_5671_outside_the_emulator() -> None:
    cs = parse_connection_string(
        f"Endpoint=sb://{HOST}:443/;SharedAccessKeyName=R;SharedAccessKey=k"
    )
    assert cs.amqp_address() == AmqpAddress(HOST, AMQPS_PORT, True)
    assert AMQPS_PORT == 5671
    assert AMQP_PORT == 5672


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no Endpoint"),
        (" ; ; ", "no Endpoint"),
        (f"SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY}", "no Endpoint"),
        (f"Endpoint=https://{HOST}/;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY}", "sb://"),
        (f"Endpoint={HOST};SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY}", "sb://"),
        (f"Endpoint=sb:///;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY}", "no host"),
        (f"Endpoint=sb://{HOST}:abc/;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY}", "port"),
        (f"Endpoint=sb://{HOST}/;SharedAccessKeyName=R", "both SharedAccessKeyName and"),
        (f"Endpoint=sb://{HOST}/;SharedAccessKey={SECRET_KEY}", "both SharedAccessKeyName and"),
        (
            f"Endpoint=sb://{HOST}/;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY};"
            f"SharedAccessSignature={SECRET_SIGNATURE}",
            "not have both",
        ),
        (f"Endpoint=sb://{HOST}/;EntityPath=q", "must have SharedAccessKeyName"),
        (
            f"Endpoint=sb://{HOST}/;{SECRET_KEY.rstrip('=')}",
            "segment 2 is not of the form key=value",
        ),
        (f"Endpoint=sb://{HOST}/;SharedAccessKeyName=R;SharedAccessKey=", "empty SharedAccessKey"),
        (
            f"Endpoint=sb://{HOST}/;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY};"
            f"sharedaccesskey={SECRET_KEY}",
            "SharedAccessKey more than once",
        ),
        (
            f"Endpoint=sb://{HOST}/;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY};"
            "UseDevelopmentEmulator=yes",
            "must be true or false",
        ),
        (
            f"Endpoint=sb://{HOST}/;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY};"
            "UseDevelopmentEmulator=true",
            "loopback",
        ),
        (
            f"Endpoint=sb://10.0.0.1:5672;SharedAccessKeyName=R;SharedAccessKey={SECRET_KEY};"
            "UseDevelopmentEmulator=true",
            "loopback",
        ),
    ],
)
def test_parse_errors_are_clear_and_never_hold_secrets(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as caught:
        parse_connection_string(text)
    message = str(caught.value)
    assert SECRET_KEY not in message
    assert SECRET_SIGNATURE not in message
    assert "sig=" not in message


def test_repr_and_str_mask_key_and_signature() -> None:
    with_key = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessKeyName=Root;SharedAccessKey={SECRET_KEY}"
    )
    with_signature = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessSignature={SECRET_SIGNATURE}"
    )
    for cs in (with_key, with_signature):
        for text in (repr(cs), str(cs), f"{cs}", repr([cs])):
            assert SECRET_KEY not in text
            assert SECRET_SIGNATURE not in text
            assert "sig=" not in text
            assert HOST in text
    assert "shared_access_key='***'" in repr(with_key)
    assert "shared_access_key_name='Root'" in repr(with_key)
    assert "shared_access_signature='***'" in repr(with_signature)
    assert "shared_access_key=None" in repr(with_signature)


@pytest.mark.parametrize(
    "text",
    [
        f"Endpoint=sb://{HOST}/;SharedAccessKeyName=Root;SharedAccessKey={SECRET_KEY};EntityPath=q",
        f"endpoint=sb://{HOST}/;sharedaccesskeyname=Root;sharedaccesskey={SECRET_KEY};",
        f"Endpoint=sb://{HOST}/;SharedAccessSignature={SECRET_SIGNATURE}",
        "Endpoint=sb://localhost:6000;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;",
    ],
)
def test_parse_agrees_with_the_sdk(text: str) -> None:
    host, key_name, key, entity, signature, _, emulator = _parse_conn_str(text)
    cs = parse_connection_string(text)
    port_suffix = f":{cs.port}" if cs.port is not None else ""
    assert f"{cs.fully_qualified_namespace}{port_suffix}" == host
    assert (cs.shared_access_key_name, cs.shared_access_key) == (key_name, key)
    assert cs.shared_access_signature == signature
    assert cs.entity_path == entity
    assert cs.use_development_emulator == emulator


# --------------------------------------------------------------------------------------
# SAS tokens
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("audience", "key_name", "key", "expires_at"),
    [
        (f"sb://{HOST}/myqueue", "RootManageSharedAccessKey", SECRET_KEY, EXPIRY),
        (f"sb://{HOST}", "send-only", "k", 1),
        (f"sb://{HOST}/my queue/with spaces", "Root", "key with spaces", EXPIRY),
        (f"sb://{HOST}/t/Subscriptions/s/$DeadLetterQueue", "a.b_c-d", "x/y+z=", EXPIRY),
        (f"sb://{HOST}/ünïcødé/队列", "Root", "κλειδί", 4_102_444_800),
        ("amqps://localhost:5672/q?x=1&y=2#frag", "name with space+plus%", "k", EXPIRY),
    ],
)
def test_generate_sas_token_equals_the_sdk(
    audience: str, key_name: str, key: str, expires_at: int
) -> None:
    assert generate_sas_token(audience, key_name, key, expires_at) == sdk_generate_sas_token(
        audience, key_name, key, expires_at
    )


def test_generate_sas_token_layout() -> None:
    token = generate_sas_token("sb://h/q", "Root", "k", EXPIRY)
    prefix, _, fields = token.partition(" ")
    assert prefix == "SharedAccessSignature"
    assert [pair.split("=", 1)[0] for pair in fields.split("&")] == ["sr", "sig", "se", "skn"]
    assert f"sr={quote_plus('sb://h/q')}&" in token
    assert token.endswith(f"&se={EXPIRY}&skn=Root")


@pytest.mark.parametrize(
    ("audience", "key_name", "key", "reason"),
    [("", "n", "k", "audience"), ("sb://h/q", "", "k", "key name"), ("sb://h/q", "n", "", "key")],
)
def test_generate_sas_token_refuses_empty_inputs(
    audience: str, key_name: str, key: str, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        generate_sas_token(audience, key_name, key, EXPIRY)


@pytest.mark.parametrize(
    ("host", "entity", "expected"),
    [
        (HOST, "q", f"sb://{HOST}/q"),
        (HOST, "t/Subscriptions/s", f"sb://{HOST}/t/Subscriptions/s"),
        (HOST, "/q/", f"sb://{HOST}/q"),
        (HOST, None, f"sb://{HOST}"),
        ("localhost:5673", "q", "sb://localhost:5673/q"),
        ("::1", "q", "sb://[::1]/q"),
    ],
)
def test_audience_for(host: str, entity: str | None, expected: str) -> None:
    assert audience_for(host, entity) == expected


# --------------------------------------------------------------------------------------
# Token providers
# --------------------------------------------------------------------------------------


def test_access_token_repr_masks_the_token() -> None:
    token = AccessToken(SECRET_SIGNATURE, 12.0, SAS_TOKEN_TYPE)
    assert SECRET_SIGNATURE not in repr(token)
    assert SECRET_SIGNATURE not in str(token)
    assert "expires_on=12.0" in repr(token)


def test_sas_key_provider_signs_for_the_audience_with_ttl_from_the_clock() -> None:
    clock = FakeClock(1_000.7)
    provider = SasKeyTokenProvider(
        "RootManageSharedAccessKey", SECRET_KEY, token_ttl=timedelta(minutes=5), clock=clock
    )
    audience = audience_for(HOST, "q")
    first = provider.get_token(audience)
    assert first.token_type == SAS_TOKEN_TYPE
    assert first.expires_on == 1_300.0
    assert first.token == generate_sas_token(
        audience, "RootManageSharedAccessKey", SECRET_KEY, 1_300
    )
    verify_sas_token(first.token, KEYS, audience, now=1_299.0)

    clock.now = 2_000.0
    refreshed = provider.get_token(audience)
    assert refreshed.expires_on == 2_300.0
    assert refreshed.token != first.token
    with pytest.raises(SasTokenError, match="expired"):
        verify_sas_token(first.token, KEYS, audience, now=clock.now)
    verify_sas_token(refreshed.token, KEYS, audience, now=clock.now)


def test_sas_key_provider_default_ttl_is_one_hour() -> None:
    provider = SasKeyTokenProvider("Root", "k", clock=FakeClock(100.0))
    assert provider.get_token("sb://h/q").expires_on == 3_700.0


def test_sas_key_provider_repr_masks_the_key() -> None:
    provider = SasKeyTokenProvider("Root", SECRET_KEY)
    assert SECRET_KEY not in repr(provider)
    assert "Root" in repr(provider)


@pytest.mark.parametrize(
    ("key_name", "key", "ttl", "reason"),
    [
        ("", "k", timedelta(hours=1), "key name"),
        ("n", "", timedelta(hours=1), "key must"),
        ("n", "k", timedelta(milliseconds=500), "token_ttl"),
        ("n", "k", timedelta(seconds=-5), "token_ttl"),
    ],
)
def test_sas_key_provider_refuses_bad_arguments(
    key_name: str, key: str, ttl: timedelta, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        SasKeyTokenProvider(key_name, key, token_ttl=ttl)


def test_sas_token_provider_returns_the_fixed_token_with_its_expiry() -> None:
    provider = SasTokenProvider(SECRET_SIGNATURE)
    token = provider.get_token(audience_for(HOST, "myqueue"))
    assert token == AccessToken(SECRET_SIGNATURE, float(EXPIRY), SAS_TOKEN_TYPE)
    assert SECRET_SIGNATURE not in repr(provider)


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        ("SharedAccessSignature sr=sb%3A%2F%2Fh&sig=SECRETSIG&skn=Root", "no expiry"),
        ("SharedAccessSignature sr=sb%3A%2F%2Fh&sig=SECRETSIG&se=soon&skn=Root", "not a number"),
        ("sr=sb%3A%2F%2Fh&sig=SECRETSIG&se=1&skn=Root", "does not start with"),
    ],
)
def test_sas_token_provider_refuses_tokens_without_a_usable_expiry(
    signature: str, reason: str
) -> None:
    with pytest.raises(SasTokenError, match=reason) as caught:
        SasTokenProvider(signature)
    assert "SECRETSIG" not in str(caught.value)


def test_credential_provider_asks_for_the_service_bus_scope() -> None:
    credential = FakeTokenCredential()
    provider = CredentialTokenProvider(credential)
    token = provider.get_token(audience_for(HOST, "q"))
    assert token == AccessToken(credential.token, float(EXPIRY), JWT_TOKEN_TYPE)
    assert credential.scopes == [(ENTRA_SCOPE,)]
    assert ENTRA_SCOPE == "https://servicebus.azure.net/.default"
    assert credential.token not in repr(provider)


def test_credential_provider_follows_the_credentials_refresh() -> None:
    credential = FakeTokenCredential(token="first.jwt", expires_on=100)
    provider = CredentialTokenProvider(credential)
    assert provider.get_token("sb://h/q").token == "first.jwt"
    credential.token, credential.expires_on = "second.jwt", 200
    assert provider.get_token("sb://h/q") == AccessToken("second.jwt", 200.0, JWT_TOKEN_TYPE)


def test_credential_provider_refuses_bad_credentials() -> None:
    with pytest.raises(TypeError, match="no get_token"):
        CredentialTokenProvider(object())

    class Broken:
        def get_token(self, *scopes: str) -> object:
            return {"token": "x"}

    with pytest.raises(TypeError, match=r"Broken.get_token\(\) did not return"):
        CredentialTokenProvider(Broken()).get_token("sb://h/q")


def test_token_provider_for_named_key_credential_signs_with_the_current_key() -> None:
    credential = AzureNamedKeyCredential("RootManageSharedAccessKey", SECRET_KEY)
    provider = token_provider_for(credential)
    audience = audience_for(HOST, "q")
    token = provider.get_token(audience)
    assert token.token_type == SAS_TOKEN_TYPE
    verify_sas_token(token.token, KEYS, audience, now=token.expires_on - 1)
    assert SECRET_KEY not in repr(provider)

    credential.update("Rotated", "new-key")
    rotated = provider.get_token(audience)
    verify_sas_token(rotated.token, {"Rotated": "new-key"}, audience, now=rotated.expires_on - 1)


def test_token_provider_for_sas_credential_hands_out_the_current_signature() -> None:
    credential = AzureSasCredential(SECRET_SIGNATURE)
    provider = token_provider_for(credential)
    assert provider.get_token("sb://h/q") == AccessToken(
        SECRET_SIGNATURE, float(EXPIRY), SAS_TOKEN_TYPE
    )
    assert SECRET_SIGNATURE not in repr(provider)

    newer = signed(f"sb://{HOST}/myqueue", expires_at=EXPIRY + 60)
    credential.update(newer)
    assert provider.get_token("sb://h/q") == AccessToken(newer, float(EXPIRY + 60), SAS_TOKEN_TYPE)


def test_token_provider_for_token_credential() -> None:
    credential = FakeTokenCredential()
    provider = token_provider_for(credential)
    assert isinstance(provider, CredentialTokenProvider)
    assert provider.get_token("sb://h/q").token_type == JWT_TOKEN_TYPE
    assert credential.scopes == [(ENTRA_SCOPE,)]


def test_token_provider_for_passes_token_providers_through() -> None:
    class StaticProvider(TokenProvider):
        def get_token(self, audience: str) -> AccessToken:
            return AccessToken(f"token-for-{audience}", 1.0, SAS_TOKEN_TYPE)

    custom = StaticProvider()
    builtin = SasKeyTokenProvider("Root", "k")
    assert token_provider_for(custom) is custom
    assert token_provider_for(builtin) is builtin
    assert token_provider_for(custom).get_token("sb://h/q").token == "token-for-sb://h/q"


@pytest.mark.parametrize(
    "credential", [SECRET_KEY, 42, None, ("Root", SECRET_KEY), FakeTokenCredential]
)
def test_token_provider_for_refuses_unsupported_credentials(credential: object) -> None:
    with pytest.raises(TypeError, match="credential") as caught:
        token_provider_for(credential)
    assert SECRET_KEY not in str(caught.value)


def test_token_provider_from_connection_string() -> None:
    with_key = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={SECRET_KEY}"
    )
    key_provider = token_provider_from_connection_string(with_key)
    assert isinstance(key_provider, SasKeyTokenProvider)
    audience = audience_for(with_key.fully_qualified_namespace, "q")
    token = key_provider.get_token(audience)
    verify_sas_token(token.token, KEYS, audience, now=token.expires_on - 1)

    with_signature = parse_connection_string(
        f"Endpoint=sb://{HOST}/;SharedAccessSignature={SECRET_SIGNATURE}"
    )
    signature_provider = token_provider_from_connection_string(with_signature)
    assert signature_provider.get_token(audience).token == SECRET_SIGNATURE


def test_token_provider_from_connection_string_without_credentials() -> None:
    with pytest.raises(ValueError, match="neither"):
        token_provider_from_connection_string(ConnectionString(fully_qualified_namespace=HOST))


# --------------------------------------------------------------------------------------
# SAS verification (the fake's side)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token_audience", "requested"),
    [
        (f"sb://{HOST}/q", f"sb://{HOST}/q"),
        (f"sb://{HOST}", f"sb://{HOST}/q"),
        (f"sb://{HOST}/", f"sb://{HOST}/t/Subscriptions/s"),
        (f"sb://{HOST}/t", f"sb://{HOST}/t/Subscriptions/s/$management"),
        (f"sb://{HOST}/q/", f"amqps://{HOST}/q"),
        (f"SB://{HOST.upper()}/q", f"amqps://{HOST}/q/$management"),
        (f"sb://{HOST}/q", f"sb://{HOST}/q/"),
        ("sb://localhost:5673/q", "amqp://localhost/q"),
        ("sb://127.0.0.1:5673", "amqp://127.0.0.1:5673/q/$management"),
        (audience_for("::1", "q"), "amqp://[::1]:5672/q"),
        (f"sb://{HOST}/my queue/ü", f"sb://{HOST}/my queue/ü/$management"),
    ],
)
def test_verify_accepts_tokens_that_cover_the_audience(token_audience: str, requested: str) -> None:
    verify_sas_token(signed(token_audience), KEYS, requested, now=EXPIRY - 1)


def test_verify_accepts_what_the_sdk_sends_to_the_emulator() -> None:
    client = ServiceBusClient.from_connection_string(
        "Endpoint=sb://localhost:5673;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
    )
    keys = {"RootManageSharedAccessKey": "SAS_KEY_VALUE"}
    sender = client.get_queue_sender("q")
    receiver = client.get_subscription_receiver("t", "s")
    for handler, entity in ((sender, "q"), (receiver, "t/Subscriptions/s")):
        sdk_token = handler._credential.get_token(cast(str, handler._auth_uri))
        verify_sas_token(
            sdk_token.token, keys, f"amqp://localhost:5673/{entity}", now=sdk_token.expires_on - 1
        )


def test_verify_accepts_sdk_tokens_with_any_key_name() -> None:
    key_name = "name with space+plus"
    token = sdk_generate_sas_token(f"sb://{HOST}/q", key_name, "k", EXPIRY)
    verify_sas_token(token, {key_name: "k"}, f"sb://{HOST}/q", now=EXPIRY - 1)


def test_verify_accepts_singly_encoded_key_names() -> None:
    doubly_encoded = generate_sas_token(f"sb://{HOST}/q", "a b", "k", EXPIRY)
    assert doubly_encoded.endswith("skn=a%2Bb")
    singly_encoded = doubly_encoded.replace("skn=a%2Bb", "skn=a+b")
    verify_sas_token(singly_encoded, {"a b": "k"}, f"sb://{HOST}/q", now=EXPIRY - 1)


def _replace_field(token: str, name: str, value: str) -> str:
    prefix, _, rest = token.partition(" ")
    pairs = [pair.split("=", 1) for pair in rest.split("&")]
    return prefix + " " + "&".join(f"{k}={value if k == name else v}" for k, v in pairs)


GOOD = signed(f"sb://{HOST}/q")
GOOD_SIG = GOOD.split("sig=")[1].split("&")[0]


@pytest.mark.parametrize(
    ("token", "audience", "now", "reason"),
    [
        (GOOD.replace("SharedAccessSignature ", ""), f"sb://{HOST}/q", 0, "does not start"),
        (GOOD.replace("&skn=", "&skn"), f"sb://{HOST}/q", 0, "malformed"),
        (GOOD + "&se=5", f"sb://{HOST}/q", 0, "more than once"),
        (GOOD.split("&se=")[0], f"sb://{HOST}/q", 0, "missing se, skn"),
        (_replace_field(GOOD, "se", "-5"), f"sb://{HOST}/q", 0, "not a number"),
        (_replace_field(GOOD, "sr", quote_plus("https://x/q")), "sb://x/q", 0, "signature"),
        (
            signed(f"sb://{HOST}/q", key_name="Stranger"),
            f"sb://{HOST}/q",
            0,
            "unknown key 'Stranger'",
        ),
        (_replace_field(GOOD, "sig", GOOD_SIG[::-1]), f"sb://{HOST}/q", 0, "signature"),
        (_replace_field(GOOD, "sig", "é"), f"sb://{HOST}/q", 0, "signature"),
        (_replace_field(GOOD, "se", str(EXPIRY + 3600)), f"sb://{HOST}/q", 0, "signature"),
        (_replace_field(GOOD, "sr", quote_plus(f"sb://{HOST}")), f"sb://{HOST}/q", 0, "signature"),
        (GOOD, f"sb://{HOST}/q", EXPIRY, f"expired at {EXPIRY} "),
        (GOOD, f"sb://{HOST}/q", EXPIRY + 0.5, "expired"),
        (GOOD, f"sb://{HOST}/queue2", 0, "does not cover"),
        (GOOD, f"sb://{HOST}/q2", 0, "does not cover"),
        (GOOD, f"sb://{HOST}", 0, "does not cover"),
        (GOOD, "sb://other.servicebus.windows.net/q", 0, "does not cover"),
        (GOOD, f"sb://{HOST}/Q", 0, "does not cover"),
        (signed("https://h/q"), "sb://h/q", 0, "not an sb:// or amqps:// URI"),
        (GOOD, f"{HOST}/q", 0, "not an sb:// or amqps:// URI"),
    ],
)
def test_verify_refuses_bad_tokens_without_revealing_the_signature(
    token: str, audience: str, now: float, reason: str
) -> None:
    with pytest.raises(SasTokenError, match=reason) as caught:
        verify_sas_token(token, KEYS, audience, now)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert GOOD_SIG not in message
    assert "sig=" not in message
    assert SECRET_KEY not in message


def test_verify_refuses_a_token_signed_with_another_key() -> None:
    token = generate_sas_token(f"sb://{HOST}/q", "RootManageSharedAccessKey", "wrong", EXPIRY)
    with pytest.raises(SasTokenError, match="signature does not match"):
        verify_sas_token(token, KEYS, f"sb://{HOST}/q", EXPIRY - 1)


_segment = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="/?#%"),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() == s and s not in (".", ".."))
_host = st.from_regex(r"[a-z][a-z0-9-]{0,20}\.servicebus\.windows\.net", fullmatch=True)


@given(
    host=_host,
    path=st.lists(_segment, max_size=4),
    extra=st.lists(_segment, max_size=3),
    key_name=st.text(alphabet=string.ascii_letters + string.digits + ".-_ +%", min_size=1),
    key=st.text(min_size=1).filter(lambda s: "\x00" not in s),
    expires_at=st.integers(min_value=1, max_value=2**40),
)
def test_generate_then_verify_round_trip(
    host: str,
    path: list[str],
    extra: list[str],
    key_name: str,
    key: str,
    expires_at: int,
) -> None:
    granted = audience_for(host, "/".join(path) or None)
    requested = audience_for(host, "/".join(path + extra) or None)
    token = generate_sas_token(granted, key_name, key, expires_at)
    assert token == sdk_generate_sas_token(granted, key_name, key, expires_at)
    verify_sas_token(token, {key_name: key}, requested, now=expires_at - 1)
    with pytest.raises(SasTokenError, match="expired"):
        verify_sas_token(token, {key_name: key}, requested, now=expires_at)
    with pytest.raises(SasTokenError, match="signature"):
        verify_sas_token(token, {key_name: key + "x"}, requested, now=expires_at - 1)
