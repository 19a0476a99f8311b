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

Keys, signatures and tokens never appear in a repr or an exception message; :class:`Scrubber`
masks them in text meant for people (the CLI's stderr, the fake's log).
"""

from ._connection_string import (
    AMQP_PORT,
    AMQPS_PORT,
    AmqpAddress,
    ConnectionString,
    format_connection_string,
    parse_connection_string,
    url_host,
)
from ._providers import (
    ENTRA_SCOPE,
    JWT_TOKEN_TYPE,
    SAS_TOKEN_TYPE,
    AccessToken,
    CredentialTokenProvider,
    SasKeyTokenProvider,
    SasTokenProvider,
    TokenProvider,
    token_provider_for,
    token_provider_from_connection_string,
)
from ._sas import (
    HTTP_AUDIENCE_SCHEMES,
    SasTokenError,
    audience_for,
    audience_parts,
    canonical_host,
    generate_sas_token,
    verify_sas_token,
)
from ._scrub import Scrubber

__all__ = [
    "AMQPS_PORT",
    "AMQP_PORT",
    "ENTRA_SCOPE",
    "HTTP_AUDIENCE_SCHEMES",
    "JWT_TOKEN_TYPE",
    "SAS_TOKEN_TYPE",
    "AccessToken",
    "AmqpAddress",
    "ConnectionString",
    "CredentialTokenProvider",
    "SasKeyTokenProvider",
    "SasTokenError",
    "SasTokenProvider",
    "Scrubber",
    "TokenProvider",
    "audience_for",
    "audience_parts",
    "canonical_host",
    "format_connection_string",
    "generate_sas_token",
    "parse_connection_string",
    "token_provider_for",
    "token_provider_from_connection_string",
    "url_host",
    "verify_sas_token",
]
