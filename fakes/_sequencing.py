"""Tolerance for transfers whose delivery-ids arrive out of order or repeated, as the service's.

proton's transport closes the whole connection (``amqp:session:invalid-field``, "sequencing
error, expected delivery-id N, got M") when a new delivery's id is not the session's next one
(AMQP 1.0 part 2 §2.7.5: "delivery-id ... MUST be ... the next-outgoing-id of the sending
session"). The Python SDK breaks that rule when several threads send on one session at once:
its ``AutoLockRenewer`` renews from worker threads, and two renew-lock requests may carry the
same delivery-id (and tag), or overtake each other. The service answers both; so does the fake.

Theory of operation: :class:`ConnectionScreen` sits between a connection's socket and proton
(the :class:`sbmgmt.transport.sockets.Screen` of the fake's listener): incoming bytes pass the SASL
screen, then :class:`DeliverySequencer`; outgoing bytes pass the sequencer only. The
sequencer reads both byte streams as frames (AMQP 1.0 part 2 §2.3: size, doff, type,
channel), without holding a frame's payload: only the performative (the described list after
the header) is read, and the rest of the frame streams through as it comes. It looks at four
performatives and passes every other frame as it is:

- incoming ``begin``: the client's session on that channel starts: its sequence starts anew;
- incoming ``transfer`` of a new delivery (not a continuation of a ``more`` one on its
  link): the first one sets the session's next delivery-id (as proton does); a delivery whose
  id is not the next is renumbered to the next, and the client's id is remembered;
- outgoing ``begin`` (the fake's answer): its ``remote-channel`` ties the fake's channel to
  the client's, whose renumbered ids the fake's dispositions use;
- outgoing ``disposition`` with role receiver (the fake settling what the client sent): each
  renumbered id in its range is given back the client's id, in as many dispositions as the
  client's ids need (consecutive ones together); a settled id is forgotten.

A delivery is thus answered under the id the client gave it; two deliveries the client sent
under one id are both taken, and both answered under that id. Nothing is dropped or repeated.
Remembered ids are bounded per session (:data:`MAX_REMEMBERED`), oldest forgotten first.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Protocol

from sbmgmt.amqp.decode import decode_value
from sbmgmt.amqp.scan import compound_at, value_end
from sbmgmt.errors import ProtocolError

from ._screen import SaslScreen

__all__ = ["MAX_REMEMBERED", "ConnectionScreen", "DeliverySequencer"]

#: Renumbered delivery-ids remembered per session until the fake settles them.
MAX_REMEMBERED = 65536
_FRAME_HEADER = struct.Struct(">IBBH")
_HEADER_SIZE = 8
_AMQP_FRAME = 0
_BEGIN, _TRANSFER, _DISPOSITION = 0x11, 0x14, 0x15
_UINT_SPACE = 1 << 32
_NULL = b"\x40"
#: Far more than a performative needs; a larger one is not read, only passed on.
_MAX_PERFORMATIVE = 64 * 1024


def _encode_uint(value: int) -> bytes:
    """A uint in its shortest encoding (part 1 §1.6.5: uint0, smalluint, uint)."""
    if value == 0:
        return b"\x43"
    if value < 256:
        return b"\x52" + bytes((value,))
    return b"\x70" + value.to_bytes(4, "big")


@dataclass
class _Session:
    """One client session's delivery-ids: the next one proton expects, and the client's own
    id of each delivery that was renumbered (by the id proton knows it by)."""

    next_id: int | None = None
    client_ids: dict[int, int] = field(default_factory=dict)
    #: Links (by handle) whose last transfer said ``more``: the next one continues it.
    more: set[int] = field(default_factory=set)


@dataclass
class _Performative:
    """A frame's performative, read: its code, its list's items (each a slice of the
    frame), and where the rest of the frame starts."""

    code: int
    items: list[bytes]
    end: int


class _FrameStream:
    """One direction's byte stream cut at frame boundaries, with each frame's head
    (header, extended header and performative) offered for rewriting before it passes."""

    def __init__(self, rewrite: _Rewriter) -> None:
        self._rewrite = rewrite
        self._buffer = b""
        #: Bytes of the current frame still to pass untouched (its payload).
        self._passing = 0

    def feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        buffer = self._buffer + data if self._buffer else data
        at, end = 0, len(buffer)
        while at < end:  # read at an offset: slicing off each frame copied the rest
            if self._passing:
                taken = min(self._passing, end - at)
                out.append(buffer[at:at + taken])
                self._passing -= taken
                at += taken
                continue
            head = self._head(buffer, at)
            if head is None:
                break
            out.append(head[0])
            at += head[1]
        self._buffer = buffer[at:]
        return b"".join(out)

    def _head(self, buffer: bytes, at: int) -> tuple[bytes, int] | None:
        """The bytes to pass for the frame (or protocol header) at ``at`` in ``buffer`` and
        how many of its bytes they stand for; None until enough has come."""
        if len(buffer) - at < _HEADER_SIZE:
            return None
        if buffer.startswith(b"AMQP", at):
            return buffer[at:at + _HEADER_SIZE], _HEADER_SIZE
        size, doff, kind, channel = _FRAME_HEADER.unpack_from(buffer, at)
        start = doff * 4
        if kind != _AMQP_FRAME or size <= start or start < _HEADER_SIZE:
            return self._pass(buffer, at, size)
        if len(buffer) - at < start + 3:
            return None if start + 3 <= size else self._pass(buffer, at, size)
        code_at = at + start
        if buffer[code_at:code_at + 2] == b"\x00\x53" and \
                not self._rewrite.wants(buffer[code_at + 2]):
            return self._pass(buffer, at, size)  # the common case: read no further than its code
        frame = buffer[at:at + size]  # a frame worth reading: offsets from its start below
        needed = _performative_size(frame, start, size)
        if needed is None:
            return self._pass(buffer, at, size)
        if len(frame) < needed:
            return None
        performative = _read(frame, start, needed)
        if performative is None:
            return self._pass(buffer, at, size)
        rewritten = self._rewrite(channel, performative)
        if rewritten is None:
            return self._pass(buffer, at, size)
        # The payload (only a transfer has one) follows the last frame, and streams through.
        payload = size - performative.end
        frames = [
            _FRAME_HEADER.pack(start + len(head) + (payload if n == len(rewritten) - 1 else 0),
                               doff, kind, channel)
            + frame[_HEADER_SIZE:start] + head for n, head in enumerate(rewritten)]
        self._passing = payload
        return b"".join(frames), performative.end

    def _pass(self, buffer: bytes, at: int, size: int) -> tuple[bytes, int]:
        """Pass a frame untouched: what of it has come now, the rest as it comes."""
        size = max(size, _HEADER_SIZE)
        taken = buffer[at:at + size]
        self._passing = size - len(taken)
        return taken, len(taken)


class _Rewriter(Protocol):
    """What one direction rewrites."""

    def wants(self, code: int) -> bool:
        """Whether frames of the performative ``code`` are worth reading."""

    def __call__(self, channel: int, performative: _Performative) -> list[bytes] | None:
        """None keeps the frame; else the performative bytes (descriptor and list) of each
        frame to send instead (a payload goes after the last)."""


def _performative_size(buffer: bytes, start: int, size: int) -> int | None:
    """How many bytes of the frame hold its performative (from the frame's start), as far
    as the bytes at hand tell: the descriptor and list header are small. None: it is not a
    described list a performative is, or too large to read here."""
    probe = buffer[start:start + 12]
    if len(probe) < 12 and start + len(probe) < size:
        return min(start + 12, size)
    if probe[:2] == b"\x00\x53":
        at = 3
    elif probe[:2] == b"\x00\x80":
        at = 10
    else:
        return None
    if len(probe) <= at:
        return None
    code = probe[at]
    if code == 0x45:  # list0
        needed = at + 1
    elif code == 0xC0 and len(probe) > at + 1:
        needed = at + 2 + probe[at + 1]
    elif code == 0xD0 and len(probe) >= at + 5:
        needed = at + 5 + int.from_bytes(probe[at + 1:at + 5], "big")
    else:
        return None
    if needed > _MAX_PERFORMATIVE or start + needed > size:
        return None
    return start + needed


def _read(buffer: bytes, start: int, end: int) -> _Performative | None:
    """The performative of a frame whose head is ``buffer[:end]``, or None if it is not one
    the sequencer can read (proton will judge it)."""
    try:
        descriptor, after = decode_value(buffer[:end], start + 1)
        if not isinstance(descriptor, int):
            return None
        if buffer[after] == 0x45:  # list0
            return _Performative(descriptor, [], end)
        found = compound_at(buffer[:end], after, 0xC0, 0xD0)
        if found is None:
            return None
        at, count, stop = found
        items = []
        for _ in range(count):
            item_end = value_end(buffer, at, stop)
            items.append(buffer[at:item_end])
            at = item_end
        return _Performative(descriptor, items, end) if at == stop == end else None
    except (ProtocolError, IndexError):
        return None


def _encode(code: int, items: list[bytes]) -> bytes:
    """A performative: its descriptor and its list of (encoded) items."""
    body = b"".join(items)
    count = len(items)
    if len(body) + 1 <= 255 and count <= 255:
        listed = bytes((0xC0, len(body) + 1, count)) + body
    else:
        listed = b"\xd0" + (len(body) + 4).to_bytes(4, "big") + count.to_bytes(4, "big") + body
    return b"\x00\x53" + bytes((code,)) + listed


def _value(items: list[bytes], index: int) -> object:
    """The decoded item ``index`` (None when absent)."""
    if index >= len(items):
        return None
    return decode_value(items[index])[0]


class DeliverySequencer:
    """One connection's delivery-id repair, in both directions (see the module)."""

    def __init__(self) -> None:
        self._sessions: dict[int, _Session] = {}
        #: The fake's channel -> the client's channel of the same session.
        self._client_channel: dict[int, int] = {}
        self._incoming = _FrameStream(_IncomingRewriter(self))
        self._outgoing = _FrameStream(_OutgoingRewriter(self))

    def incoming(self, data: bytes) -> bytes:
        """What proton reads for ``data`` the client sent."""
        return self._incoming.feed(data)

    def outgoing(self, data: bytes) -> bytes:
        """What the client gets for ``data`` proton wrote."""
        return self._outgoing.feed(data)

    def session(self, client_channel: int) -> _Session:
        return self._sessions.setdefault(client_channel, _Session())

    def began(self, client_channel: int) -> None:
        self._sessions[client_channel] = _Session()

    def answered(self, channel: int, client_channel: int) -> None:
        self._client_channel[channel] = client_channel

    def renumbered(self) -> bool:
        """Whether any session has deliveries it knows by another id than the client's."""
        return any(session.client_ids for session in self._sessions.values())

    def client_session(self, channel: int) -> _Session | None:
        client = self._client_channel.get(channel)
        return None if client is None else self._sessions.get(client)


class _IncomingRewriter:
    def __init__(self, owner: DeliverySequencer) -> None:
        self._owner = owner

    def wants(self, code: int) -> bool:
        return code in (_BEGIN, _TRANSFER)

    def __call__(self, channel: int, performative: _Performative) -> list[bytes] | None:
        if performative.code == _BEGIN:
            self._owner.began(channel)
            return None
        if performative.code != _TRANSFER:
            return None
        items = performative.items
        handle = _value(items, 0)
        delivery_id = _value(items, 1)
        more = bool(_value(items, 5)) and not _value(items, 9)  # more, and not aborted
        session = self._owner.session(channel)
        if not isinstance(handle, int):
            return None
        if handle in session.more:  # a continuation: proton ignores its delivery-id
            if not more:
                session.more.discard(handle)
            return None
        if more:
            session.more.add(handle)
        if not isinstance(delivery_id, int):
            return None
        expected = delivery_id if session.next_id is None else session.next_id
        session.next_id = (expected + 1) % _UINT_SPACE
        if expected == delivery_id:
            return None
        remembered = session.client_ids
        remembered[expected] = delivery_id
        if len(remembered) > MAX_REMEMBERED:
            del remembered[next(iter(remembered))]
        return [_encode(_TRANSFER, [items[0], _encode_uint(expected), *items[2:]])]


class _OutgoingRewriter:
    def __init__(self, owner: DeliverySequencer) -> None:
        self._owner = owner

    def wants(self, code: int) -> bool:
        return code == _BEGIN or (code == _DISPOSITION and self._owner.renumbered())

    def __call__(self, channel: int, performative: _Performative) -> list[bytes] | None:
        if performative.code == _BEGIN:
            client = _value(performative.items, 0)
            if isinstance(client, int):
                self._owner.answered(channel, client)
            return None
        if performative.code != _DISPOSITION:
            return None
        session = self._owner.client_session(channel)
        if session is None or not session.client_ids:
            return None
        items = performative.items
        first, last = _value(items, 1), _value(items, 2)
        if _value(items, 0) is not True or not isinstance(first, int):
            return None  # role sender: the fake's own deliveries, numbered by the fake
        last = first if not isinstance(last, int) else last
        ids = [(first + n) % _UINT_SPACE for n in range(((last - first) % _UINT_SPACE) + 1)]
        remembered = session.client_ids
        if not any(i in remembered for i in ids):
            return None
        settled = bool(_value(items, 3))
        client_ids = [remembered.pop(i, i) if settled else remembered.get(i, i) for i in ids]
        rest = items[3:] if len(items) > 3 else []
        frames = []
        for run_first, run_last in _runs(client_ids):
            frames.append(_encode(_DISPOSITION, [
                items[0], _encode_uint(run_first), _encode_uint(run_last), *rest]))
        return frames


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    """Consecutive ids as (first, last) ranges, in order; repeated ids each on their own."""
    runs: list[tuple[int, int]] = []
    for delivery_id in ids:
        if runs and delivery_id == (runs[-1][1] + 1) % _UINT_SPACE:
            runs[-1] = (runs[-1][0], delivery_id)
        else:
            runs.append((delivery_id, delivery_id))
    return runs


class ConnectionScreen:
    """The fake's screen of one connection: SASL frames checked, delivery-ids repaired."""

    __slots__ = ("_sasl", "_sequencer")

    def __init__(self) -> None:
        self._sasl = SaslScreen()
        self._sequencer = DeliverySequencer()

    def feed(self, data: bytes) -> bytes | None:
        """What proton reads now for ``data`` from the client; None: refuse."""
        checked = self._sasl.feed(data)
        return None if checked is None else self._sequencer.incoming(checked)

    def outgoing(self, data: bytes) -> bytes:
        """What the client gets for ``data`` proton wrote."""
        return self._sequencer.outgoing(data)
