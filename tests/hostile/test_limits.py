"""The fake's limits (fakes.Limits): time-outs, connections, replies a client does not
take, the reply-address cache, and warnings under a flood."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from fakes import FakeNamespace, Limits
from sbmgmt import ManagementClient
from tests._waiting import wait_until

from ._raw import RawPeer, authorize, message_bytes

_PEEK = {"operation": "com.microsoft:peek-message", "from-sequence-number": 1,
         "message-count": 1}
_KEY = "SAS_KEY_VALUE"


def _namespace(**timeouts: float) -> Iterator[FakeNamespace]:
    limits = Limits(max_connections=3, max_waiting_replies=20, reply_cache_size=8, **timeouts)
    with FakeNamespace(limits=limits) as namespace:
        namespace.add_queue("q")
        yield namespace


@pytest.fixture
def limited() -> Iterator[FakeNamespace]:
    """Short time-outs, for the tests of the time-outs."""
    yield from _namespace(handshake_timeout=0.3, idle_timeout=0.6)


@pytest.fixture
def capped() -> Iterator[FakeNamespace]:
    """The same caps with the default time-outs: a raw peer is ticked only while the test
    pumps it, so with a 0.6 s idle time-out any pause of the test's process that long (a
    full collection late in a long run) closed its connection and failed the test."""
    yield from _namespace()


def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    """Whether the other end closes ``sock`` within ``within`` seconds (data is read)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    return True


def _peek_request(reply_to: str) -> bytes:
    return message_bytes(properties=[uuid.uuid4(), None, None, None, reply_to],
                         application_properties=_PEEK, body={})


def test_a_connection_that_never_opens_is_closed(limited: FakeNamespace) -> None:
    with socket.create_connection((limited.host, limited.port)) as silent, \
            socket.create_connection((limited.host, limited.port)) as header_only:
        header_only.sendall(b"AMQP\x03\x01")  # half a protocol header, then nothing
        assert _closed_by_peer(silent, 5)
        assert _closed_by_peer(header_only, 5)


def test_a_silent_connection_is_closed_after_the_idle_timeout(limited: FakeNamespace) -> None:
    with RawPeer(limited.host, limited.port) as peer:
        assert peer.pump(lambda: bool(peer.connection.state & peer.connection.REMOTE_ACTIVE))
        # proton advertises half the time after which it closes a silent connection.
        assert peer.transport.remote_idle_timeout == pytest.approx(0.3)
        # The peer now stays silent (no heartbeat): the fake closes the connection.
        assert _closed_by_peer(peer.sock, 5)


@pytest.mark.realtime("the idle time-out is the AMQP connection's, kept by the fake's I/O "
                      "loop in real time")
def test_a_well_behaved_client_outlives_the_idle_timeout(limited: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(limited.connection_string,
                                                 timeout=5) as client:
        queue = client.entity("q")
        assert queue.peek_messages() == []
        time.sleep(1.5)  # more than twice the idle time-out, the client's heartbeats go on
        assert queue.peek_messages() == []
        assert client.stats.failed == 0


def test_connections_beyond_the_limit_are_refused(capped: FakeNamespace) -> None:
    peers = [RawPeer(capped.host, capped.port) for _ in range(4)]
    try:
        for peer in peers:
            peer.pump(lambda p=peer: not p.connection.state & p.connection.REMOTE_UNINIT)
        refused = peers[3]
        assert refused.pump(lambda: refused.connection.remote_condition is not None)
        assert refused.connection.remote_condition.name == "amqp:resource-limit-exceeded"
        assert all(p.connection.remote_condition is None for p in peers[:3])
    finally:
        for peer in peers:
            peer.close()


def test_replies_nobody_takes_stop_the_credit_of_the_request_link(
        capped: FakeNamespace) -> None:
    with RawPeer(capped.host, capped.port) as peer:
        authorize(peer, capped.host, capped.port, capped.key_name, _KEY)
        sender = peer.sender("q/$management")
        receiver = peer.receiver("q/$management", "q/$management/r", credit=0)
        assert peer.pump(lambda: sender.credit > 0)
        sent = 0
        for _ in range(4):  # send whatever credit the fake gives, until it gives none
            while sender.credit > 0:
                peer.send(sender, _peek_request("q/$management/r"))
                sent += 1
            peer.pump(timeout=0.2)
        assert sender.credit == 0
        # At most the credit first given (500) plus the waiting replies' limit (20).
        assert sent <= 500 + 20
        receiver.flow(10_000)  # the client takes its replies: credit comes back
        assert peer.pump(lambda: sender.credit > 0)
        replies: list[bytes] = []
        assert peer.pump(lambda: replies.extend(peer.received(receiver)) or len(replies) >= sent)
        assert len(replies) == sent


def test_the_reply_address_cache_is_bounded(capped: FakeNamespace) -> None:
    with RawPeer(capped.host, capped.port) as peer:
        authorize(peer, capped.host, capped.port, capped.key_name, _KEY)
        sender = peer.sender("q/$management")
        receiver = peer.receiver("q/$management", "q/$management/r", credit=500)
        assert peer.pump(lambda: sender.credit > 0)
        for n in range(100):
            peer.send(sender, _peek_request(f"q/$management/unique-{n}"))
        replies: list[bytes] = []
        assert peer.pump(lambda: replies.extend(peer.received(receiver)) or len(replies) >= 100)
        server = capped._server
        assert server is not None
        sizes = [len(state.reply_cache) for state in server.records.connections.values()]
        assert sizes and max(sizes) <= 8


def test_a_flood_without_a_reply_link_writes_one_warning(
        capped: FakeNamespace, caplog: pytest.LogCaptureFixture) -> None:
    with RawPeer(capped.host, capped.port) as peer, \
            caplog.at_level(logging.WARNING, logger="fakes.server"):
        authorize(peer, capped.host, capped.port, capped.key_name, _KEY)
        sender = peer.sender("q/$management")  # and no reply link at all
        assert peer.pump(lambda: sender.credit > 0)
        deliveries = [peer.send(sender, _peek_request("q/$management/r")) for _ in range(200)]
        assert peer.pump(lambda: all(d.remote_state is not None for d in deliveries))
    dropped = [r for r in caplog.records if "no reply link" in r.getMessage()]
    assert len(dropped) == 1


def test_links_beyond_the_limit_are_refused_until_one_detaches() -> None:
    with FakeNamespace(limits=Limits(max_links_per_connection=4)) as fake:
        fake.add_queue("q")
        with RawPeer(fake.host, fake.port) as peer:
            authorize(peer, fake.host, fake.port, fake.key_name, _KEY)  # two links, closed
            server = fake._server
            assert server is not None
            # proton writes new attaches before pending detaches: let the $cbs links go first
            assert peer.pump(lambda: [s.links for s in server.records.connections.values()] == [0])
            held = [peer.sender("q") for _ in range(4)]
            assert peer.pump(lambda: all(link.state & link.REMOTE_ACTIVE for link in held))
            refused = peer.sender("q")
            assert peer.pump(lambda: refused.remote_condition is not None)
            assert refused.remote_condition.name == "amqp:resource-limit-exceeded"
            assert all(link.remote_condition is None for link in held)
            held[0].close()
            assert peer.pump(lambda: bool(held[0].state & held[0].REMOTE_CLOSED))
            again = peer.sender("q")
            assert peer.pump(lambda: bool(again.state & again.REMOTE_ACTIVE))
            assert again.remote_condition is None


def _eventually(condition: Callable[[], bool], within: float = 5.0) -> bool:
    return wait_until(condition, within)


def test_what_a_client_detaches_or_closes_leaves_no_record_behind() -> None:
    """The server's records of links and connections (kept beside proton's objects, by C
    pointer) go with what they describe: none is left to grow, or to be found by a new
    object at a reused address."""
    with FakeNamespace() as fake:
        fake.add_queue("q")
        server = fake._server
        assert server is not None
        with RawPeer(fake.host, fake.port) as peer:
            authorize(peer, fake.host, fake.port, fake.key_name, _KEY)  # two links, closed
            sender = peer.sender("q")
            receiver = peer.receiver("q", "local", credit=10)
            assert peer.pump(lambda: len(server.records.links) == 2
                             and len(server.consumers.consumers) == 1)
            receiver.close()
            assert peer.pump(lambda: len(server.records.links) == 1
                             and not server.consumers.consumers)
            assert [r.address for r in server.records.links.values()] == ["q"]
            assert sender.state & sender.REMOTE_ACTIVE
        assert _eventually(lambda: not server.records.connections)
        assert not server.records.links
        assert not server.records.by_key
