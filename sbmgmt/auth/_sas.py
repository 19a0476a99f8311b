"""SAS tokens: signing one for an audience, and verifying one (the fake namespace's side).

:func:`generate_sas_token` signs what the official SDK signs, byte for byte;
:func:`verify_sas_token` is the server side of the same math, used by the fake
namespace. :func:`audience_for` names an entity's audience and :func:`audience_parts`
parses one. A signature never appears in an exception message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
from collections.abc import Collection, Mapping
from urllib.parse import quote_plus, unquote_plus, urlsplit

from ._connection_string import url_host

__all__ = [
    "HTTP_AUDIENCE_SCHEMES",
    "SasTokenError",
    "audience_for",
    "audience_parts",
    "canonical_host",
    "generate_sas_token",
    "sas_expiry",
    "sas_fields",
    "verify_sas_token",
]

_SAS_PREFIX = "SharedAccessSignature "
_SAS_FIELDS = ("sr", "sig", "se", "skn")
_AUDIENCE_SCHEMES = ("sb", "amqps", "amqp")
#: What the administration API's clients sign: the request's own ``https://`` URL (``http://``
#: against the emulator's plain port), and ("" here) the bare ``host[:port]`` the JavaScript
#: SDK signs its forwarding targets' tokens for.
HTTP_AUDIENCE_SCHEMES = (*_AUDIENCE_SCHEMES, "https", "http", "")


class SasTokenError(ValueError):
    """A SAS token that is malformed or that does not grant access; the message says why
    and never holds the signature."""


def audience_for(host: str, entity_path: str | None = None) -> str:
    """The token audience for an entity (``sb://<host>/<entity path>``), or for the whole
    namespace when ``entity_path`` is ``None``. ``host`` may carry a port (as the SDKs
    do for the emulator); a bare IPv6 address is bracketed."""
    path = (entity_path or "").strip("/")
    return f"sb://{url_host(host)}/{path}" if path else f"sb://{url_host(host)}"


def canonical_host(host: str) -> str:
    """A host as audiences are compared: lower case, brackets off, an IP address in its
    one canonical form (``[0:0::1]`` and ``::1`` are the same host).

    Args:
        host: a host name or IP literal (IPv6 with or without brackets).

    Returns:
        The host to compare.
    """
    bare = host.strip().lower()
    if bare.startswith("[") and bare.endswith("]"):
        bare = bare[1:-1]
    try:
        return ipaddress.ip_address(bare).compressed
    except ValueError:
        return bare


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


def sas_fields(token: str) -> dict[str, str]:
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


def sas_expiry(fields: Mapping[str, str]) -> int:
    raw = fields.get("se")
    if raw is None:
        raise SasTokenError("SAS token has no expiry (se)")
    if not raw.isascii() or not raw.isdigit():
        raise SasTokenError("SAS token expiry (se) is not a number of seconds")
    if len(raw) > _SE_DIGITS:  # int() of thousands of digits is slow, then refused
        raise SasTokenError("SAS token expiry (se) is out of range")
    return int(raw)


def verify_sas_token(token: str, keys: Mapping[str, str], audience: str, now: float, *,
                     schemes: Collection[str] = _AUDIENCE_SCHEMES) -> int:
    """Check that ``token`` grants access to ``audience`` at time ``now`` (epoch seconds);
    returns the token's expiry (its ``se``, epoch seconds).

    ``keys`` maps key names to keys. Raises :class:`SasTokenError` when the token is
    malformed, names an unknown key, has a bad signature (compared in constant time),
    has expired, or its ``sr`` does not cover ``audience``. ``sr`` covers an audience
    when it is a prefix of it at a path boundary; scheme (``sb``/``amqps``/``amqp``),
    host case, port and trailing slashes do not matter, so the tokens the SDKs make
    for the development emulator (``sb://localhost:5672/...``) are accepted too.
    ``schemes``: the audience schemes accepted (:data:`HTTP_AUDIENCE_SCHEMES` for the
    administration API's HTTP requests).
    """
    fields = sas_fields(token)
    missing = [name for name in _SAS_FIELDS if name not in fields]
    if missing:
        raise SasTokenError(f"SAS token is missing {', '.join(missing)}")
    expiry = sas_expiry(fields)
    key = _key_for(unquote_plus(fields["skn"]), keys)
    expected = _signature(fields["sr"], fields["se"], key)
    if not hmac.compare_digest(expected.encode(), unquote_plus(fields["sig"]).encode()):
        raise SasTokenError("SAS token signature does not match")
    if now >= expiry:
        raise SasTokenError(f"SAS token expired at {expiry} (epoch seconds)")
    token_audience = unquote_plus(fields["sr"])
    if not _covers(audience_parts(token_audience, schemes), audience_parts(audience, schemes)):
        raise SasTokenError(f"SAS token audience {token_audience!r} does not cover {audience!r}")
    return expiry


def _key_for(key_name: str, keys: Mapping[str, str]) -> str:
    """The key for a token's key name: the Python SDK URL-encodes names twice, others once."""
    for candidate in (unquote_plus(key_name), key_name):
        key = keys.get(candidate)
        if key is not None:
            return key
    raise SasTokenError(f"SAS token names an unknown key {unquote_plus(key_name)!r}")


def audience_parts(audience: str, schemes: Collection[str] = _AUDIENCE_SCHEMES,
                   ) -> tuple[str, tuple[str, ...]]:
    """``(lower-case host, path segments)`` of an ``sb://`` / ``amqps://`` audience (or one of
    ``schemes``); :class:`SasTokenError` if it is none of them."""
    if "" in schemes and "://" not in audience:
        audience = f"sb://{audience.strip()}"
    try:
        parts = urlsplit(audience.strip())
        hostname = parts.hostname
    except ValueError:  # e.g. an unbalanced "[" in the host
        raise SasTokenError(f"audience {audience!r} is not a URI") from None
    if parts.scheme.lower() not in schemes or not hostname:
        raise SasTokenError(f"audience {audience!r} is not an sb:// or amqps:// URI")
    segments = tuple(segment for segment in parts.path.split("/") if segment)
    return canonical_host(hostname), segments


def _covers(granted: tuple[str, tuple[str, ...]], requested: tuple[str, tuple[str, ...]]) -> bool:
    granted_host, granted_path = granted
    requested_host, requested_path = requested
    return granted_host == requested_host and requested_path[: len(granted_path)] == granted_path
