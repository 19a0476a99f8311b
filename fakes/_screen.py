"""The SASL frames a client sends, checked before proton's engine reads them.

proton-c 0.40 crashes the process (SIGSEGV) on a ``sasl-init`` whose mechanism is
null, empty, not a symbol, or whose list is malformed: one bad client would take
the fake, and an in-process test run, down with it. :class:`SaslScreen` sits
between a server socket and its transport (:meth:`sbmgmt.transport.selector_loop.EngineLoop.listen`
takes a factory of them) and passes bytes on only once it has checked them:

- the first 8 bytes: the SASL protocol header (``AMQP 3.1.0.0``) starts the SASL
  phase; any other header is proton's to judge and everything after it passes;
- in the SASL phase, each frame (AMQP 1.0 part 5 §5.3.1: size, doff >= 2, type 1)
  is passed whole once it decodes as ``sasl-init`` ("mechanism | symbol |
  mandatory", "initial-response | binary", "hostname | string") or
  ``sasl-response`` ("response | binary | mandatory"), each field of its type;
- the next protocol header (the AMQP one, after the outcome) ends the screening.

Anything else refuses the connection: :meth:`SaslScreen.feed` returns ``None`` and
the loop closes the socket.
"""

from __future__ import annotations

import struct
from typing import Any

from proton import symbol

from sbmgmt.amqp.decode import decode_described
from sbmgmt.errors import ProtocolError

__all__ = ["SaslScreen"]

_SASL_HEADER = b"AMQP\x03\x01\x00\x00"
_HEADER_SIZE = 8
_FRAME_HEAD = struct.Struct(">IBB")
_SASL_FRAME = 1
#: Far above what SASL needs (its frames must fit in 512 bytes, part 5 §5.3.1).
_MAX_SASL_FRAME = 64 * 1024
_SASL_INIT = (0x41, "amqp:sasl-init:list")
_SASL_RESPONSE = (0x43, "amqp:sasl-response:list")


class SaslScreen:
    """One connection's incoming bytes, checked until its SASL phase is over."""

    __slots__ = ("_buffer", "_state")

    def __init__(self) -> None:
        self._buffer = b""
        self._state = "header"

    def feed(self, data: bytes) -> bytes | None:
        """What may go on to the transport now (perhaps nothing); ``None``: refuse."""
        if self._state == "open":
            return data
        self._buffer += data
        passed: list[bytes] = []
        while self._state != "open":
            taken = self._header() if self._state == "header" else self._sasl_frame()
            if taken is None:
                return None
            if not taken:
                break
            passed.append(taken)
        if self._state == "open":
            passed.append(self._buffer)
            self._buffer = b""
        return b"".join(passed)

    def _header(self) -> bytes | None:
        if len(self._buffer) < _HEADER_SIZE:
            return b""
        header, self._buffer = self._buffer[:_HEADER_SIZE], self._buffer[_HEADER_SIZE:]
        self._state = "sasl" if header == _SASL_HEADER else "open"
        return header

    def _sasl_frame(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < 4:
            return b""
        if buffer[:4] == b"AMQP":
            self._state = "open"  # the AMQP header after the outcome
            return b""
        if len(buffer) < _FRAME_HEAD.size:
            return b""
        size, doff, kind = _FRAME_HEAD.unpack_from(buffer)
        if kind != _SASL_FRAME or doff < 2 or size < doff * 4 or size > _MAX_SASL_FRAME:
            return None
        if len(buffer) < size:
            return b""
        frame, self._buffer = buffer[:size], buffer[size:]
        return frame if _acceptable(frame[doff * 4:]) else None


def _acceptable(body: bytes) -> bool:
    """Whether a SASL frame body is one well-formed sasl-init or sasl-response."""
    try:
        descriptor, fields, end = decode_described(body)
    except ProtocolError:
        return False
    if end != len(body) or not isinstance(fields, list):
        return False
    if descriptor in _SASL_INIT:
        return (1 <= len(fields) <= 3 and _symbol(fields[0])
                and _optional(fields, 1, bytes) and _optional(fields, 2, str))
    if descriptor in _SASL_RESPONSE:
        return len(fields) == 1 and type(fields[0]) is bytes
    return False


def _symbol(value: Any) -> bool:
    return isinstance(value, symbol) and 0 < len(value) <= 255 and value.isprintable()


def _optional(fields: list[Any], index: int, kind: type) -> bool:
    return index >= len(fields) or fields[index] is None or type(fields[index]) is kind
