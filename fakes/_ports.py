"""One port on every address: how both of the fake's ports (AMQP and HTTP) are bound.

The fake given ``localhost`` listens on 127.0.0.1 and ::1 on the same port. When the port is
0, the first address asks the system for a free one and the others take that number; it may
be taken on a later address by someone else, so the whole set is released and a new port is
picked, a few times. A port asked for by number is tried once. Either way a failure is one
:class:`OSError` naming the protocol, the address and the port that could not be had.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence

__all__ = ["listen_everywhere"]

#: How often a free port is picked again when it was taken on a later address.
_PORT_ATTEMPTS = 5


def listen_everywhere(addresses: Sequence[str], port: int, listen: Callable[[str, int], int],
                      release: Callable[[], None], *, protocol: str) -> int:
    """Listen on every address on one port; returns the port.

    Args:
        addresses: the addresses to listen on (at least one).
        port: the port, or 0 for one the system picks on the first address.
        listen: listens on one address and port, returns the bound port (OSError if taken).
        release: closes every listener ``listen`` opened (after a failure).
        protocol: what is listened for, for the error (``AMQP``, ``HTTP``).

    Returns:
        The port every address listens on.

    Raises:
        OSError: an address could not listen on the port (``port`` given), or no free port
            was free on every address after a few picks.
    """
    if not addresses:
        raise ValueError(f"{protocol} needs at least one address to listen on")
    for _attempt in range(_PORT_ATTEMPTS):
        chosen, address = port, addresses[0]
        try:
            for address in addresses:
                chosen = listen(address, chosen)
            return chosen
        except OSError as exc:
            release()
            if port == 0 and exc.errno == errno.EADDRINUSE:
                continue
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise OSError(exc.errno, f"cannot listen for {protocol} on {address} port "
                          f"{chosen}: {reason}") from None
    raise OSError(errno.EADDRINUSE, f"no port was free for {protocol} on every address: "
                  f"{', '.join(addresses)}")
