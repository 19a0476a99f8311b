"""fakes/_ports.py: one port on every address, for the AMQP and the HTTP port alike (issue 41:
the retry loop and its error were written twice)."""

from __future__ import annotations

import errno

import pytest

from fakes._ports import listen_everywhere


class _Addresses:
    """Listening made up: ``taken`` maps (address, port) to the errno a bind would get."""

    def __init__(self, taken: dict[tuple[str, int], int]) -> None:
        self.taken = taken
        self.open: list[tuple[str, int]] = []
        self.picked = 40000

    def listen(self, address: str, port: int) -> int:
        if port == 0:
            self.picked += 1
            port = self.picked
        code = self.taken.get((address, port))
        if code is not None:
            raise OSError(code, "taken")
        self.open.append((address, port))
        return port

    def release(self) -> None:
        self.open.clear()


def test_a_picked_port_taken_on_the_second_address_is_picked_again() -> None:
    addresses = _Addresses({("::1", 40001): errno.EADDRINUSE})
    port = listen_everywhere(["127.0.0.1", "::1"], 0, addresses.listen, addresses.release,
                             protocol="HTTP")
    assert port == 40002
    assert addresses.open == [("127.0.0.1", 40002), ("::1", 40002)]


def test_a_port_asked_for_is_tried_once_and_named_in_the_error() -> None:
    addresses = _Addresses({("::1", 5300): errno.EADDRINUSE})
    with pytest.raises(OSError, match=r"cannot listen for HTTP on ::1 port 5300") as caught:
        listen_everywhere(["127.0.0.1", "::1"], 5300, addresses.listen, addresses.release,
                          protocol="HTTP")
    assert caught.value.errno == errno.EADDRINUSE
    assert addresses.open == []  # what was bound is released


def test_no_free_port_after_a_few_picks_is_one_error() -> None:
    addresses = _Addresses({("::1", port): errno.EADDRINUSE for port in range(40001, 40010)})
    with pytest.raises(OSError, match=r"no port was free for AMQP on every address"):
        listen_everywhere(["127.0.0.1", "::1"], 0, addresses.listen, addresses.release,
                          protocol="AMQP")


def test_other_errors_are_not_retried() -> None:
    addresses = _Addresses({("127.0.0.1", 40001): errno.EACCES})
    with pytest.raises(OSError, match=r"cannot listen for AMQP on 127.0.0.1 port 0"):
        listen_everywhere(["127.0.0.1"], 0, addresses.listen, addresses.release,
                          protocol="AMQP")
