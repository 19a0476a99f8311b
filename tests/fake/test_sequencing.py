"""The fake's delivery-id repair (fakes/_sequencing.py), on hand-built frames: what proton
reads, and what the client gets back, byte for byte."""

from __future__ import annotations

import struct

import pytest

from fakes._sequencing import ConnectionScreen, DeliverySequencer

TRUE, FALSE, NULL = b"\x41", b"\x42", b"\x40"


def uint(value: int) -> bytes:
    return b"\x70" + value.to_bytes(4, "big")


def small(value: int) -> bytes:
    return b"\x52" + bytes((value,))


def frame(channel: int, code: int, items: list[bytes], payload: bytes = b"") -> bytes:
    body = b"".join(items)
    performative = bytes((0x00, 0x53, code, 0xC0, len(body) + 1, len(items))) + body
    return struct.pack(">IBBH", 8 + len(performative) + len(payload), 2, 0, channel) + \
        performative + payload


def begin(channel: int, remote_channel: bytes = NULL) -> bytes:
    return frame(channel, 0x11, [remote_channel, uint(0), uint(100), uint(100)])


def transfer(channel: int, handle: int, delivery_id: bytes | None, tag: bytes, *,
             more: bool = False, payload: bytes = b"\x00\x53\x77\xa1\x01x") -> bytes:
    return frame(channel, 0x14, [small(handle), NULL if delivery_id is None else delivery_id,
                                 b"\xa0" + bytes((len(tag),)) + tag, uint(0), FALSE,
                                 TRUE if more else FALSE], payload)


def disposition(channel: int, first: int, last: int | None, *, role: bytes = TRUE) -> bytes:
    return frame(channel, 0x15, [role, uint(first), NULL if last is None else uint(last), TRUE,
                                 b"\x00\x53\x24\x45"])


def ids(frames: bytes, code: int, field: int = 1) -> list[tuple[int, ...]]:
    """(field, field+1) of each frame with ``code``, from a byte stream."""
    from fakes._sequencing import _FrameStream, _Performative, _value

    seen: list[tuple[int, ...]] = []

    class Spy:
        def wants(self, _code: int) -> bool:
            return True

        def __call__(self, channel: int, performative: _Performative) -> list[bytes] | None:
            if performative.code == code:
                seen.append(tuple(_value(performative.items, i) for i in (field, field + 1)))
            return None

    _FrameStream(Spy()).feed(frames)
    return seen


HEADER = b"AMQP\x00\x01\x00\x00"


def test_a_well_numbered_stream_passes_unchanged() -> None:
    sequencer = DeliverySequencer()
    incoming = HEADER + begin(1) + b"".join(
        transfer(1, 0, uint(n), bytes((n,))) for n in range(5))
    assert sequencer.incoming(incoming) == incoming
    outgoing = HEADER + begin(0, small(1)) + disposition(0, 0, 4)
    assert sequencer.outgoing(outgoing) == outgoing


def test_repeated_and_out_of_order_ids_are_renumbered_and_answered_under_the_clients() -> None:
    sequencer = DeliverySequencer()
    sent = [1, 2, 3, 2, 3, 6, 4]
    proton_reads = sequencer.incoming(HEADER + begin(1) + b"".join(
        transfer(1, 0, uint(n), bytes((i,))) for i, n in enumerate(sent)))
    assert [i for i, _ in ids(proton_reads, 0x14)] == [1, 2, 3, 4, 5, 6, 7]
    # the fake settles 1..7 in one disposition: the client hears its own ids back
    answered = sequencer.outgoing(HEADER + begin(0, small(1)) + disposition(0, 1, 7))
    assert ids(answered, 0x15) == [(1, 3), (2, 3), (6, 6), (4, 4)]


def test_a_settled_renumbered_id_is_forgotten_and_role_sender_is_left_alone() -> None:
    sequencer = DeliverySequencer()
    sequencer.incoming(HEADER + begin(1) + transfer(1, 0, uint(5), b"a")
                       + transfer(1, 0, uint(5), b"b"))
    sequencer.outgoing(begin(0, small(1)))
    assert ids(sequencer.outgoing(disposition(0, 6, None)), 0x15) == [(5, 5)]
    again = disposition(0, 6, None)
    assert sequencer.outgoing(again) == again  # forgotten once settled
    mine = disposition(0, 5, 6, role=FALSE)
    assert sequencer.outgoing(mine) == mine  # the fake's own deliveries


def test_continuations_of_a_multi_frame_delivery_take_no_new_id() -> None:
    sequencer = DeliverySequencer()
    proton_reads = sequencer.incoming(
        HEADER + begin(1) + transfer(1, 0, uint(0), b"a")
        + transfer(1, 0, uint(0), b"b", more=True) + transfer(1, 0, None, b"b", more=True)
        + transfer(1, 0, None, b"b") + transfer(1, 0, uint(2), b"c"))
    assert [i for i, _ in ids(proton_reads, 0x14)] == [0, 1, None, None, 2]


def test_a_new_session_on_a_channel_starts_its_sequence_anew() -> None:
    sequencer = DeliverySequencer()
    sequencer.incoming(HEADER + begin(1) + transfer(1, 0, uint(7), b"a"))
    proton_reads = sequencer.incoming(begin(1) + transfer(1, 0, uint(0), b"a"))
    assert [i for i, _ in ids(proton_reads, 0x14)] == [0]


@pytest.mark.parametrize("piece", [1, 3, 7, 64])
def test_bytes_in_any_pieces_give_the_same_stream(piece: int) -> None:
    stream = HEADER + begin(1) + b"".join(
        transfer(1, 0, uint(n), bytes((n,)), payload=bytes(300)) for n in (0, 1, 1, 0, 5))
    whole = DeliverySequencer().incoming(stream)
    sequencer = DeliverySequencer()
    pieces = b"".join(sequencer.incoming(stream[i:i + piece])
                      for i in range(0, len(stream), piece))
    assert pieces == whole
    assert [i for i, _ in ids(whole, 0x14)] == [0, 1, 2, 3, 4]


def test_the_connection_screen_still_refuses_a_bad_sasl_frame() -> None:
    screen = ConnectionScreen()
    assert screen.feed(b"AMQP\x03\x01\x00\x00" + struct.pack(">IBBH", 8, 2, 0, 0)) is None


def test_a_short_frame_at_the_end_of_what_came_is_not_held_back() -> None:
    short = frame(1, 0x11, [NULL])  # a begin whose performative is shorter than the probe
    sequencer = DeliverySequencer()
    assert sequencer.incoming(HEADER + short[:12]) == HEADER
    assert sequencer.incoming(short[12:]) == short


def test_a_frame_whose_code_needs_no_reading_passes_even_in_pieces() -> None:
    stream = HEADER + begin(1) + frame(1, 0x13, [uint(0)] * 4) + transfer(1, 0, uint(3), b"a")
    sequencer = DeliverySequencer()
    assert b"".join(sequencer.incoming(stream[i:i + 2]) for i in range(0, len(stream), 2)) \
        == stream
