"""The coordinator's frames (AMQP 1.0 part 4): control messages and transactional state.

A transaction is declared on the connection's coordinator: a sender link whose target
is a coordinator terminus (descriptor 0x30) with the capability
``amqp:local-transactions``. The controller (we) sends control messages on it and the
coordinator answers with each delivery's outcome::

    declare   (0x31) -> declared (0x33) [txn-id]     a transaction is open
    discharge (0x32) [txn-id, fail] -> accepted      committed (fail=false) / rolled back
                                    -> rejected      refused, with a transaction error

Work joins a transaction by carrying ``transactional-state`` (0x34) [txn-id] as its
transfer's delivery state; the service applies it only if the transaction commits.

This module encodes and decodes those frames, for the client's coordinator link
(:mod:`sbmgmt._engine.coordinator_link`), its deliveries and the fake namespace's coordinator.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from cproton import ffi, lib, pn_delivery_remote_state
from proton import Described, symbol, ulong

from ..errors import ProtocolError
from .decode import decode_value
from .encode import encode_amqp_value, encode_value
from .sections import AMQP_VALUE, sections

__all__ = [
    "COORDINATOR_CAPABILITY",
    "DECLARED",
    "TRANSACTIONAL_STATE",
    "Declare",
    "Discharge",
    "decode_control",
    "encode_declare",
    "encode_discharge",
    "set_transactional_state",
    "transactional_state",
]

# "<descriptor name="amqp:declare:list" code="0x00000000:0x00000031"/>"; field: global-id
DECLARE = 0x31
# "<descriptor name="amqp:discharge:list" code="0x00000000:0x00000032"/>"; fields:
# txn-id (binary, mandatory), fail (boolean)
DISCHARGE = 0x32
# "<descriptor name="amqp:declared:list" code="0x00000000:0x00000033"/>"; field:
# txn-id (binary, mandatory). A delivery state (outcome) of the declare message.
DECLARED = 0x33
# "<descriptor name="amqp:transactional-state:list" code="0x00000000:0x00000034"/>";
# fields: txn-id (binary, mandatory), outcome (an outcome, optional)
TRANSACTIONAL_STATE = 0x34
#: What a coordinator target asks for (the capability every Service Bus SDK sends).
COORDINATOR_CAPABILITY = symbol("amqp:local-transactions")
_NAMES = {
    DECLARE: DECLARE, symbol("amqp:declare:list"): DECLARE,
    DISCHARGE: DISCHARGE, symbol("amqp:discharge:list"): DISCHARGE,
}


@dataclass(frozen=True, slots=True)
class Declare:
    """A declare control message; ``global_id`` is for distributed transactions."""

    global_id: Any = None


@dataclass(frozen=True, slots=True)
class Discharge:
    """A discharge control message: commit (``fail`` False) or roll back."""

    txn_id: bytes
    fail: bool


def encode_declare() -> bytes:
    """The declare message: an amqp-value body holding ``declare`` with no global-id."""
    return encode_amqp_value(Described(ulong(DECLARE), []))


def encode_discharge(txn_id: bytes, fail: bool) -> bytes:
    """The discharge message of ``txn_id``: an amqp-value body holding ``discharge``."""
    return encode_amqp_value(Described(ulong(DISCHARGE), [txn_id, fail]))


def decode_control(data: bytes) -> Declare | Discharge:
    """The control message a controller sent to a coordinator (ProtocolError if it is
    neither a declare nor a discharge)."""
    body = next((value for code, value in sections(data) if code == AMQP_VALUE), None)
    if not isinstance(body, Described):
        raise ProtocolError("a coordinator message holds a declare or a discharge as its "
                            "amqp-value body")
    kind = _NAMES.get(body.descriptor)
    fields = body.value if isinstance(body.value, list) else []
    if kind == DECLARE:
        return Declare(fields[0] if fields else None)
    if kind == DISCHARGE and fields and isinstance(fields[0], (bytes, memoryview)):
        fail = fields[1] if len(fields) > 1 else None
        if fail is not None and not isinstance(fail, bool):
            raise ProtocolError(f"discharge: fail must be a boolean, got {fail!r}")
        return Discharge(bytes(fields[0]), bool(fail))
    raise ProtocolError(f"not a declare or a discharge with a txn-id: {body.descriptor!r}")


def set_transactional_state(delivery: Any, txn_id: bytes, outcome: int | None = None) -> None:
    """Set ``delivery``'s (a C pointer) local state to transactional-state [txn-id] and,
    when given, its outcome (an outcome descriptor with no fields: 0x24 accepted...).

    The state's fields, encoded once per transaction and outcome, are loaded into the
    disposition's data in one proton-C call: every transactional transfer and settlement,
    client and fake, comes through here, and each call into proton-C costs about as much as
    a small value decoded in Python (on the client's I/O thread, each also hands the GIL to
    any thread that waits for it)."""
    encoded = _state_bytes(txn_id, outcome)
    data = lib.pn_disposition_data(lib.pn_delivery_local(delivery))
    lib.pn_data_clear(data)
    if lib.pn_data_decode(data, encoded, len(encoded)) < 0:  # our own encoding: never
        raise ProtocolError("proton refused a transactional-state's encoding")
    lib.pn_delivery_update(delivery, TRANSACTIONAL_STATE)


def transactional_state(delivery: Any) -> tuple[bytes, Any] | None:
    """The txn-id and outcome of ``delivery``'s (a C pointer) remote transactional-state,
    or None when its state is another one. Read as the bytes proton-C encodes the state's
    fields to (one call) and decoded here: the txn-id is ``bytes``; the outcome is what
    proton's ``Data.get_object()`` gives (a ``Described``; None when absent)."""
    if pn_delivery_remote_state(delivery) != TRANSACTIONAL_STATE:
        return None
    data = lib.pn_disposition_data(lib.pn_delivery_remote(delivery))
    buffer = ffi.new("char[]", _STATE_BUFFER)
    size = lib.pn_data_encode(data, buffer, _STATE_BUFFER)
    if size < 0:  # more than a state with an outcome's usual fields: ask its size
        size = lib.pn_data_encoded_size(data)
        buffer = ffi.new("char[]", max(size, 0))
        size = lib.pn_data_encode(data, buffer, size)
        if size < 0:
            return None
    return _state_of(ffi.buffer(buffer, size)[:])


#: Room for a transactional-state's fields with an outcome (an error's description aside).
_STATE_BUFFER = 256


@functools.lru_cache(maxsize=256)
def _state_bytes(txn_id: bytes, outcome: int | None) -> bytes:
    fields: list[Any] = [txn_id]
    if outcome is not None:  # described(ulong outcome, list [])
        fields.append(Described(ulong(outcome), []))
    return encode_value(fields)


@functools.lru_cache(maxsize=256)
def _state_of(encoded: bytes) -> tuple[bytes, Any] | None:
    """A transactional-state's fields (one encoded list: txn-id, outcome?) as
    ``transactional_state`` gives them; the states of one transaction's transfers are the
    same bytes (shared answers: never changed by their readers)."""
    try:
        fields, _end = decode_value(encoded)
    except ProtocolError:
        return None
    if not isinstance(fields, list) or not fields or not isinstance(fields[0], bytes):
        return None
    return fields[0], fields[1] if len(fields) > 1 else None
