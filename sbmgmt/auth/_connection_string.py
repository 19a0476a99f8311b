"""Connection strings: ``Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=...``.

:func:`parse_connection_string` reads one into a :class:`ConnectionString`, whose
:meth:`~ConnectionString.amqp_address` says where to connect; :func:`format_connection_string`
writes one (the fake namespace's, the one for an emulator's HTTP port), with
:func:`url_host` bracketing an IPv6 address. Its key and signature never appear in a repr
or an exception message.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = [
    "AMQPS_PORT",
    "AMQP_PORT",
    "MASK",
    "AmqpAddress",
    "ConnectionString",
    "format_connection_string",
    "parse_connection_string",
    "url_host",
]

AMQP_PORT = 5672
"""Plain AMQP port (the development emulator's default)."""
AMQPS_PORT = 5671
"""AMQP over TLS port (every real namespace)."""
#: What a repr shows in place of a key, a signature or a token.
MASK = "***"


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
        key = MASK if self.shared_access_key is not None else None
        signature = MASK if self.shared_access_signature is not None else None
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


def format_connection_string(connection_string: ConnectionString) -> str:
    """Write a connection string that :func:`parse_connection_string` and the official SDKs
    read back as ``connection_string``.

    The endpoint is ``sb://<host>`` (an IPv6 address in brackets, see :func:`url_host`)
    with ``:<port>`` when a port is given; then the key name and key, or the signature;
    ``EntityPath`` when there is one; ``UseDevelopmentEmulator=true`` for the emulator.
    The text holds the key or signature: keep it out of logs.

    Args:
        connection_string: What the text says.

    Returns:
        ``Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=...`` (no trailing ``;``).
    """
    endpoint = f"sb://{url_host(connection_string.fully_qualified_namespace)}"
    if connection_string.port is not None:
        endpoint += f":{connection_string.port}"
    settings = [("Endpoint", endpoint),
                ("SharedAccessKeyName", connection_string.shared_access_key_name),
                ("SharedAccessKey", connection_string.shared_access_key),
                ("SharedAccessSignature", connection_string.shared_access_signature),
                ("EntityPath", connection_string.entity_path),
                ("UseDevelopmentEmulator",
                 "true" if connection_string.use_development_emulator else None)]
    return ";".join(f"{name}={value}" for name, value in settings if value is not None)


def url_host(host: str) -> str:
    """``host`` as it goes in a URL or an endpoint: an IPv6 address in brackets, any other
    host (a name, an IPv4 address, one already in brackets) as it is.

    Args:
        host: A host name or an IP address.

    Returns:
        ``[<address>]`` for an IPv6 address, else ``host``.
    """
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


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

