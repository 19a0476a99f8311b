"""Which addresses the fake listens on for a host name, and which names its tokens may use.

The emulator's programs connect to ``localhost``, which resolves to 127.0.0.1 or to ::1
depending on the machine (Node prefers what the resolver lists first, often ::1). So the fake
given ``localhost`` listens on both loopbacks, on the same port; any other host is one address.
A machine without IPv6 loopback gets 127.0.0.1 alone (:func:`listen_addresses` says why in the
log). A token's audience may name the fake by any of the loopback names when it listens on
loopback, since a client that reached it by one of them reached the same namespace.
"""

from __future__ import annotations

import contextlib
import logging
import socket

from sbmgmt.auth import canonical_host

__all__ = ["audience_hosts", "ipv6_loopback", "listen_addresses"]

_LOG = logging.getLogger("fakes.server")
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def ipv6_loopback() -> bool:
    """Whether this machine can listen on ::1."""
    if not socket.has_ipv6:
        return False
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        return True
    return False


def listen_addresses(host: str) -> list[str]:
    """The addresses to listen on for ``host``: both loopbacks for ``localhost``."""
    if host.lower() != "localhost":
        return [host]
    if ipv6_loopback():
        return ["127.0.0.1", "::1"]
    _LOG.info("no IPv6 loopback on this machine: localhost is served on 127.0.0.1 only")
    return ["127.0.0.1"]


def audience_hosts(host: str) -> frozenset[str]:
    """The host names a token's audience may use for a fake listening on ``host``."""
    host = canonical_host(host)
    return _LOOPBACK_NAMES if host in _LOOPBACK_NAMES else frozenset({host})
