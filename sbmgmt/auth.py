"""Connection strings, SAS tokens and token providers, plus SAS verification for the fake.

The client authenticates every entity with a CBS put-token before attaching its
management links. A :class:`TokenProvider` turns an audience (``sb://<host>/<entity>``,
see :func:`audience_for`) into an :class:`AccessToken`:

- :class:`SasKeyTokenProvider` signs a fresh SAS token with a shared access key;
- :class:`SasTokenProvider` hands out one fixed SAS token;
- :class:`CredentialTokenProvider` asks an Entra ID credential (azure-core
  ``TokenCredential``) for a JWT.

:func:`token_provider_for` adapts whatever a caller passes as a credential, and
:func:`token_provider_from_connection_string` reads one from a
:class:`ConnectionString`. :func:`verify_sas_token` is the server side of the same
SAS math, used by the fake namespace.

Keys, signatures and tokens never appear in a repr or an exception message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple, Protocol, cast
from urllib.parse import quote_plus, unquote_plus, urlsplit

__all__ = [
    "AMQPS_PORT",
    "AMQP_PORT",
    "ENTRA_SCOPE",
    "JWT_TOKEN_TYPE",
    "SAS_TOKEN_TYPE",
    "AccessToken",
    "AmqpAddress",
    "ConnectionString",
    "CredentialTokenProvider",
    "SasKeyTokenProvider",
    "SasTokenError",
    "SasTokenProvider",
    "TokenProvider",
    "audience_for",
    "audience_parts",
    "generate_sas_token",
    "parse_connection_string",
    "token_provider_for",
    "token_provider_from_connection_string",
    "verify_sas_token",
]

AMQP_PORT = 5672
"""Plain AMQP port (the development emulator's default)."""
AMQPS_PORT = 5671
"""AMQP over TLS port (every real namespace)."""
SAS_TOKEN_TYPE = "servicebus.windows.net:sastoken"
"""CBS token type of a shared access signature."""
JWT_TOKEN_TYPE = "jwt"
"""CBS token type of an Entra ID token."""
ENTRA_SCOPE = "https://servicebus.azure.net/.default"
"""The scope an Entra ID credential is asked for."""

_MASK = "***"
_SAS_PREFIX = "SharedAccessSignature "
_SAS_FIELDS = ("sr", "sig", "se", "skn")
_AUDIENCE_SCHEMES = ("sb", "amqps", "amqp")


# --------------------------------------------------------------------------------------
# Connection strings
# --------------------------------------------------------------------------------------


class AmqpAddress(NamedTuple):
    """Where to open the AMQP connection for a namespace."""

    host: str
    port: int
    use_tls: bool


@dataclass(frozen=True, repr=False)
class ConnectionString:
    """A parsed Service Bus connection string (see :func:`parse_connection_string`).

    ``shared_access_key`` and ``shared_access_signature`` are secrets: the repr
    shows ``***`` in their place.
    """

    fully_qualified_namespace: str
    port: int | None = None
    shared_access_key_name: str | None = None
    shared_access_key: str | None = None
    shared_access_signature: str | None = None
    entity_path: str | None = None
    use_development_emulator: bool = False

    def __repr__(self) -> str:
        key = _MASK if self.shared_access_key is not None else None
        signature = _MASK if self.shared_access_signature is not None else None
        return (
            f"ConnectionString(fully_qualified_namespace={self.fully_qualified_namespace!r}, "
            f"port={self.port!r}, shared_access_key_name={self.shared_access_key_name!r}, "
            f"shared_access_key={key!r}, shared_access_signature={signature!r}, "
            f"entity_path={self.entity_path!r}, "
            f"use_development_emulator={self.use_development_emulator!r})"
        )

    def amqp_address(self) -> AmqpAddress:
        """``(host, port, use_tls)``: plain AMQP on the given port (default 5672) for the
        development emulator, otherwise TLS on 5671 (a port in the endpoint is ignored,
        as the official SDKs do)."""
        if self.use_development_emulator:
            return AmqpAddress(self.fully_qualified_namespace, self.port or AMQP_PORT, False)
        return AmqpAddress(self.fully_qualified_namespace, AMQPS_PORT, True)


_CONNECTION_STRING_KEYS = {
    "endpoint": "Endpoint",
    "sharedaccesskeyname": "SharedAccessKeyName",
    "sharedaccesskey": "SharedAccessKey",
    "sharedaccesssignature": "SharedAccessSignature",
    "entitypath": "EntityPath",
    "usedevelopmentemulator": "UseDevelopmentEmulator",
}


def parse_connection_string(text: str) -> ConnectionString:
    """Parse ``Endpoint=sb://host/;SharedAccessKeyName=...;SharedAccessKey=...``.

    Keys are case-insensitive; whitespace around keys and values and empty segments
    (a trailing ``;``) are ignored, and so are unknown keys, as the official SDKs do.
    Raises :class:`ValueError` (whose message never holds a key or a signature) when
    the endpoint is missing or not ``sb://``, a key name comes without a key or the
    other way round, both a key and a signature are given, neither is, or
    ``UseDevelopmentEmulator=true`` names a host that is not loopback.
    """
    settings = _split_settings(text)
    endpoint = settings.get("Endpoint")
    if endpoint is None:
        raise ValueError("Connection string has no Endpoint")
    host, port = _parse_endpoint(endpoint)
    key_name = settings.get("SharedAccessKeyName")
    key = settings.get("SharedAccessKey")
    signature = settings.get("SharedAccessSignature")
    if (key_name is None) != (key is None):
        raise ValueError("Connection string must have both SharedAccessKeyName and SharedAccessKey")
    if key is not None and signature is not None:
        raise ValueError(
            "Connection string must not have both SharedAccessKey and SharedAccessSignature"
        )
    if key is None and signature is None:
        raise ValueError(
            "Connection string must have SharedAccessKeyName and SharedAccessKey, "
            "or SharedAccessSignature"
        )
    emulator = _parse_bool("UseDevelopmentEmulator", settings.get("UseDevelopmentEmulator"))
    if emulator and not _is_loopback(host):
        raise ValueError(
            f"UseDevelopmentEmulator=true requires a loopback host "
            f"(localhost, 127.0.0.0/8 or ::1), not {host!r}"
        )
    return ConnectionString(
        fully_qualified_namespace=host,
        port=port,
        shared_access_key_name=key_name,
        shared_access_key=key,
        shared_access_signature=signature,
        entity_path=settings.get("EntityPath"),
        use_development_emulator=emulator,
    )


def _split_settings(text: str) -> dict[str, str]:
    """The known settings of a connection string, by canonical key name."""
    settings: dict[str, str] = {}
    for position, segment in enumerate(text.split(";"), start=1):
        if not segment.strip():
            continue
        raw_key, equals, raw_value = segment.partition("=")
        if not equals:
            raise ValueError(f"Connection string segment {position} is not of the form key=value")
        canonical = _CONNECTION_STRING_KEYS.get(raw_key.strip().lower())
        if canonical is None:
            continue
        value = raw_value.strip()
        if not value:
            raise ValueError(f"Connection string has an empty {canonical}")
        if canonical in settings:
            raise ValueError(f"Connection string has {canonical} more than once")
        settings[canonical] = value
    return settings


def _parse_endpoint(endpoint: str) -> tuple[str, int | None]:
    parts = urlsplit(endpoint)
    if parts.scheme.lower() != "sb":
        shown = parts.scheme or "none"
        raise ValueError(f"Endpoint must start with sb:// (scheme was {shown!r})")
    if not parts.hostname:
        raise ValueError("Endpoint has no host name")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("Endpoint has an invalid port") from None
    return parts.hostname, port


def _parse_bool(name: str, value: str | None) -> bool:
    if value is None or value.lower() == "false":
        return False
    if value.lower() == "true":
        return True
    raise ValueError(f"{name} must be true or false")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------------------
# SAS tokens
# --------------------------------------------------------------------------------------


class SasTokenError(ValueError):
    """A SAS token that is malformed or that does not grant access; the message says why
    and never holds the signature."""


def audience_for(host: str, entity_path: str | None = None) -> str:
    """The token audience for an entity (``sb://<host>/<entity path>``), or for the whole
    namespace when ``entity_path`` is ``None``. ``host`` may carry a port (as the SDKs
    do for the emulator); a bare IPv6 address is bracketed."""
    if _is_ipv6(host):
        host = f"[{host}]"
    path = (entity_path or "").strip("/")
    return f"sb://{host}/{path}" if path else f"sb://{host}"


def _is_ipv6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def _signature(audience_quoted: str, expiry: str, key: str) -> str:
    """Base64 HMAC-SHA256 of ``"<url-encoded audience>\\n<expiry>"`` keyed by ``key``."""
    message = f"{audience_quoted}\n{expiry}".encode()
    digest = hmac.new(key.encode(), message, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def generate_sas_token(audience: str, key_name: str, key: str, expires_at: int) -> str:
    """A SAS token for ``audience`` valid until ``expires_at`` (epoch seconds).

    The result is byte for byte what the official azure-servicebus SDK produces,
    including its double URL-encoding of the key name (a no-op for the letters,
    digits, ``.``, ``-`` and ``_`` that Service Bus allows in key names).
    """
    if not audience:
        raise ValueError("SAS token audience must not be empty")
    if not key_name:
        raise ValueError("SAS key name must not be empty")
    if not key:
        raise ValueError("SAS key must not be empty")
    audience_quoted = quote_plus(audience)
    expiry = str(int(expires_at))
    signature = quote_plus(_signature(audience_quoted, expiry, key))
    skn = quote_plus(quote_plus(key_name))
    return f"{_SAS_PREFIX}sr={audience_quoted}&sig={signature}&se={expiry}&skn={skn}"


def _sas_fields(token: str) -> dict[str, str]:
    """The raw (still URL-encoded) fields of a SAS token, by name."""
    if not token.startswith(_SAS_PREFIX):
        raise SasTokenError("SAS token does not start with 'SharedAccessSignature '")
    fields: dict[str, str] = {}
    for pair in token[len(_SAS_PREFIX) :].split("&"):
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise SasTokenError("SAS token is malformed: expected name=value pairs")
        if name in fields:
            raise SasTokenError(f"SAS token has the field {name!r} more than once")
        fields[name] = value
    return fields


#: An expiry (epoch seconds) has at most this many digits (2**64 has 20).
_SE_DIGITS = 20


def _sas_expiry(fields: Mapping[str, str]) -> int:
    raw = fields.get("se")
    if raw is None:
        raise SasTokenError("SAS token has no expiry (se)")
    if not raw.isascii() or not raw.isdigit():
        raise SasTokenError("SAS token expiry (se) is not a number of seconds")
    if len(raw) > _SE_DIGITS:  # int() of thousands of digits is slow, then refused
        raise SasTokenError("SAS token expiry (se) is out of range")
    return int(raw)


def verify_sas_token(token: str, keys: Mapping[str, str], audience: str, now: float) -> int:
    """Check that ``token`` grants access to ``audience`` at time ``now`` (epoch seconds);
    returns the token's expiry (its ``se``, epoch seconds).

    ``keys`` maps key names to keys. Raises :class:`SasTokenError` when the token is
    malformed, names an unknown key, has a bad signature (compared in constant time),
    has expired, or its ``sr`` does not cover ``audience``. ``sr`` covers an audience
    when it is a prefix of it at a path boundary; scheme (``sb``/``amqps``/``amqp``),
    host case, port and trailing slashes do not matter, so the tokens the SDKs make
    for the development emulator (``sb://localhost:5672/...``) are accepted too.
    """
    fields = _sas_fields(token)
    missing = [name for name in _SAS_FIELDS if name not in fields]
    if missing:
        raise SasTokenError(f"SAS token is missing {', '.join(missing)}")
    expiry = _sas_expiry(fields)
    key = _key_for(unquote_plus(fields["skn"]), keys)
    expected = _signature(fields["sr"], fields["se"], key)
    if not hmac.compare_digest(expected.encode(), unquote_plus(fields["sig"]).encode()):
        raise SasTokenError("SAS token signature does not match")
    if now >= expiry:
        raise SasTokenError(f"SAS token expired at {expiry} (epoch seconds)")
    token_audience = unquote_plus(fields["sr"])
    if not _covers(audience_parts(token_audience), audience_parts(audience)):
        raise SasTokenError(f"SAS token audience {token_audience!r} does not cover {audience!r}")
    return expiry


def _key_for(key_name: str, keys: Mapping[str, str]) -> str:
    """The key for a token's key name: the Python SDK URL-encodes names twice, others once."""
    for candidate in (unquote_plus(key_name), key_name):
        key = keys.get(candidate)
        if key is not None:
            return key
    raise SasTokenError(f"SAS token names an unknown key {unquote_plus(key_name)!r}")


def audience_parts(audience: str) -> tuple[str, tuple[str, ...]]:
    """``(lower-case host, path segments)`` of an ``sb://`` / ``amqps://`` audience;
    :class:`SasTokenError` if it is neither."""
    try:
        parts = urlsplit(audience.strip())
        hostname = parts.hostname
    except ValueError:  # e.g. an unbalanced "[" in the host
        raise SasTokenError(f"audience {audience!r} is not a URI") from None
    if parts.scheme.lower() not in _AUDIENCE_SCHEMES or not hostname:
        raise SasTokenError(f"audience {audience!r} is not an sb:// or amqps:// URI")
    segments = tuple(segment for segment in parts.path.split("/") if segment)
    return hostname.lower(), segments


def _covers(granted: tuple[str, tuple[str, ...]], requested: tuple[str, tuple[str, ...]]) -> bool:
    granted_host, granted_path = granted
    requested_host, requested_path = requested
    return granted_host == requested_host and requested_path[: len(granted_path)] == granted_path


# --------------------------------------------------------------------------------------
# Token providers
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class AccessToken:
    """A token for the CBS put-token request: the token, its expiry (epoch seconds) and
    its CBS type. The repr masks the token."""

    token: str
    expires_on: float
    token_type: str

    def __repr__(self) -> str:
        return (
            f"AccessToken(token={_MASK!r}, expires_on={self.expires_on!r}, "
            f"token_type={self.token_type!r})"
        )


class TokenProvider(Protocol):
    """Something that gives a token for an audience (``sb://<host>/<entity>``).

    :func:`token_provider_for` passes through objects whose class subclasses
    ``TokenProvider`` explicitly; any other object with a ``get_token`` method is
    taken to be an azure-core ``TokenCredential``.
    """

    def get_token(self, audience: str) -> AccessToken:
        """A token valid for ``audience``."""
        ...


class SasKeyTokenProvider(TokenProvider):
    """Signs a new SAS token with a shared access key for each request, valid for
    ``token_ttl`` from ``clock()``."""

    def __init__(
        self,
        key_name: str,
        key: str,
        token_ttl: timedelta = timedelta(hours=1),
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not key_name:
            raise ValueError("SAS key name must not be empty")
        if not key:
            raise ValueError("SAS key must not be empty")
        if token_ttl.total_seconds() < 1:
            raise ValueError("token_ttl must be at least one second")
        self.key_name = key_name
        self._key = key
        self.token_ttl = token_ttl
        self._clock = clock

    def __repr__(self) -> str:
        return (
            f"SasKeyTokenProvider(key_name={self.key_name!r}, key={_MASK!r}, "
            f"token_ttl={self.token_ttl!r})"
        )

    def get_token(self, audience: str) -> AccessToken:
        """A freshly signed SAS token for ``audience``."""
        expires_at = int(self._clock()) + int(self.token_ttl.total_seconds())
        token = generate_sas_token(audience, self.key_name, self._key, expires_at)
        return AccessToken(token, float(expires_at), SAS_TOKEN_TYPE)


class SasTokenProvider(TokenProvider):
    """Hands out one fixed SAS token, whatever the audience; its expiry is the token's
    ``se`` field (a token without one is refused with :class:`SasTokenError`)."""

    def __init__(self, signature: str) -> None:
        self._signature = signature
        self.expires_on = float(_sas_expiry(_sas_fields(signature)))

    def __repr__(self) -> str:
        return f"SasTokenProvider(signature={_MASK!r}, expires_on={self.expires_on!r})"

    def get_token(self, audience: str) -> AccessToken:
        """The fixed token (the service decides whether it covers ``audience``)."""
        return AccessToken(self._signature, self.expires_on, SAS_TOKEN_TYPE)


class CredentialTokenProvider(TokenProvider):
    """Asks an Entra ID credential (anything with ``get_token(*scopes)`` returning an
    object with ``.token`` and ``.expires_on``) for a JWT for :data:`ENTRA_SCOPE`."""

    def __init__(self, credential: Any) -> None:
        if not callable(getattr(credential, "get_token", None)):
            raise TypeError(
                f"{type(credential).__name__} has no get_token method; "
                "expected an azure-core TokenCredential"
            )
        self._credential = credential

    def __repr__(self) -> str:
        return f"CredentialTokenProvider(credential={type(self._credential).__name__})"

    def get_token(self, audience: str) -> AccessToken:
        """A JWT from the credential (Entra ID tokens cover every entity of the
        namespace the identity has rights on, so ``audience`` is not sent)."""
        result = self._credential.get_token(ENTRA_SCOPE)
        token = getattr(result, "token", None)
        expires_on = getattr(result, "expires_on", None)
        if not isinstance(token, str) or not isinstance(expires_on, int | float):
            raise TypeError(
                f"{type(self._credential).__name__}.get_token() did not return an object "
                "with a str .token and a numeric .expires_on"
            )
        return AccessToken(token, float(expires_on), JWT_TOKEN_TYPE)


class _NamedKeyCredentialTokenProvider(TokenProvider):
    """Signs with an azure-core ``AzureNamedKeyCredential``'s current name and key (read
    on each request, so ``update()`` takes effect)."""

    def __init__(self, credential: Any) -> None:
        self._credential = credential

    def __repr__(self) -> str:
        return "_NamedKeyCredentialTokenProvider(named_key=***)"

    def get_token(self, audience: str) -> AccessToken:
        """A freshly signed SAS token from the credential's current key."""
        name, key = self._credential.named_key
        return SasKeyTokenProvider(name, key).get_token(audience)


class _SasCredentialTokenProvider(TokenProvider):
    """Hands out an azure-core ``AzureSasCredential``'s current signature (read on each
    request, so ``update()`` takes effect)."""

    def __init__(self, credential: Any) -> None:
        self._credential = credential

    def __repr__(self) -> str:
        return "_SasCredentialTokenProvider(signature=***)"

    def get_token(self, audience: str) -> AccessToken:
        """The credential's current SAS token."""
        return SasTokenProvider(self._credential.signature).get_token(audience)


def token_provider_for(credential: object) -> TokenProvider:
    """Adapt a credential to a :class:`TokenProvider`.

    Accepts a ``TokenProvider`` subclass instance (returned as is), anything with
    ``.named_key`` (``AzureNamedKeyCredential``), anything with ``.signature``
    (``AzureSasCredential``) or anything with ``get_token`` (``TokenCredential``);
    raises :class:`TypeError` otherwise. azure-core is not needed at run time.
    """
    if isinstance(credential, type):
        raise TypeError(f"expected a credential instance, got the class {credential.__name__}")
    if TokenProvider in type(credential).__mro__:
        return cast(TokenProvider, credential)
    if hasattr(credential, "named_key"):
        return _NamedKeyCredentialTokenProvider(credential)
    if hasattr(credential, "signature"):
        return _SasCredentialTokenProvider(credential)
    if callable(getattr(credential, "get_token", None)):
        return CredentialTokenProvider(credential)
    raise TypeError(
        f"unsupported credential type {type(credential).__name__}: expected a TokenProvider, "
        "an AzureNamedKeyCredential (.named_key), an AzureSasCredential (.signature) "
        "or a TokenCredential (.get_token)"
    )


def token_provider_from_connection_string(connection_string: ConnectionString) -> TokenProvider:
    """The token provider for a connection string's key or signature."""
    if connection_string.shared_access_signature is not None:
        return SasTokenProvider(connection_string.shared_access_signature)
    if connection_string.shared_access_key_name is None or (
        connection_string.shared_access_key is None
    ):
        raise ValueError("Connection string has neither a shared access key nor a signature")
    return SasKeyTokenProvider(
        connection_string.shared_access_key_name, connection_string.shared_access_key
    )
