"""sbmgmt.transport.delayed_socket: bytes held half a round trip each way, in order, the end
behind the bytes before it, a close after the last bytes (a manual clock and timers)."""

from __future__ import annotations

import heapq
import itertools
import socket
from collections.abc import Callable, Iterator

import pytest

from sbmgmt.transport.delayed_socket import DelayedSocket

DELAY = 1 / 128  # a power of two: the manual clock adds up exactly


class Loop:
    """A manual clock and the timers a DelayedSocket schedules on it."""

    def __init__(self) -> None:
        self.now = 100.0
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        #: Every delay a timer was scheduled with, in order.
        self.delays: list[float] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> None:
        self.delays.append(delay)
        heapq.heappush(self._timers, (self.now + delay, next(self._order), callback))

    def advance(self, seconds: float) -> None:
        """Move the clock on, running each timer that comes due on the way."""
        end = self.now + seconds
        while self._timers and self._timers[0][0] <= end:
            due, _order, callback = heapq.heappop(self._timers)
            self.now = max(self.now, due)
            callback()
        self.now = end


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    peer.setblocking(False)
    yield ours, peer
    for end in (ours, peer):
        end.close()


def _delayed(ours: socket.socket, loop: Loop, read: Callable[[], object] = lambda: None,
             closed: list[DelayedSocket] | None = None) -> DelayedSocket:
    return DelayedSocket(ours, DELAY, schedule=loop.schedule, on_due=read,
                         on_closed=(closed if closed is not None else []).append,
                         clock=loop.clock)


def _read_nothing_due(delayed: DelayedSocket) -> None:
    """The loop's read when the socket is readable: it takes the bytes, none are due yet."""
    with pytest.raises(BlockingIOError):
        delayed.recv(1 << 16)


def _peer_reads(peer: socket.socket) -> bytes:
    try:
        return peer.recv(1 << 20)
    except BlockingIOError:
        return b""


def test_incoming_bytes_are_handed_out_only_once_due(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    got: list[bytes] = []
    delayed = _delayed(ours, loop, read=lambda: got.append(delayed.recv(1 << 16)))
    peer.sendall(b"one")
    _read_nothing_due(delayed)  # taken from the socket, not due yet
    loop.advance(DELAY / 2)
    peer.sendall(b"two")
    _read_nothing_due(delayed)  # the loop reads when the socket is readable: stamped now
    assert got == []
    loop.advance(DELAY / 2)  # the first chunk's time: the timer has the loop read it
    assert got == [b"one"]
    _read_nothing_due(delayed)  # "two" came later: not due yet
    loop.advance(DELAY / 2)
    assert got == [b"one", b"two"]


def test_due_chunks_come_together_and_a_short_read_leaves_the_rest_first(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    delayed = _delayed(ours, loop)
    peer.sendall(b"abc")
    _read_nothing_due(delayed)
    peer.sendall(b"def")
    _read_nothing_due(delayed)
    loop.now += DELAY
    assert delayed.recv(4) == b"abcd"
    assert delayed.recv(100) == b"ef"


def test_the_end_of_the_stream_waits_behind_the_bytes_before_it(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    delayed = _delayed(ours, loop)
    peer.sendall(b"last words")
    peer.shutdown(socket.SHUT_WR)
    for _readable in range(2):  # the bytes, then the end: the loop reads at each
        _read_nothing_due(delayed)
    assert not delayed.reading  # the socket is not watched for what it cannot say again
    assert delayed.holding  # ... but the connection is not over
    loop.now += DELAY
    assert delayed.recv(100) == b"last words"
    assert delayed.recv(100) == b""
    assert not delayed.holding
    assert delayed.recv(100) == b""  # and stays at its end


def test_outgoing_bytes_leave_once_due_in_order(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    delayed = _delayed(ours, loop)
    assert delayed.send(b"first ") == 6  # all taken at once
    loop.advance(DELAY / 2)
    assert delayed.send(b"second") == 6
    assert _peer_reads(peer) == b""
    loop.advance(DELAY / 2)
    assert _peer_reads(peer) == b"first "
    loop.advance(DELAY / 2)
    assert _peer_reads(peer) == b"second"


def test_what_the_socket_does_not_take_is_written_later_ahead_of_the_rest(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    loop = Loop()
    delayed = _delayed(ours, loop)
    big = bytes(range(256)) * 4096  # 1 MB: more than the socket takes at once
    delayed.send(big)
    delayed.send(b"after")
    loop.advance(DELAY)
    received = b""
    for _ in range(10_000):
        received += _peer_reads(peer)
        loop.advance(0.001)
        if len(received) == len(big) + 5:
            break
    assert received == big + b"after"


def test_close_waits_for_the_bytes_sent_before_it(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    closed: list[DelayedSocket] = []
    delayed = _delayed(ours, loop, closed=closed)
    delayed.send(b"goodbye")
    delayed.close()
    assert closed == [] and ours.fileno() != -1
    loop.advance(DELAY)
    assert closed == [delayed] and ours.fileno() == -1
    assert _peer_reads(peer) == b"goodbye"
    assert _peer_reads(peer) == b""  # then the end


def test_close_now_drops_what_is_held(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    closed: list[DelayedSocket] = []
    delayed = _delayed(ours, loop, closed=closed)
    delayed.send(b"never")
    delayed.close_now()
    assert closed == [delayed] and ours.fileno() == -1
    loop.advance(DELAY)
    assert _peer_reads(peer) == b""


def test_a_failed_write_is_raised_by_the_next_read(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    loop = Loop()
    reads: list[str] = []

    def read() -> None:
        try:
            delayed.recv(100)
        except OSError as exc:
            reads.append(type(exc).__name__)

    delayed = _delayed(ours, loop, read=read)
    peer.close()
    delayed.send(b"into the void")
    loop.advance(DELAY)  # the write fails: the loop is asked to read, and the read raises
    assert reads and reads[-1] in ("BrokenPipeError", "ConnectionResetError")
    with pytest.raises(OSError):
        delayed.send(b"more")


def test_what_is_due_beyond_a_full_read_comes_at_the_next_pass_not_a_millisecond_later(
        pair: tuple[socket.socket, socket.socket]) -> None:
    """A read takes what the transport has room for; the rest that is due is the loop's to
    read at its next pass (a timer of no delay), as a real socket stays readable: a timer
    of a millisecond held a busy connection to one read (8 KB) a millisecond."""
    ours, peer = pair
    loop = Loop()
    reads: list[bytes] = []
    delayed = _delayed(ours, loop, read=lambda: reads.append(delayed.recv(4)))
    peer.sendall(b"0123456789")
    _read_nothing_due(delayed)
    assert loop.delays == [DELAY]
    loop.advance(DELAY)  # due: read 4 at a time, each rest at the next pass
    assert reads == [b"0123", b"4567", b"89"]
    assert loop.delays == [DELAY, 0.0, 0.0]
    assert loop.now == 100.0 + DELAY  # no millisecond waited between the reads


def test_a_read_with_no_room_is_tried_again_shortly(
        pair: tuple[socket.socket, socket.socket]) -> None:
    """When the transport has no room (the loop's read does not ask), the due bytes wait a
    millisecond rather than spinning the loop."""
    ours, peer = pair
    loop = Loop()
    room = False
    got: list[bytes] = []

    def read() -> None:
        if room:
            got.append(delayed.recv(100))

    delayed = _delayed(ours, loop, read=read)
    peer.sendall(b"held")
    _read_nothing_due(delayed)
    loop.advance(DELAY)  # due, but no room: again a millisecond later
    assert got == []
    assert loop.delays == [DELAY, 0.001]
    room = True
    loop.advance(0.001)
    assert got == [b"held"]
