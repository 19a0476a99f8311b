"""Token providers: what turns an audience into a token for the CBS put-token.

:class:`SasKeyTokenProvider` signs a fresh SAS token with a shared access key,
:class:`SasTokenProvider` hands out one fixed SAS token, and
:class:`CredentialTokenProvider` asks an Entra ID credential for a JWT.
:func:`token_provider_for` adapts whatever a caller passes as a credential, and
:func:`token_provider_from_connection_string` reads one from a connection string.
Keys and tokens never appear in a repr or an exception message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, cast

from ._connection_string import MASK, ConnectionString
from ._sas import generate_sas_token, sas_expiry, sas_fields

__all__ = [
    "ENTRA_SCOPE",
    "JWT_TOKEN_TYPE",
    "SAS_TOKEN_TYPE",
    "AccessToken",
    "CredentialTokenProvider",
    "SasKeyTokenProvider",
    "SasTokenProvider",
    "TokenProvider",
    "token_provider_for",
    "token_provider_from_connection_string",
]

SAS_TOKEN_TYPE = "servicebus.windows.net:sastoken"
"""CBS token type of a shared access signature."""
JWT_TOKEN_TYPE = "jwt"
"""CBS token type of an Entra ID token."""
ENTRA_SCOPE = "https://servicebus.azure.net/.default"
"""The scope an Entra ID credential is asked for."""


@dataclass(frozen=True, repr=False)
class AccessToken:
    """A token for the CBS put-token request: the token, its expiry (epoch seconds) and
    its CBS type. The repr masks the token."""

    token: str
    expires_on: float
    token_type: str

    def __repr__(self) -> str:
        return (
            f"AccessToken(token={MASK!r}, expires_on={self.expires_on!r}, "
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
            f"SasKeyTokenProvider(key_name={self.key_name!r}, key={MASK!r}, "
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
        self.expires_on = float(sas_expiry(sas_fields(signature)))

    def __repr__(self) -> str:
        return f"SasTokenProvider(signature={MASK!r}, expires_on={self.expires_on!r})"

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
