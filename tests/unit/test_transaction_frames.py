"""The coordinator's frames (AMQP 1.0 part 4) byte for byte, against the spec's layout.

Expected bytes are written by hand from the spec: a described type is ``0x00``, its
descriptor (smallulong ``0x53 <code>``) and its list; ``0x45`` is list0, ``0xc0``
list8, ``0xd0`` list32 (size and count as 4 bytes each), ``0xa0`` vbin8, ``0xa3``
sym8, ``0x41`` true, ``0x42`` false, ``0x77`` the amqp-value section. The delivery
states go through proton's engine: two in-memory transports, the bytes each writes.
"""

from __future__ import annotations

from typing import Any

import pytest
from proton import Connection, Described, Message, Terminus, Transport, symbol, ulong

from sbmgmt._engine.open_links import create_coordinator
from sbmgmt.amqp.transaction_frames import (
    COORDINATOR_CAPABILITY,
    DECLARED,
    TRANSACTIONAL_STATE,
    Declare,
    Discharge,
    decode_control,
    encode_declare,
    encode_discharge,
    set_transactional_state,
    transactional_state,
)
from sbmgmt.errors import ProtocolError

TXN = b"txn-1"
VBIN_TXN = b"\xa0\x05" + TXN  # vbin8, 5 bytes
AMQP_VALUE = b"\x00\x53\x77"


def test_declare_is_an_amqp_value_holding_declare_with_no_global_id() -> None:
    # declare (0x31): [global-id] — absent, so the empty list (list0)
    assert encode_declare() == AMQP_VALUE + b"\x00\x53\x31" + b"\x45"
    assert decode_control(encode_declare()) == Declare(None)


@pytest.mark.parametrize(("fail", "boolean"), [(False, b"\x42"), (True, b"\x41")])
def test_discharge_holds_the_txn_id_and_fail(fail: bool, boolean: bytes) -> None:
    # discharge (0x32): [txn-id: binary, fail: boolean] as list32: size 12 (count + 8
    # bytes of items), count 2
    expected = (AMQP_VALUE + b"\x00\x53\x32" + b"\xd0" + (12).to_bytes(4, "big")
                + (2).to_bytes(4, "big") + VBIN_TXN + boolean)
    assert encode_discharge(TXN, fail) == expected
    assert decode_control(expected) == Discharge(TXN, fail)


def test_control_messages_with_symbolic_descriptors_and_other_list_encodings() -> None:
    # proton's own Transaction sends "amqp:declare:list" [null] as a whole message
    proton_declare = bytes(Message(body=Described(symbol("amqp:declare:list"), [None])).encode())
    assert decode_control(proton_declare) == Declare(None)
    # discharge as list8: size 9 (count + 8), count 2, fail true
    symbolic = (AMQP_VALUE + b"\x00\xa3\x13amqp:discharge:list" + b"\xc0\x09\x02"
                + VBIN_TXN + b"\x41")
    assert decode_control(symbolic) == Discharge(TXN, True)
    # fail absent: a commit
    assert decode_control(AMQP_VALUE + b"\x00\x53\x32\xc0\x08\x01" + VBIN_TXN) == Discharge(
        TXN, False)


@pytest.mark.parametrize("data", [
    AMQP_VALUE + b"\x00\x53\x33\x45",              # declared is an outcome, not a control
    AMQP_VALUE + b"\x00\x53\x32\x45",              # discharge without a txn-id
    AMQP_VALUE + b"\x00\x53\x32\xc0\x09\x02" + VBIN_TXN + b"\x51\x01",  # fail as a byte
    AMQP_VALUE + b"\xa1\x03abc",                   # a string body
    b"\x00\x53\x75\xa0\x01x",                      # a data body
])
def test_anything_else_is_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_control(data)


class _Pair:
    """A client and a server connection joined by their transports in memory."""

    def __init__(self) -> None:
        self.client = Connection()
        self.server = Connection()
        self._client_transport = Transport()
        self._server_transport = Transport(Transport.SERVER)
        self._client_transport.bind(self.client)
        self._server_transport.bind(self.server)
        self.from_client = bytearray()
        self.from_server = bytearray()

    def pump(self) -> None:
        moves = ((self._client_transport, self._server_transport, self.from_client),
                 (self._server_transport, self._client_transport, self.from_server))
        for _ in range(8):
            for source, sink, seen in moves:
                pending = source.pending()
                if pending > 0:
                    data = source.peek(pending)
                    sink.push(data)
                    source.pop(len(data))
                    seen.extend(data)


def _coordinator_pair() -> tuple[_Pair, Any, Any]:
    pair = _Pair()
    pair.client.open()
    sender = create_coordinator(pair.client, name="c", capability=COORDINATOR_CAPABILITY)
    pair.pump()
    pair.server.open()
    session = pair.server.session_head(0)
    session.open()
    receiver = pair.server.link_head(0)
    receiver.target.copy(receiver.remote_target)
    receiver.source.copy(receiver.remote_source)
    receiver.open()
    receiver.flow(10)
    pair.pump()
    return pair, sender, receiver


def test_the_coordinator_target_asks_for_local_transactions() -> None:
    pair, sender, receiver = _coordinator_pair()
    # coordinator (0x30): [capabilities] as list8 (size 26, count 1) holding one sym8
    capability = b"amqp:local-transactions"
    target = b"\x00\x53\x30\xc0\x1a\x01\xa3" + bytes([len(capability)]) + capability
    assert target in pair.from_client
    assert receiver.remote_target.type == Terminus.COORDINATOR
    assert sender.remote_target.type == Terminus.COORDINATOR


def test_declared_and_transactional_states_on_the_wire() -> None:
    pair, sender, receiver = _coordinator_pair()
    pair.from_client.clear()
    declare = sender.delivery(b"1")
    sender.send(encode_declare())
    sender.advance()
    work = sender.delivery(b"2")
    set_transactional_state(work._impl, TXN)
    sender.send(AMQP_VALUE + b"\x40")
    sender.advance()
    pair.pump()
    # transactional-state (0x34): [txn-id] as list32 (size 11, count 1), on the transfer
    assert b"\x00\x53\x34\xd0" + (11).to_bytes(4, "big") + (1).to_bytes(4, "big") + \
        VBIN_TXN in pair.from_client
    received = receiver.current
    receiver.recv(received.pending)
    receiver.advance()
    assert transactional_state(received._impl) is None  # the declare has no such state
    received.local.data = [TXN]
    received.update(DECLARED)
    received.settle()
    transactional = receiver.current
    receiver.recv(transactional.pending)
    receiver.advance()
    assert transactional_state(transactional._impl) == (TXN, None)
    set_transactional_state(transactional._impl, TXN, 0x24)
    transactional.settle()
    pair.pump()
    # declared (0x33): [txn-id] as list32 (size 11, count 1)
    assert b"\x00\x53\x33\xd0" + (11).to_bytes(4, "big") + (1).to_bytes(4, "big") + \
        VBIN_TXN in pair.from_server
    # transactional-state (0x34): [txn-id, accepted (0x24): list0] (size 15, count 2)
    assert b"\x00\x53\x34\xd0" + (15).to_bytes(4, "big") + (2).to_bytes(4, "big") + \
        VBIN_TXN + b"\x00\x53\x24\x45" in pair.from_server
    assert declare.remote_state == DECLARED
    assert [bytes(v) for v in declare.remote.data] == [TXN]


_ERROR = Described(ulong(0x1D), [symbol("amqp:not-found"), "gone " * 120, {symbol("k"): 1}])


@pytest.mark.parametrize("outcome", [
    None,
    Described(ulong(0x24), []),  # accepted
    Described(ulong(0x26), []),  # released
    Described(ulong(0x27), [True, True]),  # modified: delivery-failed, undeliverable-here
    Described(ulong(0x25), [_ERROR]),  # rejected, an error longer than the first buffer
], ids=["none", "accepted", "released", "modified", "rejected"])
def test_a_transactional_state_reads_as_proton_reads_it(outcome: Any) -> None:
    pair, sender, receiver = _coordinator_pair()
    work = sender.delivery(b"1")
    sender.send(AMQP_VALUE + b"\x40")
    sender.advance()
    pair.pump()
    received = receiver.current
    receiver.recv(received.pending)
    receiver.advance()
    received.local.data = [TXN] if outcome is None else [TXN, outcome]
    received.update(TRANSACTIONAL_STATE)
    pair.pump()
    txn_id, read = transactional_state(work._impl) or (None, None)
    assert txn_id == TXN
    assert read == outcome
    if outcome is not None:
        assert read == work.remote.data[1]  # what proton's own reading gives
