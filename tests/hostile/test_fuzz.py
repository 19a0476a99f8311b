"""Fuzzing the fake: whatever one client sends, a normal client is served afterwards.

Each example sends one message whose sections hold random values (properties,
application properties, body) to ``$cbs``, ``q/$management``, the queue ``q`` or a
random address, on a connection that holds a valid token; or, after ``open`` on a
throwaway connection, a frame holding a performative with random fields or random
bytes. The invariant, checked after every
example: a well-behaved client's peek is answered.

The CI run makes a few thousand examples; a longer run::

    SBMGMT_FUZZ_EXAMPLES=100000 python -m pytest tests/hostile/test_fuzz.py
"""

from __future__ import annotations

import os
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proton import Described, symbol, timestamp, ulong

from fakes import FakeNamespace
from sbmgmt import ManagementClient, ops
from sbmgmt.amqp.encode import encode_value

from ._raw import RawPeer, authorize, message_bytes
from .conftest import QUEUE, served

EXAMPLES = int(os.environ.get("SBMGMT_FUZZ_EXAMPLES", "3000"))
_KEY = "SAS_KEY_VALUE"

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.builds(ulong, st.integers(0, 2**64 - 1)),
    st.builds(timestamp, st.integers(-(2**63), 2**63 - 1)),
    st.floats(allow_nan=True), st.text(max_size=40), st.binary(max_size=40), st.uuids(),
    st.builds(symbol, st.text(alphabet="abcdefghijklmnopqrstuvwxyz:-", max_size=20)),
)
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)),
    max_leaves=4)
_operations = st.sampled_from([*ops.OPERATIONS, "put-token"])
_application_properties = st.one_of(
    st.dictionaries(st.sampled_from(["operation", "name", "type", "sequence-numbers",
                                     "lock-tokens", "session-id", "expiration"]),
                    _values, max_size=4),
    st.builds(lambda op, rest: {"operation": op, **rest}, _operations,
              st.dictionaries(st.text(max_size=20), _values, max_size=3)),
    _values,
)
_addresses = st.one_of(st.sampled_from(["$cbs", f"{QUEUE}/$management", QUEUE]),
                       st.text(max_size=30))
_messages = st.tuples(
    _addresses,
    st.lists(_scalars, max_size=13),
    _application_properties,
    st.one_of(_values, st.dictionaries(st.text(max_size=20), _values, max_size=3)),
)

#: AMQP 1.0 part 2 §2.7: open 0x10, begin 0x11, attach 0x12, flow 0x13, transfer 0x14,
#: disposition 0x15, detach 0x16, end 0x17, close 0x18; with random fields.
_performatives = st.builds(lambda code, fields: encode_value(Described(ulong(code), fields)),
                           st.integers(0x10, 0x18), st.lists(_scalars, max_size=12))


class _Attacker:
    """One authorized connection, kept across examples (opened again when the fake
    closes it), with a sender and a reply receiver per address."""

    def __init__(self, fake: FakeNamespace) -> None:
        self.fake = fake
        self.peer: RawPeer | None = None
        self.links: dict[str, Any] = {}
        self.receivers: list[Any] = []

    def connection(self) -> RawPeer:
        peer = self.peer
        if peer is None or peer.peer_closed or peer.connection.remote_condition is not None:
            if peer is not None:
                peer.close()
            peer = self.peer = RawPeer(self.fake.host, self.fake.port)
            authorize(peer, self.fake.host, self.fake.port, self.fake.key_name, _KEY)
            self.links = {}
            self.receivers = []
        return peer

    def send(self, address: str, data: bytes) -> None:
        peer = self.connection()
        sender = self.links.get(address)
        if sender is None or sender.state & sender.REMOTE_CLOSED:
            sender = self.links[address] = peer.sender(address)
            self.receivers.append(peer.receiver(address, f"{address}/fuzz-reply"))
            peer.pump(lambda: sender.credit > 0 or bool(sender.state & sender.REMOTE_CLOSED),
                      timeout=1.0)
        if sender.credit <= 0:
            return  # refused (unknown address), or no credit: nothing to send on
        delivery = peer.send(sender, data)
        peer.pump(lambda: delivery.remote_state is not None or peer.peer_closed
                  or bool(sender.state & sender.REMOTE_CLOSED), timeout=1.0)
        for receiver in self.receivers:  # take the replies, and give their credit back
            if peer.received(receiver) and receiver.state & receiver.LOCAL_ACTIVE:
                receiver.flow(100 - receiver.credit)

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()


_ATTACKERS: dict[int, _Attacker] = {}


@pytest.mark.slow("3,000 hypothesis examples against one fake: each about 3 ms of drawing "
                  "and 2 ms of attack and probe")
@settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
          suppress_health_check=list(HealthCheck))
@given(message=_messages)
def test_any_message_leaves_the_fake_serving(
        fake: FakeNamespace, client: ManagementClient,
        message: tuple[str, list[Any], Any, Any]) -> None:
    attacker = _ATTACKERS.setdefault(id(fake), _Attacker(fake))
    address, properties, application_properties, body = message
    attacker.send(address, message_bytes(properties=properties,
                                         application_properties=application_properties,
                                         body=body))
    assert served(client)


@settings(max_examples=max(50, EXAMPLES // 10), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(body=st.one_of(st.binary(max_size=64), _performatives), frame_type=st.sampled_from([0, 1]),
       channel=st.integers(0, 3))
def test_any_frame_after_open_leaves_the_fake_serving(
        fake: FakeNamespace, client: ManagementClient, body: bytes, frame_type: int,
        channel: int) -> None:
    with RawPeer(fake.host, fake.port) as peer:
        peer.pump(lambda: not peer.connection.state & peer.connection.REMOTE_UNINIT,
                  timeout=1.0)
        peer.sock.sendall(struct.pack(">IBBH", 8 + len(body), 2, frame_type, channel) + body)
        peer.pump(timeout=0.01)
    assert served(client)


def teardown_module() -> None:
    for attacker in _ATTACKERS.values():
        attacker.close()
    _ATTACKERS.clear()
